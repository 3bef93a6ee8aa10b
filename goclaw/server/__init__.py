"""Servers for runtimes that are not Python: MCP (:mod:`goclaw.server.mcp`) and the
HTTP API (:mod:`goclaw.server.http`). Both serve one engine; imports stay lazy."""
