"""The HTTP API, ``goclaw serve`` (built-in plugin ``goclaw.http``; ``pip install 'goclaw[http]'``).

A transport: it serves every feature through its contract, and each feature plugin adds its own
endpoints through this plugin's hook ``goclaw_http_routes`` (:mod:`goclaw_http.hookspecs`)."""
