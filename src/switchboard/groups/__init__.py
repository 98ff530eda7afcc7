"""groups domain."""
