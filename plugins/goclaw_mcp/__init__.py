"""The MCP server, ``goclaw mcp`` (built-in plugin ``goclaw.mcp``; ``pip install 'goclaw[mcp]'``).

A transport: it serves the runtime tools under their contract, and the prompts and resources
other plugins contribute through this plugin's hook ``goclaw_mcp_prompts``
(:mod:`goclaw_mcp.hookspecs`)."""
