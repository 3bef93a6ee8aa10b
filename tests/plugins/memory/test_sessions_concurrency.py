"""Simultaneous first appends to one new session key.

On PostgreSQL two transactions that both find no row and both INSERT it would fail with
``duplicate key ... sessions_pkey`` in about a quarter of the attempts: the session row is
created with INSERT ... ON CONFLICT DO NOTHING, then locked, on both backends.
"""

from __future__ import annotations

import threading
from typing import Any

ROUNDS = 25
WRITERS = 3


def test_simultaneous_first_appends_to_a_new_key(engine: Any) -> None:
    engine.agents.create("ada")
    errors: list[BaseException] = []

    def writer(key: str, n: int, barrier: threading.Barrier) -> None:
        barrier.wait()
        try:
            engine.sessions.append("ada", key, "user", f"message {n}")
        except BaseException as exc:  # collected, asserted below
            errors.append(exc)

    for r in range(ROUNDS):
        key = f"agent:ada:race-{r}"
        barrier = threading.Barrier(WRITERS)
        threads = [threading.Thread(target=writer, args=(key, n, barrier)) for n in range(WRITERS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert errors == []
    for r in range(ROUNDS):
        msgs = engine.sessions.messages(f"agent:ada:race-{r}")
        assert sorted(m.seq for m in msgs) == list(range(1, WRITERS + 1))


def test_first_append_still_checks_the_owner(engine: Any) -> None:
    engine.agents.create("ada")
    engine.agents.create("bob")
    engine.sessions.append("ada", "k", "user", "mine", user="u1")
    import pytest

    from goclaw.errors import ValidationError

    with pytest.raises(ValidationError):
        engine.sessions.append("bob", "k", "user", "not yours")
    with pytest.raises(ValidationError):
        engine.sessions.append("ada", "k", "user", "other user", user="u2")
    assert [m.content for m in engine.sessions.messages("k")] == ["mine"]
