"""The memory plugin's CLI commands: ``memory``, ``eval`` and ``session``.

Declared by import path in the plugin's manifest (:mod:`goclaw_memory.manifest`,
``COMMANDS``); each module is imported only when its command runs.
"""
