"""Shared set-up for the server tests (MCP, HTTP): one seeded workspace and one real server
process per test module, on SQLite or on a private PostgreSQL schema."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.memory_helpers import write

FACTS = {
    "MEMORY.md": "# Team\n\nThe printer on floor two is named Gutenberg.\n",
    "users/u1/memory/2026-01-01.md": "u1 secret: the vault code is 4711 near Gutenberg.\n",
    "users/u2/memory/2026-01-01.md": "u2 secret: the boat is called Gutenberg.\n",
}


def goclaw_cmd() -> list[str]:
    exe = Path(sys.executable).parent / "goclaw"
    return [str(exe)] if exe.exists() else [sys.executable, "-c", "from goclaw.cli import main; main()"]


@contextlib.contextmanager
def module_database(backend: str) -> Iterator[str | None]:
    """``None`` (SQLite in the workspace) or a URL on a fresh PostgreSQL schema, dropped after."""
    if backend == "sqlite":
        yield None
        return
    from goclaw_memory.testing.fixtures import private_schema

    with private_schema() as url:
        yield url


def seed(ws: Path, database_url: str | None) -> None:
    """Agents ``ada`` (agent-level, u1 and u2 memory) and ``bob``, indexed."""
    from goclaw.engine import Engine

    ws.mkdir(parents=True, exist_ok=True)
    with Engine.open(ws, database_url) as eng:
        eng.agents.create("ada")
        eng.agents.create("bob")
        ada = eng.agent_dir(eng.agents.get("ada"))
        for rel, text in FACTS.items():
            write(ada, rel, text)
        write(eng.agent_dir(eng.agents.get("bob")), "MEMORY.md", "bob's printer is named Caxton.\n")
        eng.memory.index()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def server_env(home: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update({"HOME": str(home), "LITELLM_LOCAL_MODEL_COST_MAP": "True", "HF_HUB_OFFLINE": "1"})
    return env


@contextlib.contextmanager
def running(
    args: list[str], env: dict[str, str], port: int, timeout: float = 60.0, log_path: Path | None = None
) -> Iterator[subprocess.Popen[Any]]:
    """Start a server process and wait until its port accepts connections; stop it after.

    Its output goes to a temporary file, never to a pipe nobody reads (a full pipe would block
    the server's logging threads)."""
    import tempfile

    with open(log_path, "w+") if log_path else tempfile.TemporaryFile(mode="w+") as log:
        proc = subprocess.Popen(args, env=env, stdout=log, stderr=subprocess.STDOUT, text=True)
        try:
            deadline = time.monotonic() + timeout
            while True:
                if proc.poll() is not None:
                    log.seek(0)
                    pytest.fail(f"server exited with {proc.returncode}: {log.read()[-2000:]}")
                with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.2):
                    break
                if time.monotonic() > deadline:
                    pytest.fail("server did not start in time")
                time.sleep(0.1)
            yield proc
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
