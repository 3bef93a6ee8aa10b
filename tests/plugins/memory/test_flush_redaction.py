"""Secrets from a conversation never reach memory files, the index, the session
summary or the episodic tables, whether the flush runs the model (litellm ``mock_response`` /
``mock_tool_calls``) or the extractive fallback (no LLM)."""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text

from goclaw.events import WorkerRunner

DB_PASSWORD = "Pr0d-Passw0rd-9931"
OPENAI_KEY = "sk-proj-Qm7Xv2Lk9Bn4Rt8Wy1Zc6Hd3Jf5Gp0Sa2Ke4Nu6Mi8Oq"
AZURE_KEY = "Zx8Kq2Lm4Np6Rs8Tv0Wx2Yz4Ab6Cd8Ef0Gh2Ij4Kl6Mn8Op0Qr2St4Uv6Wx8Yz0Ab2Cd4Ef6Gh8Ij0Kl2Mn4Op6Q=="
REPLICA_PASSWORD = "Rep1ica!Secret"
SECRETS = (DB_PASSWORD, OPENAI_KEY, AZURE_KEY, REPLICA_PASSWORD)
# Fragments a partial redaction would leave behind.
FRAGMENTS = ("Passw0rd-9931", OPENAI_KEY[8:30], AZURE_KEY[:30], "Rep1ica!")

TURNS = [
    (
        "user",
        f"The prod database is postgresql://billing:{DB_PASSWORD}@db.internal:5432/billing, "
        "please remember it.",
    ),
    ("assistant", "Noted, I will remember the database URL."),
    (
        "user",
        f"My OpenAI key is {OPENAI_KEY} and we decided to keep backups in Azure: "
        "DefaultEndpointsProtocol=https;AccountName=acmebackups;"
        f"AccountKey={AZURE_KEY};EndpointSuffix=core.windows.net",
    ),
    ("assistant", "Got it, we decided on Azure blob storage for the backups."),
    ("user", f"Important: the reporting replica password is {REPLICA_PASSWORD} and it runs on port 6432."),
    ("assistant", "Understood."),
    ("user", "Thanks!"),
    ("assistant", "Bye!"),
]


def _record(eng: Any, key: str) -> None:
    for role, content in TURNS:
        eng.sessions.append("ada", key, role, content, user="dana")


def _assert_clean(where: str, value: str) -> None:
    for secret in SECRETS + FRAGMENTS:
        assert secret not in value, f"{secret!r} leaked into {where}"


def _check_everything(eng: Any, key: str) -> None:
    root = Path(eng.agent_dir(eng.agents.get("ada")))
    files = sorted((root / "users" / "dana").rglob("*.md"))
    assert files, "the flush wrote nothing"
    for f in files:
        _assert_clean(str(f), f.read_text(encoding="utf-8"))
    assert "[REDACTED:" in "".join(f.read_text(encoding="utf-8") for f in files)
    for query in (
        "database password postgresql",
        "OpenAI key sk-proj",
        "Azure AccountKey backups",
        "replica",
    ):
        for hit in eng.memory.search(query, "ada", "dana", channel="lexical"):
            _assert_clean(f"memory search hit {hit.path}", json.dumps(hit.__dict__, default=str))
    _assert_clean("the session summary", eng.sessions.get(key).summary)
    eng.sessions.end(key)
    WorkerRunner(eng).run_once()
    with eng.db.session() as s:
        for table in ("memory_chunks", "episodic_summaries", "kg_entities", "events", "sessions"):
            rows = s.execute(text(f"SELECT * FROM {table}")).mappings().all()
            _assert_clean(table, "\n".join(str(v) for r in rows for k, v in r.items() if k != "embedding"))
    episodes = eng.service("episodic").list(eng.agents.get("ada").id, "dana")
    assert episodes, "no episodic summary was written"


@pytest.fixture(scope="module")
def litellm_module() -> Any:
    from goclaw_embeddings.providers import import_litellm

    return import_litellm()


def test_flush_with_llm_never_writes_secrets(
    make_engine: Any, monkeypatch: pytest.MonkeyPatch, litellm_module: Any
) -> None:
    eng = make_engine(
        plugins={
            "llm": {"model": "gpt-4o-mini"},
            "embeddings": {"provider": "none"},
            "memory": {"flush": {"timeout": 30.0}},
        }
    )
    eng.agents.create("ada")
    real = litellm_module.completion
    today = date.today().isoformat()
    echo = " ".join(content for _role, content in TURNS)  # a model that copies everything

    def completion(**kw: Any) -> Any:
        base = {"model": kw["model"], "messages": kw["messages"]}
        if "tools" in kw and not any(m["role"] == "tool" for m in kw["messages"]):
            calls = [
                {
                    "id": "call_0",
                    "type": "function",
                    "function": {
                        "name": "append_file",
                        "arguments": json.dumps({"path": f"memory/{today}.md", "content": f"- {echo}"}),
                    },
                },
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {
                        "name": "write_file",
                        "arguments": json.dumps({"path": "MEMORY.md", "content": f"# Facts\n- {echo}\n"}),
                    },
                },
            ]
            return real(**base, tools=kw["tools"], mock_tool_calls=calls)
        if "tools" in kw:
            return real(**base, mock_response="Saved.")
        return real(**base, mock_response=f"Summary: {echo}")  # summaries and extraction echo too

    monkeypatch.setattr(litellm_module, "completion", completion)
    key = "agent:ada:redaction-llm"
    _record(eng, key)
    result = eng.sessions.compact(key, keep_last=2)
    assert result.flush is not None and result.flush.method == "llm", result.flush
    assert result.summary_method == "llm"
    _check_everything(eng, key)


def test_flush_fallback_without_llm_never_writes_secrets(make_engine: Any) -> None:
    eng = make_engine(plugins={"embeddings": {"provider": "none"}})
    eng.agents.create("ada")
    key = "agent:ada:redaction-fallback"
    _record(eng, key)
    result = eng.sessions.compact(key, keep_last=2)
    assert result.flush is not None and result.flush.method == "fallback"
    assert result.summary_method == "extractive"
    # the useful, non-secret facts survived
    # the daily file (dated when the flush started: a run crossing midnight has yesterday's)
    saved = next(Path(eng.agent_dir(eng.agents.get("ada"))).rglob("memory/20??-??-??.md"))
    assert "db.internal:5432/billing" in saved.read_text() and "port 6432" in saved.read_text()
    _check_everything(eng, key)


def test_memory_add_is_redacted(engine: Any) -> None:
    engine.agents.create("ada")
    entry = engine.memory.writer.add("ada", f"deploy key {OPENAI_KEY}; db password: {DB_PASSWORD}", "dana")
    root = Path(engine.agent_dir(engine.agents.get("ada")))
    stored = "".join(f.read_text() for f in root.rglob("*.md"))
    _assert_clean("memory add", stored + json.dumps(getattr(entry, "__dict__", {}), default=str))
    assert "[REDACTED:openai_key]" in stored


def test_kg_supersede_is_redacted(engine: Any) -> None:
    agent = engine.agents.create("ada")

    def _do(s: Any) -> str:
        row, _ = engine.kg.upsert_entity(
            s, agent_id=agent.id, user_id="", name="Billing DB", entity_type="system"
        )
        return str(row.id)

    entity_id = engine.db.run_write(_do)
    new = engine.kg.supersede_entity(
        entity_id, description=f"prod URL postgresql://app:{DB_PASSWORD}@db:5432/x"
    )
    _assert_clean("a superseded KG entity", new.description)
    assert "[REDACTED:credentials]" in new.description
