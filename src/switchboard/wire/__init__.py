"""Wire formats shared by the surfaces a client speaks and the adapters a provider is reached by."""
