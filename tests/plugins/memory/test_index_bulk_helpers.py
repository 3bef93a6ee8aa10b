"""The bulk forms an index run uses give what the one-at-a-time ones give (for indexing
speed): chunk fingerprints (goclaw_memory.sqlite_backend.fingerprints) and chunk hashes
(goclaw_memory.chunking.hash_all)."""

from __future__ import annotations

import hashlib
import random
from pathlib import Path
from typing import Any

import pytest

from goclaw_memory.chunking import TextChunk, content_hash, hash_all
from goclaw_memory.sqlite_backend import fingerprint, fingerprints

ODD = [
    "0x1234567890abcdef",  # int() reads the prefix, bytes.fromhex does not
    "12 34 56 78 90 ab cd ef",  # bytes.fromhex skips the spaces, int() refuses them
    "1_2345678901234567",  # int() reads underscores
    "١٢٣٤٥٦٧٨٩٠١٢٣٤٥",  # int() reads other scripts' digits
    "ABCDEF0123456789ab",
    "zz",
    "",
    "abc",
]


def test_fingerprints_equal_one_at_a_time() -> None:
    rng = random.Random(1)
    hashes = [hashlib.sha256(str(i).encode()).hexdigest()[: rng.choice([14, 32, 64])] for i in range(3000)]
    users = [rng.choice(["", "alice", "bob", "ü", "a" * 255]) for _ in hashes]
    has = [rng.random() < 0.5 for _ in hashes]
    assert fingerprints(hashes, users, has) == list(map(fingerprint, hashes, users, has))


@pytest.mark.parametrize("odd", ODD)
def test_fingerprints_of_other_hashes_equal_one_at_a_time(odd: str) -> None:
    hashes = ["0123456789abcdef0123", odd, "fedcba98765432100000"]
    users, has = ["", "u", "u"], [True, False, True]
    assert fingerprints(hashes, users, has) == list(map(fingerprint, hashes, users, has))


def test_hash_all_gives_each_chunk_its_hash() -> None:
    chunks = [TextChunk(f"line {i} é \u4e2d", 1, 1) for i in range(50)]
    chunks[3].hash  # noqa: B018 - one computed already stays as it is
    hash_all(chunks)
    assert [c.hash for c in chunks] == [content_hash(c.text) for c in chunks]
    assert all("hash" in c.__dict__ for c in chunks)


def test_a_first_run_that_embedded_everything_skips_the_stale_lookup(
    make_engine: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A first run (nothing indexed before) whose every chunk got its vector has no chunk
    without one: the scan of the scope for such chunks is skipped; a later run still does it."""
    import goclaw_memory.reembed as reembed
    from tests.memory_helpers import write

    asked: list[str] = []
    real = reembed.stale_chunks

    def spy(engine: Any, agent_id: str, *args: Any) -> Any:
        asked.append(agent_id)
        return real(engine, agent_id, *args)

    monkeypatch.setattr(reembed, "stale_chunks", spy)
    eng = make_engine()
    root = Path(eng.agent_dir(eng.agents.create("ada")))
    write(root, "memory/a.md", "- The cat sleeps on the warm windowsill.\n")
    write(root, "memory/b.md", "- Ada prefers green tea in the afternoon.\n")
    first = eng.memory.index("ada")
    assert first.chunks_written == 2 and first.embedding_error is None and asked == []
    assert [h.path for h in eng.memory.search("green tea", "ada", limit=1)] == ["memory/b.md"]
    write(root, "memory/a.md", "- The cat sleeps on the cold windowsill.\n")
    eng.memory.index("ada")
    assert len(asked) == 1
