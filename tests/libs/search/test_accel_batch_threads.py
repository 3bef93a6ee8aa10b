"""``TermTable.batch`` runs its first pass with the GIL released (libs/goclaw_search/_accel.c,
issue 11: an index run writes the previous batch and reads vectors on other threads
meanwhile): other threads run during it, several threads may share one table, the term ids
are numbered as a one-pass loop numbers them, and a rule calling back into its own table is
refused instead of deadlocking."""

from __future__ import annotations

import random
import subprocess
import sys
import threading
import time
from typing import Any

import numpy as np
import pytest

from goclaw_search import tokenize
from goclaw_search.tokenize import Tokenizer

pytestmark = pytest.mark.skipif(tokenize.accel is None, reason="the C accelerator is not built here")

WORDS = ["ledger", "Running", "TCK-4471", "src/app.py", "a--b", "v1.2.3", "naïve", "東京", "café-bar", "42"]


def _texts(seed: int, n: int) -> list[str]:
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        words = [rng.choice(WORDS) for _ in range(rng.randint(0, 40))]
        words += [f"ORD-{rng.randint(0, 10**6)}", f"w{rng.randint(0, 50_000)}x"]  # new pieces
        rng.shuffle(words)
        out.append(" ".join(words))
    return out


def _count_during(call: Any) -> tuple[Any, int, float]:
    """``call()``'s result, how many times a thread sleeping 1 ms at a time woke up and counted
    during it (it needs the GIL to count: a call holding the GIL throughout leaves it at most
    once or twice around the call), and how long the call took."""
    count = [0]
    stop = threading.Event()

    def counter() -> None:
        while not stop.is_set():
            time.sleep(0.001)  # releases the GIL; needs it back to count
            count[0] += 1

    thread = threading.Thread(target=counter)
    thread.start()
    try:
        started = time.perf_counter()
        before = count[0]
        out = call()
        return out, count[0] - before, time.perf_counter() - started
    finally:
        stop.set()
        thread.join()


def test_other_threads_run_during_a_batch() -> None:
    """With every piece cached the whole split is the first pass. A thread that sleeps 1 ms
    at a time wakes up and counts many times during it; while a call holds the GIL that
    thread cannot wake up (at most once or twice around the call)."""
    line = "word{} TCK-{} plain text here"
    texts = [" ".join(line.format(i % 500, i % 300) for _ in range(20)) for i in range(30_000)]
    tok = Tokenizer()
    tok.batch(texts[:1_000])  # every piece is cached from here on
    # the C call alone: no Python in between
    (_gids, _counts, lex), during, took = _count_during(lambda: tok._table.batch(texts))
    assert took > 0.05  # long enough to count in
    assert during >= 5, (during, took)
    pure = Tokenizer(compiled=False)
    assert lex[:50] == [" ".join(pure.terms(t)) for t in texts[:50]]


def test_the_ids_are_numbered_as_one_text_at_a_time() -> None:
    """New terms get ids in order of first sight, as when each text is a batch of its own,
    whether a piece was cached before the batch (first pass) or not (second pass)."""
    texts = _texts(3, 3_000)
    whole, single = Tokenizer(), Tokenizer()
    for lo in range(0, len(texts), 700):  # later batches: cached pieces mixed with new ones
        got = whole.batch(texts[lo : lo + 700])
        one = [single.batch([t])[0] for t in texts[lo : lo + 700]]
        assert [g.ids.tolist() for g in got] == [o.ids.tolist() for o in one]
        assert [g.lex for g in got] == [o.lex for o in one]
    assert whole._table.terms == single._table.terms


def test_threads_sharing_a_table_get_the_same_terms() -> None:
    tok, pure = Tokenizer(), Tokenizer(compiled=False)
    work = [_texts(seed, 1_500) for seed in range(4)]
    want = [[pure.terms(t) for t in texts] for texts in work]
    got: list[Any] = [None] * len(work)
    errors: list[BaseException] = []

    def run(k: int) -> None:
        try:
            out = []
            for lo in range(0, 1_500, 250):
                out += [list(t) for t in tok.batch(work[k][lo : lo + 250])]
                out[-1:] = [tok.terms(work[k][len(out) - 1])]  # terms_of meanwhile, same table
            got[k] = out
        except BaseException as exc:  # handed to the test's thread
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(k,)) for k in range(len(work))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors and got == want
    table = tok._table
    assert len(set(table.terms)) == len(table.terms)  # every term numbered once


def test_a_rule_calling_back_into_its_table_is_refused() -> None:
    """Runs in a child process with a timeout, so a deadlock fails the test."""
    code = (
        "from goclaw_search import _accel\n"
        "box = []\n"
        "def word(w):\n"
        "    return box[0].terms_of('again')[0] if w == 'loop' else w\n"
        "t = _accel.TermTable(word, lambda p: (p,), lambda s: [s], 100)\n"
        "box.append(t)\n"
        "for call in (lambda: t.batch(['fine loop']), lambda: t.terms_of('loop')):\n"
        "    try:\n"
        "        call()\n"
        "    except RuntimeError as exc:\n"
        "        print('refused', exc)\n"
        "print(t.batch(['fine again'])[2])\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-500:]
    lines = done.stdout.splitlines()
    assert lines[:2] == ["refused TermTable: used from inside one of its own rules"] * 2
    assert lines[2] == "['fine again']"  # the table is usable afterwards


def test_a_batch_whose_list_changes_meanwhile_is_unaffected() -> None:
    """The first pass reads the texts with the GIL released, while another thread replaces the
    list's items (freeing the old strings): the batch holds its own references to them."""
    texts = [" ".join(f"word{i} TCK-{j}" for j in range(200)) for i in range(400)]
    tok = Tokenizer()
    want = [list(t) for t in tok.batch(list(texts))]  # now cached: all first pass
    shared = list(texts)
    stop = threading.Event()

    def churn() -> None:
        rng = random.Random(1)
        while not stop.is_set():
            k = rng.randrange(len(shared))
            shared[k] = "".join(list(texts[k]))  # an equal text, a new object; the old one freed

    thread = threading.Thread(target=churn)
    thread.start()
    try:
        for _ in range(20):
            assert [list(t) for t in tok.batch(shared)] == want
    finally:
        stop.set()
        thread.join()


def test_other_threads_run_during_the_postings_count() -> None:
    """``postings`` (the index build's counting sort) releases the GIL for its two passes."""
    rng = np.random.default_rng(3)
    lens = np.full(400_000, 40, dtype=np.int64)
    tids = rng.integers(0, 300_000, size=int(lens.sum()), dtype=np.int32)
    accel: Any = tokenize.accel
    (_terms, _slots, tf), during, took = _count_during(lambda: accel.postings(tids, lens, 0, 300_000))
    assert took > 0.05
    assert during >= 5, (during, took)
    assert np.frombuffer(tf, dtype=np.float32).sum() == len(tids)  # every occurrence counted
