"""Each slot's location (path code, start and end line) in :class:`SearchIndex`: kept by upsert,
remove and compact, saved and loaded (format 6); an index saved before format 6 loads without
them and the memory backend fills them from the chunk table."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from goclaw_search import persist
from goclaw_search.index import FORMAT, Doc, SearchIndex
from goclaw_search.persist import LOCATED
from tests.memory_helpers import write


def _docs(n: int, first: int = 0) -> list[Doc]:
    rng = np.random.default_rng(first)
    return [
        Doc(i, "", ["kestrel", f"t{i % 7}"], rng.normal(size=8), i, None, f"memory/f{i % 5}.md", i, i + 3)
        for i in range(first, first + n)
    ]


def _locations(idx: SearchIndex) -> dict[int, Any]:
    return {i: idx.location(s) for i, s in idx.slot_of.items()}


def test_locations_follow_upsert_remove_compact_and_save(tmp_path: Path) -> None:
    idx = SearchIndex(8)
    idx.upsert(_docs(1500))
    idx.upsert([Doc(3, "", ["x"], None, 9, None, "memory/new.md", 40, 41)])  # replaced
    assert idx.location(idx.slot_of[3]) == ("memory/new.md", 40, 41)
    assert len(idx.paths) == 6  # interned: one string per path
    idx.remove(range(0, 1500, 2))  # enough to compact
    assert idx.n == idx.n_alive
    want = {i: (f"memory/f{i % 5}.md", i, i + 3) for i in range(1, 1500, 2)} | {3: ("memory/new.md", 40, 41)}
    assert _locations(idx) == want
    idx.save(tmp_path / "i")
    assert json.loads((tmp_path / "i" / "meta.json").read_text())["format"] == FORMAT == 8
    back = SearchIndex.load(tmp_path / "i")
    assert back.located and _locations(back) == want
    back.upsert(_docs(3, 5000))  # a loaded index interns new paths after its table
    assert back.location(back.slot_of[5001]) == ("memory/f1.md", 5001, 5004)
    assert back.paths.count("memory/f1.md") == 1


def test_an_index_saved_before_format_6_loads_and_can_be_filled(tmp_path: Path) -> None:
    idx = SearchIndex(8)
    idx.upsert(_docs(50))
    idx.save(tmp_path / "i")
    _as_format_5(tmp_path / "i")
    old = SearchIndex.load(tmp_path / "i")
    assert not old.located and old.location(old.slot_of[7]) is None
    old.set_locations([(i, f"memory/f{i % 5}.md", i, i + 3) for i in range(49)])
    assert not old.located  # id 49 has none yet
    old.remove([49])
    assert old.located and old.location(old.slot_of[7]) == ("memory/f2.md", 7, 10)


def _as_format_5(path: Path) -> None:
    meta = json.loads((path / "meta.json").read_text())
    meta["format"] = 5
    (path / "meta.json").write_text(json.dumps(meta))
    for name in LOCATED:
        (path / f"{name}.npy").unlink()
    (path / "paths.json").unlink()


@pytest.fixture
def backend() -> str:
    return "sqlite"


def test_the_sqlite_backend_fills_an_older_index_and_saves_it(make_engine: Any) -> None:
    eng = make_engine()
    root = Path(eng.agent_dir(eng.agents.create("ada")))
    for i in range(12):
        write(root, f"memory/n{i}.md", f"# Note {i}\n\nThe kestrel pier {i} opens at {i} am.\n")
    eng.memory.index("ada")
    want = [
        (h.chunk_id, h.path, h.start_line, h.end_line, h.snippet, h.score)
        for h in eng.memory.search("kestrel pier", "ada")
    ]
    aid = eng.agents.get("ada").id
    backend = eng.memory.backend
    saved = backend._snapshot(aid)
    backend.save(aid)
    _as_format_5(saved)
    backend._states.clear()  # as a new process: loads the saved index
    got = [
        (h.chunk_id, h.path, h.start_line, h.end_line, h.snippet, h.score)
        for h in eng.memory.search("kestrel pier", "ada")
    ]
    assert got == want
    st = backend._states[aid]
    assert st.index.located and backend.loads == 0  # filled, not rebuilt
    assert json.loads((saved / "meta.json").read_text())["format"] == FORMAT  # and saved
    shutil.rmtree(saved)


def _set_code(path: Path, slot: int, code: int) -> None:
    """Write ``code`` as the slot's path code, the checksums stamped again: the index a save
    would have written with that code (an edit alone is refused by its checksum)."""
    codes = np.load(path / "loc_path.npy")
    codes[slot] = code
    np.save(path / "loc_path.npy", codes)
    meta = json.loads((path / "meta.json").read_text())
    meta["files"] = {
        f.name: persist._sum_and_sync(f) for f in sorted(path.iterdir()) if f.name != "meta.json"
    }
    meta["check"] = persist._meta_check(meta)
    (path / "meta.json").write_text(json.dumps(meta))


def test_an_edited_path_code_is_refused_by_the_checksum(tmp_path: Path) -> None:
    idx = SearchIndex(8)
    idx.upsert(_docs(20))
    idx.save(tmp_path / "i")
    codes = np.load(tmp_path / "i" / "loc_path.npy")
    codes[3] = -1
    np.save(tmp_path / "i" / "loc_path.npy", codes)
    with pytest.raises(ValueError, match=r"loc_path\.npy does not match its checksum"):
        SearchIndex.load(tmp_path / "i")


def test_a_saved_index_with_a_bad_path_code_is_refused_and_minus_one_is_no_location(tmp_path: Path) -> None:
    """A code below -1 or past the path table is damage: refused (the backends rebuild). -1 is
    "no location" (an index loaded from before format 6 and saved before its owner filled
    them): it loads with ``located`` False, and its owner fills it, instead of searching with
    that slot's path read as the table's last one."""
    idx = SearchIndex(8)
    idx.upsert(_docs(50))
    idx.save(tmp_path / "i")
    for bad in (-2, -7, len(idx.paths)):
        shutil.copytree(tmp_path / "i", tmp_path / "bad", dirs_exist_ok=True)
        _set_code(tmp_path / "bad", 7, bad)
        with pytest.raises(ValueError, match="inconsistent"):
            SearchIndex.load(tmp_path / "bad")
    _set_code(tmp_path / "i", idx.slot_of[7], -1)
    back = SearchIndex.load(tmp_path / "i")
    assert not back.located and back.location(back.slot_of[7]) is None
    back.set_locations([(7, "memory/f2.md", 7, 10)])
    assert back.located and _locations(back) == _locations(idx)
    idx.remove([7])  # a slot gone keeps its code: -1 there is no loss
    idx.save(tmp_path / "j")
    _set_code(tmp_path / "j", 7, -1)
    assert SearchIndex.load(tmp_path / "j").located


@pytest.mark.parametrize("code", [-1, -3])
def test_the_sqlite_backend_searches_an_index_saved_with_a_negative_path_code_with_the_right_paths(
    make_engine: Any, code: int
) -> None:
    eng = make_engine()
    root = Path(eng.agent_dir(eng.agents.create("ada")))
    for i in range(12):
        write(root, f"memory/n{i}.md", f"# Note {i}\n\nThe kestrel pier {i} opens at {i} am.\n")
    eng.memory.index("ada")
    want = [(h.chunk_id, h.path, h.start_line) for h in eng.memory.search("kestrel pier", "ada")]
    aid = eng.agents.get("ada").id
    backend = eng.memory.backend
    saved = backend._snapshot(aid)
    backend.save(aid)
    slots = backend._states[aid].index.slot_of
    for cid, _path, _start in want[:3]:
        _set_code(saved, slots[cid], code)
    backend._states.clear()  # as a new process: loads the saved index
    loads = backend.loads
    got = [(h.chunk_id, h.path, h.start_line) for h in eng.memory.search("kestrel pier", "ada")]
    assert got == want
    assert backend.loads == loads + (code != -1)  # -1: filled from the table; else rebuilt


def test_an_index_verified_by_crc32_still_loads_and_its_damage_is_refused(tmp_path: Path) -> None:
    """Format 7 stamped each file with a CRC-32, format 8 with an xxh3-64 digest: a format 7
    index loads (verified by CRC-32) and a flipped byte in one of its files is still refused."""
    import zlib

    idx = SearchIndex(8)
    idx.upsert(_docs(30))
    idx.save(tmp_path / "i")
    meta = json.loads((tmp_path / "i" / "meta.json").read_text())
    meta["format"] = 7
    meta["files"] = {
        name: persist._sum_and_sync(tmp_path / "i" / name, sync=False, digest=zlib.crc32)
        for name in meta["files"]
    }
    assert meta["files"]["ids.npy"] != persist._sum_and_sync(tmp_path / "i" / "ids.npy", sync=False)
    meta["check"] = persist._meta_check(meta)
    (tmp_path / "i" / "meta.json").write_text(json.dumps(meta))
    back = SearchIndex.load(tmp_path / "i")
    assert back.meta["format"] == 7 and _locations(back) == _locations(idx)
    raw = bytearray((tmp_path / "i" / "ids.npy").read_bytes())
    raw[-1] ^= 0x01
    (tmp_path / "i" / "ids.npy").write_bytes(bytes(raw))
    with pytest.raises(ValueError, match=r"ids\.npy does not match its checksum"):
        SearchIndex.load(tmp_path / "i")
