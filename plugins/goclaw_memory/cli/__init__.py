"""The memory plugin's CLI commands: ``memory``, ``eval`` and ``session`` (issue 13 item 3).

Declared by import path in :mod:`goclaw.cli.registry`; each module is imported only when its
command runs.
"""
