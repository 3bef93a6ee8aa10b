"""A plugin that fails at import time, to prove goclaw skips and reports it."""

raise RuntimeError("goclaw-broken is broken on purpose")
