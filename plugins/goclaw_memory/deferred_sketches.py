"""The passage sketches of a large index run, made after it returns, for indexing speed.

A chunk's passage sketch (:mod:`goclaw_memory.passage_sketch`) is what the overlap reranker's
passage step reads at search time. Making them takes more CPU than a first 100,000-chunk index
run itself (benchmarks/results/2026-12-05-passage-sketches.md), though no search needs them to be
*right*: a hit without a sketch in the index is scored by the embedder's
``passage_similarity``, which sketches its text with the same function, so a search returns the
same hits and scores either way; only its passage step is ~0.5 ms slower.

So when an index run adds :data:`DEFER_AT` chunks or more to an agent's loaded index, the
backend adds them without sketches (the index is complete and searchable the moment
``index()`` returns) and hands them to :class:`SketchJobs`: one background thread per backend
sketches them in small steps, installs the sketches in the index (a new
:class:`goclaw_search.passage_sketches.PassageSketches` swapped in under the state's lock)
and then saves the index, copying it under the lock and writing the copy outside it, so no
search waits for the disk. The saved index is only written once it holds the sketches (an
earlier save would leave every later process without them).

Durability: the table is the source of truth, and none of this writes it. A process killed
before the job finished leaves the previous saved index (or none): the next process loads it
and catches up from the table, as after any crash. :meth:`SketchJobs.wait` (called by the
backend's ``close``, so by ``Engine.close``) finishes the jobs first.
"""

from __future__ import annotations

import copy
import logging
import os
import shutil
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from goclaw_search.forward import ForwardIndex
from goclaw_search.passage_sketches import PassageSketches

if TYPE_CHECKING:
    from pathlib import Path

    from goclaw.contracts.search import ChunkRecord, Space
    from goclaw_memory.sqlite_backend import SQLiteSearchBackend, _State
    from goclaw_search.index import Doc, SearchIndex

log = logging.getLogger(__name__)

DEFER_AT = 2_000  # chunks to sketch at once from which their sketches are made in the background
STEP = 64  # texts per sketcher call: a search thread waits at most one call (~1 ms) for the GIL
_TRIES = 3  # installs retried when the index was compacted meanwhile
QUIET = 0.02  # seconds since a search started after which the job goes on
MAX_WAIT = 0.05  # seconds a job step waits for searches at most


def add_records(
    backend: SQLiteSearchBackend, agent_id: str, st: _State, records: Sequence[ChunkRecord]
) -> int:
    """Add an index run's records to ``st.index`` (the caller holds ``st.lock``) with their
    passage sketches: made here for fewer than :data:`DEFER_AT`; else added without them and a
    job submitted that makes them and saves the index (also when no sketch is wanted: the save
    of a large change leaves the run too). Returns how many were added."""
    from goclaw_memory.passage_sketch import sketcher
    from goclaw_memory.sqlite_backend import docs_of

    space = st.space
    docs = docs_of(records, space)
    texts = [rec.text for rec in records]
    if len(docs) < DEFER_AT or backend.snapshot_dir is None:
        st.index.upsert(backend._sketched(docs, texts, space))
        return len(docs)
    st.index.upsert(docs)
    wanted = space is not None and sketcher(backend.engine, space) is not None
    at = [i for i, d in enumerate(docs) if d.vector is not None] if wanted else []
    backend.sketch_jobs.submit(agent_id, st, [docs[i] for i in at], [texts[i] for i in at], space)
    return len(docs)


def save_copy(backend: SQLiteSearchBackend, agent_id: str, st: _State) -> Path | None:
    """Save the agent's index as :meth:`SQLiteSearchBackend.save` does, but copied under the
    state's lock (:func:`snapshot`) and the copy written outside it, so no search waits for
    the disk; the written copy is put in place under the lock, unless ``st`` was dropped
    (a forget) or replaced meanwhile. Not while another job is under way (it saves)."""
    path = backend._snapshot(agent_id)
    if path is None or backend._unsaveable:
        return None
    with st.lock:
        if not _current(backend, agent_id, st) or st.deferred:
            return None
        backend._stamp(agent_id, st)
        copied, unsaved, seen = snapshot(st.index), st.unsaved, backend.invalidations
    backend.sweep_leftovers()
    staging = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.staging")
    # Its own name: the copy moved aside is deleted after the lock is released, and a save of
    # this index meanwhile (SearchIndex.save: "<name>.<pid>.old") must not find that folder
    # still there (its rename fails on a folder that is not empty).
    old = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.copy.old")
    try:
        copied.save(staging)
        with st.lock:
            if not _current(backend, agent_id, st):
                return None
            if path.exists():
                os.replace(path, old)
            os.replace(staging, path)
            st.unsaved = max(0, st.unsaved - unsaved)
    except OSError as exc:
        if _current(backend, agent_id, st):
            backend._save_error(path, exc, seen)
        # else a forget deleted the folder being written: that save only is dropped (its state
        # was dropped too), later ones go on; _save_error drops it too after any invalidation
        return None
    finally:  # also when the second rename failed: the index moved aside must not outlive it
        shutil.rmtree(staging, ignore_errors=True)
        shutil.rmtree(old, ignore_errors=True)
    return path


def _current(backend: SQLiteSearchBackend, agent_id: str, st: _State) -> bool:
    """Whether ``st`` is still the agent's state (not dropped by a forget, not replaced)."""
    with backend._lock:
        return not st.dropped and backend._states.get(agent_id) is st


@dataclass
class _Job:
    agent_id: str
    st: _State
    space: Space | None
    ids: list[int]
    fps: list[int]
    texts: list[str]


class SketchJobs:
    """The backend's deferred sketching: one thread, jobs in submission order."""

    def __init__(self, backend: SQLiteSearchBackend) -> None:
        self._backend = backend
        self._cond = threading.Condition()
        self._jobs: list[_Job] = []
        self._running = False
        self._thread: threading.Thread | None = None
        self.cpu = 0.0  # thread CPU seconds the jobs took

    def submit(
        self, agent_id: str, st: _State, docs: Sequence[Doc], texts: Sequence[str], space: Space | None
    ) -> None:
        """Sketch ``docs`` (already in ``st.index``, without sketches; ``texts`` their chunks'
        text; none: only the save) in the background, then save the index. The caller holds
        ``st.lock``: ``st.deferred`` counts this job from now on (:meth:`SQLiteSearchBackend.save`
        leaves the save to it)."""
        job = _Job(agent_id, st, space, [d.id for d in docs], [d.fingerprint for d in docs], list(texts))
        st.deferred += 1
        with self._cond:
            self._jobs.append(job)
            if self._thread is None or not self._thread.is_alive():
                # Not a daemon: an interpreter exiting meanwhile lets the job finish and save.
                self._thread = threading.Thread(target=self._run, name="goclaw-memory-sketches", daemon=False)
                self._thread.start()
            self._cond.notify_all()

    def busy(self) -> bool:
        with self._cond:
            return bool(self._jobs) or self._running

    def wait(self, timeout: float | None = None) -> bool:
        """Wait until every job submitted so far is done (sketches installed, index saved);
        ``False`` when ``timeout`` passed first."""
        end = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            while self._jobs or self._running:
                left = None if end is None else end - time.monotonic()
                if left is not None and left <= 0:
                    return False
                self._cond.wait(left)
        return True

    def give_way(self) -> None:
        """Wait while searches are under way (one started less than :data:`QUIET` ago), up to
        :data:`MAX_WAIT`: the job holds the interpreter while it works, and a search waiting
        for it would be slower (two threads in turn: up to 5 ms a switch). Under a constant
        stream of searches the job still advances a step per :data:`MAX_WAIT`."""
        end = time.monotonic() + MAX_WAIT
        while True:
            now = time.monotonic()
            if now - self._backend.last_search >= QUIET or now >= end:
                return
            time.sleep(0.002)

    def _run(self) -> None:
        while True:
            with self._cond:
                if not self._jobs:
                    self._thread = None
                    self._cond.notify_all()
                    return
                job = self._jobs.pop(0)
                self._running = True
            cpu = time.thread_time()
            try:
                self._do(job)
            except Exception:  # never fatal: searches score these chunks from their text
                log.warning("deferred passage sketches failed for agent %s", job.agent_id, exc_info=True)
            finally:
                self.cpu += time.thread_time() - cpu
                with job.st.lock:
                    job.st.deferred -= 1
                    last = not job.st.deferred
                if last:
                    try:
                        self._backend.save_copy(job.agent_id, job.st)
                    except Exception:  # pragma: no cover - save_copy logs its own failures
                        log.warning("saving the memory index of %s failed", job.agent_id, exc_info=True)
                with self._cond:
                    self._running = False
                    self._cond.notify_all()

    def _do(self, job: _Job) -> None:
        from goclaw_memory.passage_sketch import sketcher

        make = sketcher(self._backend.engine, job.space) if job.ids else None
        if make is None:  # only the save, or the settings changed meanwhile
            return
        made: dict[int, tuple[int, Any]] = {}
        for lo in range(0, len(job.texts), STEP):
            self.give_way()
            part = make(job.texts[lo : lo + STEP])
            for i, fp, sketch in zip(job.ids[lo : lo + STEP], job.fps[lo : lo + STEP], part, strict=True):
                made[i] = (fp, sketch)
        job.texts = []
        for _ in range(_TRIES):
            if install(job.st, made, self.give_way):
                return
        log.info("memory index of %s kept changing; its new chunks stay without sketches", job.agent_id)


def install(
    st: _State, made: dict[int, tuple[int, Any]], give_way: Callable[[], None] = lambda: None
) -> bool:
    """Put ``made`` (chunk id -> (fingerprint, sketch)) into ``st.index``'s sketches: a new
    :class:`PassageSketches` built outside the lock from a snapshot of the slots, swapped in
    under it if the slots did not move meanwhile (``False``: they did; build again). A slot
    gets its sketch when it holds that chunk with that fingerprint (the same text) and has none
    yet; a slot that has one keeps it."""
    with st.lock:
        idx = st.index
        n0 = idx.n
        ids0, fps0 = idx.ids[:n0].copy(), idx.fp[:n0].copy()
        frozen = PassageSketches.from_arrays(idx.psk.arrays())  # joined arrays are never changed in place
        psk0 = idx.psk
    has = frozen.has
    parts: list[Any] = []
    for s, (cid, fp) in enumerate(zip(ids0.tolist(), fps0.tolist(), strict=True)):
        if not s % 4096:
            give_way()
        if has[s]:
            parts.append(frozen._one(s))
            continue
        found = made.get(cid)
        parts.append(found[1] if found is not None and found[0] == fp else None)
    fresh = PassageSketches()
    for lo in range(0, len(parts), 4096):
        give_way()
        fresh.append(parts[lo : lo + 4096])
    give_way()
    fresh.arrays()  # joined here, not by the first search under the lock
    with st.lock:
        idx = st.index
        if (
            idx.psk is not psk0
            or idx.n < n0
            or not np.array_equal(idx.ids[:n0], ids0)
            or not np.array_equal(idx.fp[:n0], fps0)
        ):
            return False
        if idx.n > n0:  # slots added meanwhile keep what they have
            fresh.append([idx.psk._one(s) for s in range(n0, idx.n)])
        idx.psk = fresh
    return True


def snapshot(idx: SearchIndex) -> SearchIndex:
    """A copy of ``idx`` that :meth:`SearchIndex.save` can write while ``idx`` keeps changing
    (the caller holds the state's lock while this runs, not while the copy is saved). Arrays a
    write changes in place are copied; those a write replaces (postings, forward index,
    sketches, once joined) are shared."""
    if idx._segments:
        idx._consolidate()
    snap = copy.copy(idx)
    n = idx.n
    for name in idx._ARRAYS:
        setattr(snap, name, getattr(idx, name)[:n].copy())
    snap.detach_vocab()
    snap.scopes = dict(idx.scopes)
    snap.meta = dict(idx.meta)
    snap._segments = []
    snap._merged = {}
    fwd = idx.fwd.arrays()
    snap.fwd = ForwardIndex.from_arrays(fwd["fwd_terms"], fwd["fwd_ptr"])
    snap.psk = PassageSketches.from_arrays(idx.psk.arrays())
    return snap
