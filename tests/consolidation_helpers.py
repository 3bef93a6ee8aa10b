"""Shared helpers for the consolidation tests: recording sessions, a litellm mock, a test worker
plugin installed through a real entry point (a ``*.dist-info`` folder on ``PYTHONPATH``)."""

from __future__ import annotations

import json
import os
import re
import sys
import textwrap
from pathlib import Path
from typing import Any

from goclaw_memory.tables import Session as SessionRow
from goclaw_memory.tables import SessionMessage

KNOWN = [
    ("Project Atlas", "project"),
    ("Atlas Project", "project"),
    ("Alice Smith", "person"),
    ("Postgres", "technology"),
    ("Berlin", "place"),
]


def record_session(engine: Any, agent: Any, key: str, user: str, messages: list[tuple[str, str]]) -> None:
    """Append messages through ``engine.sessions`` when it exists, else straight into the tables."""
    sessions = engine.sessions if engine.has_service("sessions") else None
    if sessions is not None and hasattr(sessions, "append"):
        for role, content in messages:
            sessions.append(agent.name, key, role, content, user=user or None)
        return
    with engine.db.write() as s:
        if s.get(SessionRow, key) is None:
            s.add(SessionRow(key=key, agent_id=agent.id, user_id=user))
            s.flush()
        base = len(
            s.exec(
                __import__("sqlmodel").select(SessionMessage).where(SessionMessage.session_key == key)
            ).all()
        )
        for i, (role, content) in enumerate(messages):
            s.add(
                SessionMessage(
                    session_key=key, seq=base + i, role=role, content=content, token_count=len(content) // 4
                )
            )


def end_session(engine: Any, agent: Any, key: str, user: str) -> None:
    """``engine.sessions.end`` when it exists (it publishes run.completed), else publish directly."""
    sessions = engine.sessions if engine.has_service("sessions") else None
    if sessions is not None and hasattr(sessions, "end"):
        sessions.end(key)
        return
    engine.events.publish_now(
        "run.completed",
        {"session_key": key, "compaction_count": 0, "agent_id": agent.id, "user_id": user, "summary": ""},
        agent_id=agent.id,
        user_id=user,
    )


def fake_reply(messages: list[dict[str, Any]]) -> str:
    """What our mocked model answers, chosen by the system prompt of each call."""
    system = str(messages[0]["content"])
    body = str(messages[-1]["content"])
    if system.startswith("You write episodic memory"):
        first_user = re.search(r"^user: (.*)$", body, re.M)
        return f"The session covered {first_user.group(1) if first_user else 'nothing'} (mocked summary)."
    if system.startswith("Extract a knowledge graph"):
        ents = [
            {"name": n, "type": t, "confidence": 0.9, "description": f"{n} ({t})"}
            for n, t in KNOWN
            if n in body
        ]
        rels = []
        for project in ("Project Atlas", "Atlas Project"):
            if "Alice Smith" in body and project in body:
                rels.append(
                    {"source": "Alice Smith", "relation": "leads", "target": project, "confidence": 0.9}
                )
        return "```json\n" + json.dumps({"entities": ents, "relations": rels}) + "\n```"
    if system.startswith("You consolidate"):
        return "- MOCKED DREAM: Alice Smith leads Project Atlas; the team standardised on Postgres."
    if system.startswith("From this group chat"):
        return json.dumps({"memories": ["The channel agreed to ship on Friday. Contact " + body[-40:]]})
    return "ok"


def mock_litellm(monkeypatch: Any) -> list[list[dict[str, Any]]]:
    """Route every ``litellm.completion`` through the real function with ``mock_response``."""
    from goclaw_llm.plugin import import_litellm

    litellm = import_litellm()
    real = litellm.completion
    calls: list[list[dict[str, Any]]] = []

    def _completion(*args: Any, **kwargs: Any) -> Any:
        calls.append(kwargs["messages"])
        kwargs["mock_response"] = fake_reply(kwargs["messages"])
        return real(*args, **kwargs)

    monkeypatch.setattr(litellm, "completion", _completion)
    return calls


TEST_WORKER = '''
"""A third-party consolidation worker used by the reliability tests."""
import os, time, pathlib
from goclaw import hookimpl


class TestWorker:
    name = "testworker"
    event_types = frozenset({"test.work"})

    def handle(self, event, engine):
        d = pathlib.Path(os.environ["GOCLAW_TW_DIR"])
        with open(d / f"start-{os.getpid()}.log", "a") as fh:
            fh.write(f"{event.id}\\n")
        if os.environ.get("GOCLAW_TW_BLOCK") == "1":
            (d / "blocked").write_text(str(event.id))
            time.sleep(3600)
        time.sleep(float(os.environ.get("GOCLAW_TW_SLEEP", "0")))
        if event.payload.get("poison"):
            raise RuntimeError("poison event")
        with open(d / f"done-{os.getpid()}.log", "a") as fh:
            fh.write(f"{event.id}\\n")


@hookimpl
def goclaw_consolidation_workers():
    return [TestWorker()]
'''


def install_test_worker(root: Path) -> Path:
    """Write the module plus a ``dist-info`` with an entry point in group ``goclaw``."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "goclaw_testworker.py").write_text(textwrap.dedent(TEST_WORKER))
    info = root / "goclaw_testworker-0.1.dist-info"
    info.mkdir(exist_ok=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: goclaw-testworker\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[goclaw]\ntestworker = goclaw_testworker\n")
    return root


def load_test_worker(root: Path) -> Any:
    sys.path.insert(0, str(root))
    try:
        import importlib

        module = importlib.import_module("goclaw_testworker")
        return importlib.reload(module)
    finally:
        sys.path.remove(str(root))


def goclaw_cmd() -> list[str]:
    exe = Path(sys.executable).parent / "goclaw"
    if exe.exists():
        return [str(exe)]
    return [sys.executable, "-c", "from goclaw.cli import main; main()"]


def subprocess_env(plugin_root: Path, work_dir: Path, **extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(plugin_root), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env["GOCLAW_TW_DIR"] = str(work_dir)
    env.pop("GOCLAW_DISABLE_PLUGIN_AUTOLOAD", None)
    env.update(extra)
    return env


def kg_entity(engine: Any, agent: Any, name: str, etype: str, vec: list[float], conf: float = 0.8) -> str:
    """Upsert one KG entity of ``agent`` with an embedding ``vec``; its id."""
    import numpy as np

    def _do(s: Any) -> str:
        row, _ = engine.kg.upsert_entity(
            s,
            agent_id=agent.id,
            user_id="",
            name=name,
            entity_type=etype,
            confidence=conf,
            embedding=(np.asarray(vec, dtype=np.float32), "test", "m", len(vec)),
        )
        return str(row.id)

    return str(engine.db.run_write(_do))


def alice_works_at_acme(
    engine: Any, s: Any, agent_id: str, now: Any, relation_type: str
) -> tuple[Any, Any, Any]:
    """In session ``s``: entities Alice (person, "engineer") and Acme (organization) of the
    agent, and the relation Alice ``relation_type`` Acme, all valid from ``now``; the three rows."""
    kg = engine.kg
    common = {"agent_id": agent_id, "user_id": "", "now": now}
    alice, _ = kg.upsert_entity(s, name="Alice", entity_type="person", description="engineer", **common)
    acme, _ = kg.upsert_entity(s, name="Acme", entity_type="organization", **common)
    rel, _ = kg.upsert_relation(s, source=alice, target=acme, relation_type=relation_type, **common)
    return alice, acme, rel
