"""A large index run's SQLite WAL checkpoint, after the run, for indexing speed.

goclaw's SQLite database is in WAL mode with ``synchronous=NORMAL``: a commit appends the
transaction's pages to the write-ahead log, and once the log passes 1,000 pages (8 MB) the
committing connection copies it back into the database file and syncs both (a checkpoint).
Every transaction of a large index run passes that size, so each of its commits would pay a
checkpoint: ~45 ms each, 0.75 s of a 100,000-chunk run written in the caller's thread.

During a run of :data:`BULK` chunks or more, each transaction's connection skips the automatic
checkpoint (:func:`hold_checkpoints`: ``PRAGMA wal_autocheckpoint=0`` while the connection is
checked out; the pool's check-in puts the connection's own setting back), and when the run
ends one checkpoint of the whole log runs in a background thread (:func:`checkpoint_later`;
``Engine.close`` waits for it).

What a commit guarantees is unchanged: a committed transaction is in the log, which an
application crash keeps; readers see it at once. With ``synchronous=NORMAL`` a power loss may
roll back the last transactions (SQLite's rule for this mode; here, those of the run not yet
checkpointed), never leaving the file inconsistent: the next run re-indexes what is missing.
A process killed before the checkpoint leaves a long log, which the next connection's
automatic checkpoint copies.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
import weakref
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sqlalchemy.orm import Session

    from goclaw.contracts.host import Host

log = logging.getLogger(__name__)

BULK = 2_000  # chunks (estimated) from which a run defers its checkpoints
_KEY = "goclaw_wal_autocheckpoint"  # the connection's own settings while a run holds it
# The page cache of a bulk run's connection (KiB, SQLite's negative form): the run's pages live
# in the write-ahead log until the checkpoint after it, and with the default 2 MB cache the
# writer read ~30,000 of them back from the log (a system call each) at 100,000 chunks.
BULK_CACHE_KIB = -65_536
_threads: weakref.WeakKeyDictionary[Any, list[threading.Thread]] = weakref.WeakKeyDictionary()
_lock = threading.Lock()


def database_path(engine: Host) -> str | None:
    """The SQLite file of the engine's database (None: PostgreSQL or a database in memory)."""
    if engine.db.backend != "sqlite":
        return None
    path = engine.db.engine.url.database
    if not path or path == ":memory:" or path.startswith("file:"):
        return None
    return str(path)


def hold_checkpoints(session: Session) -> None:
    """No automatic checkpoint at this transaction's commit (nor at any other while its
    connection is checked out); the pool's check-in restores the connection's setting."""
    from sqlalchemy import event

    fairy = session.connection().connection  # the pool's proxy of the sqlite3 connection
    if _KEY in fairy.info:
        return
    engine = session.get_bind()
    pool_events = getattr(engine, "engine", engine)
    if not event.contains(pool_events, "checkin", _restore):
        event.listen(pool_events, "checkin", _restore)
    raw = fairy.driver_connection
    was = int(raw.execute("PRAGMA wal_autocheckpoint").fetchone()[0])
    cache = int(raw.execute("PRAGMA cache_size").fetchone()[0])
    raw.execute("PRAGMA wal_autocheckpoint=0")
    raw.execute(f"PRAGMA cache_size={BULK_CACHE_KIB}")
    fairy.info[_KEY] = (was, cache)


def _restore(dbapi_conn: Any, record: Any) -> None:
    was = record.info.pop(_KEY, None) if record is not None else None
    if was is not None and dbapi_conn is not None:
        checkpoint, cache = was
        dbapi_conn.execute(f"PRAGMA wal_autocheckpoint={int(checkpoint)}")
        dbapi_conn.execute(f"PRAGMA cache_size={int(cache)}")


def checkpoint_later(engine: Host) -> None:
    """Copy the write-ahead log into the database file in a background thread (a passive
    checkpoint: it never waits for readers or writers; what it leaves, the next automatic
    checkpoint copies). ``Engine.close`` waits for it."""
    path = database_path(engine)
    if path is None:
        return
    # Not a daemon (whoever runs the index, a watcher's thread included): an exiting
    # interpreter lets it finish.
    thread = threading.Thread(target=_checkpoint, args=(path,), name="goclaw-wal-checkpoint", daemon=False)
    with _lock:
        running = _threads.get(engine)
        if running is None:
            running = _threads[engine] = []
            engine.on_close(lambda: wait(engine))
        running[:] = [t for t in running if t.is_alive()]
        running.append(thread)
    thread.start()


def wait(engine: Host, timeout: float | None = None) -> None:
    """Wait for the engine's background checkpoints."""
    with _lock:
        running = list(_threads.get(engine, ()))
    for thread in running:
        thread.join(timeout)


def _checkpoint(path: str) -> None:
    try:
        conn = sqlite3.connect(path, timeout=5.0)
        try:
            conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
        finally:
            conn.close()
    except sqlite3.Error:  # busy or unreadable: the next automatic checkpoint does it
        log.info("background WAL checkpoint of %s did not run", path, exc_info=True)
