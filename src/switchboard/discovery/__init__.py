"""OAuth discovery documents, the /mcp challenge, version and health."""
