"""Run a snippet in a fresh interpreter where any network access raises (an audit hook)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

_GUARD = textwrap.dedent(
    """
    import sys

    def _deny(event, args):
        if event in ("socket.connect", "socket.getaddrinfo", "socket.gethostbyname",
                     "urllib.Request", "http.client.connect"):
            raise RuntimeError(f"network access attempted: {event} {args!r}")

    sys.addaudithook(_deny)
    """
)
_PROOF = textwrap.dedent(
    """
    # prove the hook is live: a connection attempt must be refused
    import socket
    try:
        socket.create_connection(("127.0.0.1", 9), timeout=1)
    except RuntimeError as exc:
        assert "network access attempted" in str(exc)
    else:
        raise SystemExit("audit hook did not fire")
    print("ok")
    """
)


def subprocess_env() -> dict[str, str]:
    """This interpreter's environment, its import path included."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    return env


def run_offline(snippet: str) -> None:
    """Run ``snippet`` with every network call refused (offline variables of the hub unset), and
    assert that it finished and printed nothing of its own."""
    env = subprocess_env()
    for var in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
        env.pop(var, None)
    code = _GUARD + textwrap.dedent(snippet) + _PROOF
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "ok"
