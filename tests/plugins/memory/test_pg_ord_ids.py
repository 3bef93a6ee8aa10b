"""The chunk ids a ``postgresql`` backend's searches learnt for an agent's ordinals: held per
generation within the list cache's budget, never used across a renumbering."""

from __future__ import annotations

import numpy as np

from goclaw_memory.pg_postings import Arrays, ListCache, OrdIds


def _arrays(n: int) -> Arrays:
    return Arrays(np.arange(n, dtype=np.int32), np.ones(n, np.float32), np.ones(n, np.float32))


def test_known_ids_are_read_back_and_unknown_ordinals_stay_minus_one() -> None:
    known = OrdIds(generation=3, n_ords=10)
    known.learn([2, 7, 12, -1], [102, 107, 112, 99])  # 12 is past the generation's ordinals
    assert known.of(np.array([7, 2, 5, 12, -1])).tolist() == [107, 102, -1, -1, -1]


def test_the_ids_belong_to_the_generation_the_lists_were_read_at() -> None:
    cache = ListCache(1.0)
    cache.store("a", 7, {("kettle", ""): _arrays(4)}, fresh=True)
    known = cache.ord_ids("a", 7, 10)
    assert known is not None
    known.learn([1], [501])
    again = cache.ord_ids("a", 7, 10)
    assert again is known and again.of(np.array([1])).tolist() == [501]
    assert cache.ord_ids("a", 8, 10) is None  # another search's generation: not this cache's
    assert cache.ord_ids("b", 7, 10) is None  # nothing held of that agent
    cache.store("a", 8, {("kettle", ""): _arrays(4)}, fresh=True)  # a compaction happened
    renewed = cache.ord_ids("a", 8, 10)
    assert renewed is not None and renewed is not known
    assert renewed.of(np.array([1])).tolist() == [-1]


def test_the_ids_share_the_budget_and_leave_first_when_least_recently_used() -> None:
    cache = ListCache(64 / 2**10)  # 64 KiB
    cache.store("a", 1, {("kettle", ""): _arrays(10)}, fresh=True)
    known = cache.ord_ids("a", 1, 4_000)  # 32 KB of ids
    assert known is not None
    used = cache._bytes
    assert used >= known.nbytes
    cache.store("b", 1, {("ferry", ""): _arrays(4_000)}, fresh=True)  # ~80 KB: over the budget
    assert cache._bytes <= cache.budget
    assert ("a", "", "\x00ids") not in cache._lists
    assert cache.ord_ids("a", 1, 4_000) is None  # every list of "a" left with it


def test_a_cache_turned_off_holds_no_ids() -> None:
    cache = ListCache(0)
    cache.store("a", 1, {("kettle", ""): _arrays(4)}, fresh=True)
    assert cache.ord_ids("a", 1, 10) is None
