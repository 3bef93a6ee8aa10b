"""Plugin ``goclaw.mcp``: its command (``goclaw mcp``, declared in its manifest) is all it adds;
the MCP SDK is imported only when the server starts."""
