"""MCP client traffic: its transports' seams, its messages in the cassette, its normalisation."""
