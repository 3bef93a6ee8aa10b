"""Memory search on one PostgreSQL database shared by many processes, at a million chunks.

    GOCLAW_BENCH_DATABASE_URL=postgresql+psycopg://goclaw:goclaw@127.0.0.1:5432/goclaw_test \\
      nice -n 10 .venv/bin/python benchmarks/pg_scale.py --agents 1000 --per-agent 1000 \\
      --big 100000 --procs 8 --seconds 120

The database: ``--agents`` agents of ``--per-agent`` chunks plus one agent of ``--big``
chunks (synthetic notes with planted facts, :mod:`synth_memory`; 256-d vectors of the default
static embedder). Ten small agents and the big one are indexed from their own corpora
(their exact SQLite answers computed by a process beside); the other small agents are copies
of the ten, written by set-based SQL on ``--loaders`` connections: documents, chunks and the
rows the statistics triggers would have written for them (dictionary, postings, statistics),
the triggers off meanwhile, the secondary and HNSW indexes built once after.

The run: ``--procs`` client processes, each a fresh ``Engine.open`` on its own empty workspace
(a new host: nothing saved, nothing built), for ``--seconds``: 90 % searches (hybrid; the big
agent one time in five, a random small agent otherwise) and 10 % memory adds (each process to
its own user scope of a random small agent). One more process watches the adds: for each, the
time until its own search finds it. Reported: search p50 / p99 per scope size, throughput,
errors, RSS of each process after its first search and at the end, each process's first
search, write visibility, lost writes (every add searched for at the end), the database's
size on disk, and quality: hit@10 / MRR and top-10 overlap with the exact SQLite result of the
same corpus, for the big agent and the ten indexed small ones (and copies of them).

The PostgreSQL side searches with ``--backend`` (``auto``, the default, selects ``postgresql``:
nothing held per process).
Everything runs in its own schema of that database, dropped at the end (``--keep`` keeps it).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from synth_memory import generate, hit_rank

K = 10
TEMPLATES = 10


def _rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def _pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p * (len(xs) - 1) + 0.5))] * 1000 if xs else float("nan")


def _index(eng: Any, name: str, src: Path) -> None:
    target = Path(eng.agent_dir(eng.agents.get(name)))
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(src, target)
    eng.memory.index(name, bulk=True)


# The small agents beyond the ten indexed ones are copies of them, written by set-based SQL
# with every row's id computed (copy i of template t: base + (i - TEMPLATES) * stride + the row's
# rank in t), so chunks and documents map one to one without a join on text. The triggers are
# off for these statements (session_replication_role): their rows (statistics, packed postings,
# ordinals) are copied like the chunks, and the secondary indexes are dropped first and built
# once at the end.
_MAPS = (
    "CREATE UNLOGGED TABLE _scale_cp AS SELECT g AS i, 'A' || g AS dst, NULL::text AS src "
    "FROM generate_series(0, -1) g",
    "CREATE UNLOGGED TABLE _scale_dm AS SELECT id AS old, agent_id AS tpl, "
    "row_number() OVER (PARTITION BY agent_id ORDER BY id) - 1 AS r FROM memory_documents "
    "WHERE agent_id = ANY(:tpls)",
    "CREATE UNLOGGED TABLE _scale_cm AS SELECT id AS old, agent_id AS tpl, "
    "row_number() OVER (PARTITION BY agent_id ORDER BY id) - 1 AS r FROM memory_chunks "
    "WHERE agent_id = ANY(:tpls)",
    "CREATE INDEX ON _scale_dm (old)",
    "CREATE INDEX ON _scale_cm (old)",
)
_DOCS = (
    "INSERT INTO memory_documents (id, agent_id, user_id, path, content_hash, size, mtime, chunk_count, "
    "indexed_at) SELECT :db + (cp.i - :t0) * :sd + dm.r, cp.dst, d.user_id, d.path, d.content_hash, d.size, "
    "d.mtime, d.chunk_count, d.indexed_at FROM _scale_cp cp JOIN _scale_dm dm ON dm.tpl = cp.src "
    "JOIN memory_documents d ON d.id = dm.old WHERE cp.i BETWEEN :lo AND :hi"
)
_CHUNKS = (
    "INSERT INTO memory_chunks (id, document_id, agent_id, user_id, path, start_line, end_line, text, "
    "chunk_hash, embedding, embedding_provider, embedding_model, embedding_dim, lex) "
    "SELECT :cb + (cp.i - :t0) * :sc + cm.r, :db + (cp.i - :t0) * :sd + dm.r, cp.dst, c.user_id, c.path, "
    "c.start_line, c.end_line, c.text, c.chunk_hash, c.embedding, c.embedding_provider, c.embedding_model, "
    "c.embedding_dim, c.lex FROM _scale_cp cp JOIN _scale_cm cm ON cm.tpl = cp.src "
    "JOIN memory_chunks c ON c.id = cm.old JOIN _scale_dm dm ON dm.old = c.document_id "
    "WHERE cp.i BETWEEN :lo AND :hi"
)
# Packed postings are per agent (ordinals count from 0 in each): a copy's rows are the
# template's under the copy's agent id; its ordinals point to the copy's chunk ids.
_ORDS = (
    "INSERT INTO memory_ords (agent_id, ord, chunk_id) SELECT cp.dst, o.ord, :cb + (cp.i - :t0) * :sc + cm.r "
    "FROM _scale_cp cp JOIN memory_ords o ON o.agent_id = cp.src JOIN _scale_cm cm ON cm.old = o.chunk_id "
    "WHERE cp.i BETWEEN :lo AND :hi"
)
_PER_AGENT = (
    "INSERT INTO memory_term_stats (agent_id, term, df, max_tf) SELECT cp.dst, s.term, s.df, s.max_tf "
    "FROM _scale_cp cp JOIN memory_term_stats s ON s.agent_id = cp.src WHERE cp.i BETWEEN :lo AND :hi",
    "INSERT INTO memory_agent_stats (agent_id, chunks, terms) SELECT cp.dst, s.chunks, s.terms "
    "FROM _scale_cp cp JOIN memory_agent_stats s ON s.agent_id = cp.src WHERE cp.i BETWEEN :lo AND :hi",
    "INSERT INTO memory_packed (agent_id, term, user_id, ords, tfs, lens) SELECT cp.dst, p.term, p.user_id, "
    "p.ords, p.tfs, p.lens FROM _scale_cp cp JOIN memory_packed p ON p.agent_id = cp.src "
    "WHERE cp.i BETWEEN :lo AND :hi",
    "INSERT INTO memory_packed_agents (agent_id, next_ord, generation) "
    "SELECT cp.dst, s.next_ord, s.generation FROM _scale_cp cp "
    "JOIN memory_packed_agents s ON s.agent_id = cp.src WHERE cp.i BETWEEN :lo AND :hi",
)
# Built once after the copies (the HNSW index apart: the backend's bulk_load).
_DEFERRED = (
    "ix_memory_chunks_document",
    "ix_memory_chunks_scope",
    "ix_memory_chunks_tsv",
    "ix_memory_packed",
    "ix_memory_ords",
    "ix_memory_ords_chunk",
    "ix_memory_term_stats",
)


def _niced(conn: Any, replica: bool = False) -> None:
    """This connection's server process at the loader's own priority; with ``replica`` its
    triggers off for the session (a connection of its own, never one of an engine's pool)."""
    pid = conn.exec_driver_sql("SELECT pg_backend_pid()").scalar_one()
    try:
        os.setpriority(os.PRIO_PROCESS, int(pid), os.getpriority(os.PRIO_PROCESS, 0))
    except OSError:
        pass
    if replica:
        conn.exec_driver_sql("SET session_replication_role = replica")
        conn.exec_driver_sql("SET synchronous_commit = off")


def _exact(corpora: dict[str, Any], tmp: str, out: Any) -> None:
    """The exact answers: each corpus indexed into SQLite and searched (a process of its own,
    beside the PostgreSQL load)."""
    from goclaw.engine import Engine

    exact: dict[str, list[list[tuple[str, int]]]] = {}
    quality: dict[str, Any] = {}
    t0 = time.perf_counter()
    sqlite = Engine.open(Path(tmp) / "sqlite", None)
    for name, (src, questions) in corpora.items():
        sqlite.agents.create(name)
        _index(sqlite, name, src)
        tops, found, rr, times = [], 0, 0.0, []
        for q in questions:
            t = time.perf_counter()
            hits = sqlite.memory.search(q["question"], name, limit=K)
            times.append(time.perf_counter() - t)
            tops.append([(h.path, h.start_line) for h in hits])
            r = hit_rank(hits, q["expect"]) if q.get("expect") else None
            if r:
                found, rr = found + 1, rr + 1 / r
        exact[name] = tops
        answered = sum(1 for q in questions if q.get("expect"))
        quality[name] = {"sqlite_hit": found / max(1, answered), "sqlite_mrr": rr / max(1, answered)}
        quality[name]["sqlite_p50_ms"] = _pct(times, 0.5)
    sqlite.close()
    out.put({"exact": exact, "quality": quality, "seconds": time.perf_counter() - t0})


def _copy_batches(url: str, batches: list[tuple[int, int]], params: dict[str, int], t1: float) -> None:
    from sqlalchemy import create_engine, text

    eng = create_engine(url)
    with eng.connect() as c:
        _niced(c, replica=True)
        c.commit()
        for lo, hi in batches:
            with c.begin():
                p = params | {"lo": lo, "hi": hi}
                for sql in (_DOCS, _CHUNKS, _ORDS, *_PER_AGENT):
                    c.execute(text(sql), p)
            print(f"  copied agents {lo}-{hi} ({time.perf_counter() - t1:.0f} s)", flush=True)
    eng.dispose()


def _threads(target: Any, argss: list[tuple[Any, ...]]) -> None:
    """``target`` on each of ``argss`` in threads; the first failure raised here."""
    import threading

    failed: list[BaseException] = []

    def run(*a: Any) -> None:
        try:
            target(*a)
        except BaseException as exc:
            failed.append(exc)

    threads = [threading.Thread(target=run, args=a) for a in argss]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if failed:
        raise failed[0]


def _copy(pg: Any, url: str, args: argparse.Namespace) -> dict[str, float]:
    """The small agents beyond the templates, copied by SQL (:data:`_MAPS` and what follows)."""
    import threading

    from sqlalchemy import text

    timing: dict[str, float] = {}
    t1 = time.perf_counter()
    tpl_ids = {f"a{i:04d}": pg.agents.get(f"a{i:04d}").id for i in range(TEMPLATES)}
    names = [f"a{i:04d}" for i in range(TEMPLATES, args.agents)]
    for name in names:
        pg.agents.create(name)
    ids = {a.name: a.id for a in pg.agents.list()}
    timing["agents_s"] = time.perf_counter() - t1
    t = time.perf_counter()
    with pg.db.engine.begin() as c:
        _niced(c)
        defs = dict(
            c.execute(
                text(
                    "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = current_schema() "
                    "AND indexname = ANY(:n)"
                ),
                {"n": list(_DEFERRED)},
            ).all()
        )
        for sql in _MAPS:
            c.execute(text(sql), {"tpls": list(tpl_ids.values())})
        c.execute(
            text(
                "INSERT INTO _scale_cp (i, dst, src) SELECT * FROM unnest(CAST(:i AS int[]), "
                "CAST(:d AS text[]), CAST(:s AS text[]))"
            ),
            {
                "i": list(range(TEMPLATES, args.agents)),
                "d": [ids[n] for n in names],
                "s": [tpl_ids[f"a{i % TEMPLATES:04d}"] for i in range(TEMPLATES, args.agents)],
            },
        )
        c.exec_driver_sql("ANALYZE _scale_cp, _scale_dm, _scale_cm")
        one = "SELECT coalesce(max(n), 0) + 1 FROM (SELECT count(*) AS n FROM {} GROUP BY tpl) x"
        params = {
            "t0": TEMPLATES,
            "db": c.exec_driver_sql("SELECT max(id) + 1 FROM memory_documents").scalar_one(),
            "cb": c.exec_driver_sql("SELECT max(id) + 1 FROM memory_chunks").scalar_one(),
            "sd": c.exec_driver_sql(one.format("_scale_dm")).scalar_one(),
            "sc": c.exec_driver_sql(one.format("_scale_cm")).scalar_one(),
        }
        for name in defs:
            c.exec_driver_sql(f"DROP INDEX {name}")
    timing["maps_s"] = time.perf_counter() - t
    print(f"  agents created and maps built ({time.perf_counter() - t1:.0f} s); strides {params}", flush=True)
    t = time.perf_counter()
    step = 25
    batches = [(lo, min(lo + step, args.agents) - 1) for lo in range(TEMPLATES, args.agents, step)]
    _threads(_copy_batches, [(url, batches[k :: args.loaders], params, t1) for k in range(args.loaders)])
    timing["copies_s"] = time.perf_counter() - t
    t = time.perf_counter()
    n = len(names)
    with pg.db.engine.begin() as c:
        _niced(c)
        for seq, base, stride in (
            ("memory_documents", params["db"], params["sd"]),
            ("memory_chunks", params["cb"], params["sc"]),
        ):
            c.exec_driver_sql(f"SELECT setval(pg_get_serial_sequence('{seq}', 'id'), {base + n * stride})")
        for tbl in ("_scale_cp", "_scale_dm", "_scale_cm"):
            c.exec_driver_sql(f"DROP TABLE {tbl}")
    # The secondary indexes, two at a time (one connection each).
    pending = list(defs.items())
    lock = threading.Lock()

    def build() -> None:
        from sqlalchemy import create_engine

        e = create_engine(url)
        with e.connect() as c:
            _niced(c)
            c.exec_driver_sql("SET maintenance_work_mem = '2GB'")
            c.commit()
            while True:
                with lock:
                    if not pending:
                        break
                    name, ddl = pending.pop(0)
                s = time.perf_counter()
                with c.begin():
                    c.exec_driver_sql(ddl)
                print(f"  index {name} built in {time.perf_counter() - s:.0f} s", flush=True)
        e.dispose()

    _threads(build, [() for _ in range(max(1, args.loaders))])
    timing["indexes_s"] = time.perf_counter() - t
    t = time.perf_counter()
    dim = int(pg.embedder().dim)
    with pg.db.engine.begin() as c:
        _niced(c)
        c.exec_driver_sql("SET maintenance_work_mem = '3GB'")
        c.exec_driver_sql(
            f"CREATE INDEX IF NOT EXISTS ix_memory_chunks_hnsw_{dim} ON memory_chunks "
            f"USING hnsw ((embedding::vector({dim})) vector_cosine_ops) WHERE embedding_dim = {dim}"
        )
    timing["hnsw_s"] = time.perf_counter() - t
    print(f"  HNSW built in {timing['hnsw_s']:.0f} s", flush=True)
    return timing


def load(url: str, tmp: Path, args: argparse.Namespace) -> dict[str, Any]:
    """Index the corpora into SQLite (the exact answers, in a process beside) and PostgreSQL,
    copy the small agents."""
    from sqlalchemy import text

    from goclaw.engine import Engine

    t0 = time.perf_counter()
    corpora = {"big": (tmp / "src-big", generate(tmp / "src-big", args.big, 150, 7))}
    for i in range(min(TEMPLATES, args.agents)):
        name = f"a{i:04d}"
        corpora[name] = (tmp / f"src-{name}", generate(tmp / f"src-{name}", args.per_agent, 20, 100 + i))
    print(f"  corpora generated ({time.perf_counter() - t0:.0f} s)", flush=True)
    ctx = mp.get_context("spawn")
    exact_q = ctx.Queue()
    exact_p = ctx.Process(target=_exact, args=(corpora, str(tmp), exact_q))
    exact_p.start()
    t0 = time.perf_counter()
    os.environ["GOCLAW_PLUGINS__MEMORY__BACKEND"] = args.backend  # from here on, and the clients
    pg = Engine.open(tmp / "loader", url)
    print(f"backend {args.backend} -> {pg.memory.backend.name}", flush=True)
    with pg.db.engine.connect() as c:  # the indexing's server process at this one's priority
        _niced(c)
    timing: dict[str, float] = {}
    with pg.memory.backend.bulk_load(int(pg.embedder().dim)):  # the HNSW index built once after
        for name, (src, _q) in corpora.items():
            pg.agents.create(name)
            _index(pg, name, src)
            print(f"  indexed {name} ({time.perf_counter() - t0:.0f} s)", flush=True)
        from goclaw_memory.pg_postings import compact

        with pg.db.engine.begin() as c:  # every template's postings packed: the copies copy them
            for name in corpora:
                compact(c, pg.agents.get(name).id, wait=True)
        indexed = time.perf_counter() - t0
        timing = _copy(pg, url, args)
    copied = time.perf_counter() - t0 - indexed
    t = time.perf_counter()
    with pg.db.engine.begin() as c:
        _niced(c)
        c.exec_driver_sql("ANALYZE")
        total = c.execute(text("SELECT count(*) FROM memory_chunks")).scalar_one()
        sizes = c.execute(
            text(
                "SELECT relname, pg_total_relation_size(oid) FROM pg_class WHERE relnamespace = "
                "(SELECT oid FROM pg_namespace WHERE nspname = current_schema()) AND relkind = 'r' "
                "ORDER BY 2 DESC LIMIT 8"
            )
        ).all()
        indexes = c.execute(
            text(
                "SELECT indexrelname, pg_relation_size(indexrelid) FROM pg_stat_user_indexes "
                "WHERE schemaname = current_schema() AND pg_relation_size(indexrelid) > 10485760 "
                "ORDER BY 2 DESC"
            )
        ).all()
        db_size = c.exec_driver_sql("SELECT pg_database_size(current_database())").scalar_one()
    timing["analyze_s"] = time.perf_counter() - t
    pg.close()
    print(f"  analyzed ({timing['analyze_s']:.0f} s); waiting for the exact answers", flush=True)
    ex = exact_q.get()
    exact_p.join()
    exact = {n: [set(map(tuple, top)) for top in tops] for n, tops in ex["exact"].items()}
    print(f"  SQLite exact answers took {ex['seconds']:.0f} s (beside the load)", flush=True)
    questions = {name: q for name, (_src, q) in corpora.items()}
    return {
        "exact": exact,
        "questions": questions,
        "quality": ex["quality"],
        "indexed_s": indexed,
        "copied_s": copied,
        "timing": timing,
        "chunks": total,
        "db_mb": db_size / 2**20,
        "sizes": [(n, s / 2**20) for n, s in sizes],
        "indexes": [(n, s / 2**20) for n, s in indexes],
    }


def client(k: int, url: str, ws: str, agents: list[str], seconds: float, out: Any, seed: int) -> None:
    """One client process: searches and adds for ``seconds``; its figures into ``out``."""
    from goclaw.engine import Engine

    rng = random.Random(seed)
    eng = Engine.open(Path(ws), url)
    embedder = eng.embedder()
    if embedder is not None:
        embedder.embed(["warm up the embedder"])  # its own start-up is not the search's
    base = _rss_mb()
    t = time.perf_counter()
    eng.memory.search("invoice for the customer in Lisbon", "big", limit=K)
    first = time.perf_counter() - t
    rss_first = _rss_mb()
    user = f"probe-{k}"
    lat: dict[str, list[float]] = {"big": [], "small": []}
    adds: list[tuple[str, str, float]] = []
    errors: list[str] = []
    words = ["ferry", "invoice", "outage", "deploy", "refund", "latency", "renewal", "backup", "audit"]
    end = time.monotonic() + seconds
    n = 0
    while time.monotonic() < end:
        n += 1
        small = rng.choice(agents)
        try:
            if rng.random() < 0.1:
                token = f"scaleprobe{k}x{n}"
                note = f"Probe {token}: the {rng.choice(words)} note of client {k}."
                eng.memory.writer.add(small, note, user)
                adds.append((small, token, time.time()))
            else:
                agent = "big" if rng.random() < 0.2 else small
                q = f"{rng.choice(words)} {rng.choice(words)} for the customer"
                t = time.perf_counter()
                eng.memory.search(q, agent, limit=K)
                lat["big" if agent == "big" else "small"].append(time.perf_counter() - t)
        except Exception as exc:  # counted, reported
            errors.append(f"{type(exc).__name__}: {exc}"[:200])
    eng.close()
    out.put({"k": k, "first": first, "base": base, "rss_first": rss_first, "rss_end": _rss_mb()} |
            {"lat": lat, "adds": adds, "errors": errors, "user": user})  # fmt: skip


def watcher(url: str, ws: str, seconds: float, queue: Any, out: Any) -> None:
    """Finds each add (announced on ``queue``) with its own searches: the visibility time."""
    from goclaw.engine import Engine

    eng = Engine.open(Path(ws), url)
    seen: list[float] = []
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        try:
            agent, user, token, written = queue.get(timeout=1)
        except Exception:
            continue
        while time.monotonic() < end + 10:
            if any(token in h.snippet for h in eng.memory.search(token, agent, user, channel="lexical")):
                seen.append(time.time() - written)
                break
            time.sleep(0.005)
    eng.close()
    out.put({"visibility": seen})


def announcing_client(k: int, url: str, ws: str, agents: list[str], seconds: float, out: Any, q: Any) -> None:
    """:func:`client`, whose first add of every ten is announced to the watcher."""
    from goclaw.engine import Engine

    eng = Engine.open(Path(ws), url)
    rng = random.Random(1000 + k)
    errors: list[str] = []
    end = time.monotonic() + seconds
    n = 0
    while time.monotonic() < end:
        n += 1
        agent, user, token = rng.choice(agents), f"watch-{k}", f"watchprobe{k}x{n}"
        try:
            eng.memory.writer.add(agent, f"Watched {token} note.", user)
        except Exception as exc:  # counted, reported
            errors.append(f"{type(exc).__name__}: {exc}"[:200])
        else:
            q.put((agent, user, token, time.time()))
        time.sleep(1.0)
    eng.close()
    out.put({"watch_errors": errors})


def run(url: str, args: argparse.Namespace) -> None:
    from sqlalchemy import create_engine, text

    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    tmp = Path(tempfile.mkdtemp(prefix="goclaw-pgscale-"))
    schema = f"bench_{uuid.uuid4().hex[:8]}"
    admin = create_engine(url)
    with admin.begin() as c:
        c.execute(text(f"CREATE SCHEMA {schema}"))
    sep = "&" if "?" in url else "?"
    pg_url = f"{url}{sep}options=-csearch_path%3D{schema},public"
    try:
        t0 = time.perf_counter()
        loaded = load(pg_url, tmp, args)
        print(
            f"loaded {loaded['chunks']:,} chunks ({args.agents} agents x {args.per_agent} + {args.big:,}) "
            f"in {time.perf_counter() - t0:.0f} s (indexing {loaded['indexed_s']:.0f} s, copies and "
            f"HNSW build {loaded['copied_s']:.0f} s)",
            flush=True,
        )
        print("  " + ", ".join(f"{k} {v:.0f}" for k, v in loaded["timing"].items()))
        print(f"  database size {loaded['db_mb']:,.0f} MB")
        for name, mb in loaded["sizes"]:
            print(f"  table {name}: {mb:,.0f} MB (with its indexes and TOAST)")
        for name, mb in loaded["indexes"]:
            print(f"  index {name}: {mb:,.0f} MB")
        small = [f"a{i:04d}" for i in range(args.agents)]
        ctx = mp.get_context("spawn")
        out, watch_q = ctx.Queue(), ctx.Queue()
        procs = [
            ctx.Process(target=client, args=(k, pg_url, str(tmp / f"ws{k}"), small, args.seconds, out, k))
            for k in range(args.procs)
        ]
        procs.append(ctx.Process(target=watcher, args=(pg_url, str(tmp / "wsw"), args.seconds, watch_q, out)))
        procs.append(
            ctx.Process(
                target=announcing_client,
                args=(args.procs, pg_url, str(tmp / "wsa"), small, args.seconds - 5, out, watch_q),
            )
        )
        t1 = time.perf_counter()
        for p in procs:
            p.start()
        results = [out.get() for _ in procs]
        for p in procs:
            p.join()
        wall = time.perf_counter() - t1
        _report(pg_url, results, loaded, args, wall)
    finally:
        if not args.keep:
            with admin.begin() as c:
                c.execute(text(f"DROP SCHEMA IF EXISTS {schema} CASCADE"))
        admin.dispose()
        shutil.rmtree(tmp, ignore_errors=True)


def _report(url: str, results: list[dict[str, Any]], loaded: dict[str, Any], args: Any, wall: float) -> None:
    from goclaw.engine import Engine

    clients = [r for r in results if "lat" in r]
    lat = {s: [x for r in clients for x in r["lat"][s]] for s in ("big", "small")}
    searches = sum(len(v) for v in lat.values())
    adds = [(a, tok, r["user"]) for r in clients for a, tok, _w in r["adds"]]
    errors = [e for r in results for e in r.get("errors", []) + r.get("watch_errors", [])]
    print(f"{args.procs} client processes for {args.seconds:.0f} s (wall {wall:.0f} s):")
    for scope, xs in lat.items():
        size = args.big if scope == "big" else args.per_agent  # the agents' chunks, as loaded
        print(f"  search, {size:,}-chunk agents: {len(xs)} searches, p50 {_pct(xs, 0.5):.1f} ms, "
              f"p99 {_pct(xs, 0.99):.1f} ms")  # fmt: skip
    print(f"  throughput {searches / args.seconds:.1f} searches/s + {len(adds) / args.seconds:.1f} adds/s")
    print(f"  errors {len(errors)}" + (f" (first: {errors[0]})" if errors else ""))
    for r in sorted(clients, key=lambda r: r["k"]):
        print(f"  process {r['k']}: first search {r['first'] * 1000:.0f} ms; RSS {r['base']:.0f} MB "
              f"before it, {r['rss_first']:.0f} MB after it, {r['rss_end']:.0f} MB at the end")  # fmt: skip
    vis = [x for r in results for x in r.get("visibility", [])]
    if vis:
        print(f"  write visibility (add returned -> another process's search finds it), {len(vis)} writes: "
              f"median {statistics.median(vis) * 1000:.1f} ms, max {max(vis) * 1000:.1f} ms")  # fmt: skip
    check = Path(tempfile.mkdtemp(prefix="goclaw-pgscale-check-"))
    eng = Engine.open(check, url)
    lost = sum(
        1
        for agent, token, user in adds
        if not any(token in h.snippet for h in eng.memory.search(token, agent, user, channel="lexical"))
    )
    print(f"  lost writes {lost} of {len(adds)}")
    print(f"quality ({args.backend}, hybrid, reranker on) against the exact SQLite result:")
    for name, questions in loaded["questions"].items():
        targets = [name] if name == "big" else [name, f"a{int(name[1:]) + TEMPLATES:04d}"]
        for agent in targets:
            if agent != name and int(agent[1:]) >= args.agents:
                continue
            overlap, found, rr, answered = [], 0, 0.0, 0
            for q, want in zip(questions, loaded["exact"][name], strict=True):
                hits = eng.memory.search(q["question"], agent, limit=K)
                overlap.append(len(want & {(h.path, h.start_line) for h in hits}) / max(1, len(want)))
                if q.get("expect"):
                    answered += 1
                    r = hit_rank(hits, q["expect"])
                    if r:
                        found, rr = found + 1, rr + 1 / r
            ref = loaded["quality"][name]
            print(
                f"  {agent}{' (copy of ' + name + ')' if agent != name else ''}: overlap "
                f"{statistics.mean(overlap):.3f}; hit@10 / MRR {found / max(1, answered):.3f} / "
                f"{rr / max(1, answered):.3f} (SQLite {ref['sqlite_hit']:.3f} / {ref['sqlite_mrr']:.3f})"
            )
    eng.close()
    shutil.rmtree(check, ignore_errors=True)
    print(json.dumps({"errors": len(errors), "lost": lost, "searches": searches, "adds": len(adds)}))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--agents", type=int, default=1000)
    ap.add_argument("--per-agent", type=int, default=1000)
    ap.add_argument("--big", type=int, default=100_000)
    ap.add_argument("--procs", type=int, default=8)
    ap.add_argument("--seconds", type=float, default=120.0)
    ap.add_argument("--backend", default="auto", help="auto (postgresql here), postgresql or inprocess")
    ap.add_argument("--loaders", type=int, default=2, help="connections copying the small agents")
    ap.add_argument("--keep", action="store_true", help="keep the schema (and its data) at the end")
    args = ap.parse_args()
    url = os.environ.get("GOCLAW_BENCH_DATABASE_URL") or os.environ.get("GOCLAW_TEST_DATABASE_URL")
    if not url:
        print("error: set GOCLAW_BENCH_DATABASE_URL to a PostgreSQL URL with pgvector", file=sys.stderr)
        return 2
    run(url, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
