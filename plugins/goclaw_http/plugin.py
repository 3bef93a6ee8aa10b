"""Plugin ``goclaw.http``: its command (``goclaw serve``, declared in its manifest) is all it
adds; FastAPI and uvicorn are imported only when the server starts."""
