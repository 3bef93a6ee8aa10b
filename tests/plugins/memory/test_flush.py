"""Sessions, compaction and the memory flush, which runs before every compaction.

The LLM is litellm with its offline mocking (``mock_response`` / ``mock_tool_calls``), scripted
per call through a stand-in for ``litellm.completion``; never the network.
"""

from __future__ import annotations

import json
import time
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text

from goclaw.errors import GoclawError
from goclaw.tokenizer import CharsTokenizer
from tests.memory_helpers import write

TURNS = [
    ("user", "Hi! My name is Dana and I work on the billing service."),
    ("assistant", "Nice to meet you, Dana."),
    ("user", "We decided to use PostgreSQL 16 for production. I prefer dark mode in every tool."),
    (
        "assistant",
        "Noted. The runbook is at https://wiki.example.com/runbooks/billing and the config "
        "lives in /etc/billing/config.yaml.",
    ),
    ("user", "The migration deadline is 2026-03-01, please remember it."),
    ("assistant", "Got it."),
    ("user", "Thanks, that's all for now."),
    ("assistant", "Bye!"),
]


class Script:
    """Stands in for ``litellm.completion``: each flush call takes the next step."""

    def __init__(self, litellm: Any, steps: list[Any]) -> None:
        self.real = litellm.completion
        self.steps = list(steps)
        self.flush_calls: list[dict[str, Any]] = []
        self.summary_calls = 0

    def __call__(self, **kw: Any) -> Any:
        base = {"model": kw["model"], "messages": kw["messages"]}
        if "tools" not in kw:  # the compaction summary
            self.summary_calls += 1
            return self.real(**base, mock_response="Summary: Dana, billing, PostgreSQL 16.")
        self.flush_calls.append(kw)
        step = self.steps.pop(0) if self.steps else "NO_REPLY"
        if isinstance(step, BaseException):
            raise step
        if isinstance(step, tuple) and step[0] == "sleep":
            time.sleep(step[1])
            return self.real(**base, mock_response="late")
        if isinstance(step, list):
            calls = [
                {
                    "id": f"call_{i}",
                    "type": "function",
                    "function": {"name": name, "arguments": json.dumps(args)},
                }
                for i, (name, args) in enumerate(step)
            ]
            return self.real(**base, tools=kw["tools"], mock_tool_calls=calls)
        return self.real(**base, mock_response=step)


@pytest.fixture(scope="module")
def litellm_module() -> Any:
    from goclaw_embeddings.providers import import_litellm

    return import_litellm()


def _llm_engine(make_engine: Any, timeout: float) -> Any:
    eng = make_engine(
        plugins={
            "llm": {"model": "gpt-4o-mini"},
            "embeddings": {"provider": "none"},
            "memory": {"flush": {"timeout": timeout}},
        }
    )
    eng.agents.create("ada")
    return eng


@pytest.fixture
def llm_engine(make_engine: Any) -> Any:
    """A flush budget no loaded machine reaches: the scripted model answers at once."""
    return _llm_engine(make_engine, 60.0)


@pytest.fixture
def impatient_engine(make_engine: Any) -> Any:
    """A 1 s flush budget, for the model that never answers in time."""
    return _llm_engine(make_engine, 1.0)


def script(monkeypatch: pytest.MonkeyPatch, litellm: Any, steps: list[Any]) -> Script:
    s = Script(litellm, steps)
    monkeypatch.setattr(litellm, "completion", s)
    return s


def record(eng: Any, key: str = "agent:ada:s1", user: str | None = None) -> str:
    for role, content in TURNS:
        eng.sessions.append("ada", key, role, content, user=user)
    return key


def daily(eng: Any, user: str | None = None) -> Path:
    root = Path(eng.agent_dir(eng.agents.get("ada")))
    if user:
        root = root / "users" / user
    # The flush names its file when it starts: a test crossing midnight finds yesterday's.
    today = date.today()
    for day in (today, today - timedelta(days=1)):
        if (root / "memory" / f"{day.isoformat()}.md").exists():
            return root / "memory" / f"{day.isoformat()}.md"
    return root / "memory" / f"{today.isoformat()}.md"


# --------------------------------------------------------------------------- sessions


def test_sessions_record_messages_and_tokens(engine: Any) -> None:
    engine.__dict__["tokenizer"] = CharsTokenizer()  # the ÷ 4 fallback; o200k in test_tokenizer_hook.py
    engine.agents.create("ada")
    engine.agents.create("bob")
    m1 = engine.sessions.append("ada", "k1", "user", "x" * 10)
    m2 = engine.sessions.append("ada", "k1", "assistant", "hello")
    assert (m1.seq, m2.seq) == (1, 2)
    assert (m1.token_count, m2.token_count) == (3, 2)  # ceil(chars / 4)
    assert [m.content for m in engine.sessions.messages("k1")] == ["x" * 10, "hello"]
    assert engine.sessions.tokens("k1") == 5
    row = engine.sessions.get("k1")
    assert row.status == "open" and row.compaction_count == 0 and row.flushed_cycle == -1
    with pytest.raises(GoclawError):
        engine.sessions.append("bob", "k1", "user", "not yours")
    with pytest.raises(GoclawError):
        engine.sessions.append("ada", "k1", "wizard", "bad role")
    with pytest.raises(GoclawError):
        engine.sessions.get("nope")


def test_compaction_without_llm_is_extractive_and_flushes_once(engine: Any) -> None:
    engine.agents.create("ada")
    key = record(engine)
    result = engine.sessions.compact(key, keep_last=2)
    assert result.compacted == len(TURNS) - 2 and result.compaction_count == 1
    assert result.summary_method == "extractive" and "PostgreSQL 16" in result.summary
    assert result.flush is not None and result.flush.method == "fallback"
    assert result.flush.reason.startswith("error")  # no LLM configured
    assert [m.content for m in engine.sessions.messages(key)] == [c for _r, c in TURNS[-2:]]
    assert len(engine.sessions.messages(key, include_compacted=True)) == len(TURNS)
    row = engine.sessions.get(key)
    assert row.summary == result.summary and row.flushed_cycle == 0
    saved = daily(engine).read_text()
    assert "## Extracted Context (auto-saved before compaction)" in saved
    for needle in (
        "PostgreSQL 16",
        "dark mode",
        "https://wiki.example.com/runbooks/billing",
        "/etc/billing/config.yaml",
        "2026-03-01",
        "My name is Dana",
    ):
        assert needle in saved, needle
    # The turns kept verbatim were not part of the flush.
    assert "that's all for now" not in saved
    # Nothing new to compact: a second compaction in this state is a no-op and never flushes.
    again = engine.sessions.compact(key, keep_last=2)
    assert again.compacted == 0 and again.flush is None and again.compaction_count == 1
    # The flushed memory is searchable right away.
    assert engine.memory.search("PostgreSQL", "ada", channel="lexical")[0].path.startswith("memory/")


# --------------------------------------------------------------------------- the LLM loop


def test_flush_llm_success(llm_engine: Any, monkeypatch: pytest.MonkeyPatch, litellm_module: Any) -> None:
    today = date.today().isoformat()
    s = script(
        monkeypatch,
        litellm_module,
        [
            [("read_file", {"path": f"memory/{today}.md"})],
            [
                ("append_file", {"path": f"memory/{today}.md", "content": "- Dana prefers dark mode."}),
                ("append_file", {"path": "MEMORY.md", "content": "- Billing runs PostgreSQL 16."}),
            ],
            "Saved.",
        ],
    )
    key = record(llm_engine)
    result = llm_engine.sessions.compact(key, keep_last=2)
    assert result.flush is not None and result.flush.method == "llm"
    assert result.flush.iterations == 3 and len(s.flush_calls) == 3
    assert set(result.flush.written) == {f"memory/{today}.md", "MEMORY.md"}
    assert daily(llm_engine).read_text() == "- Dana prefers dark mode.\n"
    assert result.summary_method == "llm" and result.summary.startswith("Summary:")
    # Tool results were fed back to the model.
    tool_msgs = [m for m in s.flush_calls[2]["messages"] if m["role"] == "tool"]
    assert [m["content"] for m in tool_msgs][-2:] == [f"ok: memory/{today}.md", "ok: MEMORY.md"]
    assert "Store durable memories" in s.flush_calls[0]["messages"][-1]["content"]
    hits = llm_engine.memory.search("dark mode", "ada", channel="lexical")
    assert hits and hits[0].path == f"memory/{today}.md"


def test_flush_no_reply_falls_back(
    llm_engine: Any, monkeypatch: pytest.MonkeyPatch, litellm_module: Any
) -> None:
    s = script(monkeypatch, litellm_module, ["NO_REPLY"])
    result = llm_engine.sessions.compact(record(llm_engine), keep_last=0)
    assert len(s.flush_calls) == 1
    assert result.flush.method == "fallback" and result.flush.reason == "no_reply"
    assert "PostgreSQL 16" in daily(llm_engine).read_text()


def test_flush_error_falls_back(
    llm_engine: Any, monkeypatch: pytest.MonkeyPatch, litellm_module: Any
) -> None:
    script(monkeypatch, litellm_module, [RuntimeError("rate limited")])
    result = llm_engine.sessions.compact(record(llm_engine), keep_last=0)
    assert result.flush.method == "fallback" and "rate limited" in result.flush.reason
    assert "https://wiki.example.com/runbooks/billing" in daily(llm_engine).read_text()


def test_flush_timeout_falls_back(
    impatient_engine: Any, monkeypatch: pytest.MonkeyPatch, litellm_module: Any
) -> None:
    script(monkeypatch, litellm_module, [("sleep", 3.0)])  # the flush budget is 1 s here
    result = impatient_engine.sessions.compact(record(impatient_engine), keep_last=0)
    assert result.flush.method == "fallback" and result.flush.reason == "timeout"
    assert "2026-03-01" in daily(impatient_engine).read_text()


def test_flush_tools_are_confined(
    llm_engine: Any, monkeypatch: pytest.MonkeyPatch, litellm_module: Any
) -> None:
    root = Path(llm_engine.agent_dir(llm_engine.agents.get("ada")))
    write(root, "SOUL.md", "original soul\n")
    s = script(
        monkeypatch,
        litellm_module,
        [
            [
                ("write_file", {"path": "../SOUL.md", "content": "pwned"}),
                ("write_file", {"path": "SOUL.md", "content": "pwned"}),
                ("append_file", {"path": "/tmp/evil.md", "content": "pwned"}),
            ],
            "done",
        ],
    )
    result = llm_engine.sessions.compact(record(llm_engine), keep_last=0)
    assert (root / "SOUL.md").read_text() == "original soul\n"
    results = [m["content"] for m in s.flush_calls[1]["messages"] if m["role"] == "tool"]
    assert len(results) == 3 and all(r.startswith("error") for r in results)
    assert result.flush.method == "fallback" and result.flush.reason == "nothing_written"


def test_flush_runs_once_per_cycle(
    llm_engine: Any, monkeypatch: pytest.MonkeyPatch, litellm_module: Any
) -> None:
    today = date.today().isoformat()
    append = [("append_file", {"path": f"memory/{today}.md", "content": "- cycle note"})]
    s = script(monkeypatch, litellm_module, [append, "ok", append, "ok"])
    key = record(llm_engine)
    first = llm_engine.sessions.flush(key)  # at the threshold
    assert first is not None and first.method == "llm" and len(s.flush_calls) == 2
    assert llm_engine.sessions.flush(key) is None  # same cycle: not again
    compaction = llm_engine.sessions.compact(key, keep_last=2)  # same cycle: no second flush
    assert compaction.flush is None and compaction.compaction_count == 1
    assert len(s.flush_calls) == 2
    # The next cycle flushes again before its compaction.
    for role, content in TURNS[:4]:
        llm_engine.sessions.append("ada", key, role, content)
    nxt = llm_engine.sessions.compact(key, keep_last=2)
    assert nxt.flush is not None and nxt.flush.method == "llm" and nxt.compaction_count == 2
    assert len(s.flush_calls) == 4
    assert daily(llm_engine).read_text().count("- cycle note") == 2


def test_maintain_applies_thresholds(make_engine: Any) -> None:
    eng = make_engine(
        plugins={
            "embeddings": {"provider": "none"},
            "memory": {
                "context_window": 200,
                "max_history_share": 0.5,
                "keep_last": 1,
                "flush": {"reserve_tokens_floor": 50, "soft_threshold_tokens": 50},
            },
        }
    )
    eng.agents.create("ada")
    eng.sessions.append("ada", "k", "user", "I prefer tea. " * 10)  # 35 tokens
    out = eng.sessions.maintain("k")
    assert out["flush"] is None and out["compaction"] is None
    eng.sessions.append("ada", "k", "user", "We decided to ship on Friday. " * 10)  # +75 → 110
    out = eng.sessions.maintain("k")
    assert out["flush"] is not None and out["flush"].method == "fallback"  # ≥ 100
    assert out["compaction"] is not None and out["compaction"].flush is None  # > 100, flushed already
    assert eng.sessions.get("k").compaction_count == 1


def test_user_session_flushes_to_user_memory(engine: Any) -> None:
    engine.agents.create("ada")
    key = record(engine, "agent:ada:u7", user="u7")
    engine.sessions.compact(key, keep_last=0)
    assert "PostgreSQL 16" in daily(engine, "u7").read_text()
    assert not daily(engine).exists()
    hits = engine.memory.search("PostgreSQL", "ada", "u7", channel="lexical")
    assert hits and hits[0].scope == "user"
    assert engine.memory.search("PostgreSQL", "ada", channel="lexical") == []


def test_end_publishes_run_completed(engine: Any) -> None:
    engine.agents.create("ada")
    key = record(engine)
    engine.sessions.compact(key, keep_last=2)
    row = engine.sessions.end(key)
    assert row.status == "ended"
    if not engine.has_service("events"):
        pytest.skip("no events service in this build")
    with engine.db.engine.connect() as conn:
        events = conn.execute(
            text("SELECT event_type, agent_id, payload FROM events WHERE event_type = 'run.completed'")
        ).all()
    assert len(events) == 1
    payload = events[0][2] if isinstance(events[0][2], dict) else json.loads(events[0][2])
    assert payload["session_key"] == key and payload["compaction_count"] == 1
    assert payload["agent_id"] == engine.agents.get("ada").id and events[0][1] == payload["agent_id"]
    assert "PostgreSQL 16" in payload["summary"]


def test_extracted_paths_leave_the_sentences_full_stop() -> None:
    from types import SimpleNamespace

    from goclaw_memory.flush import extract_memories

    said = "The config lives in /etc/goclaw/app.toml. Logs go to ~/logs/run.log. See docs/setup.md."
    found = extract_memories([SimpleNamespace(role="user", content=said)])
    assert found["Paths"] == ["/etc/goclaw/app.toml", "~/logs/run.log", "docs/setup.md"]
