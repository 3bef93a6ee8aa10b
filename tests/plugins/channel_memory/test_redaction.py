"""Passive channel memory and redaction: realistic secrets never reach the database."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text

from goclaw.events import WorkerRunner
from goclaw_text.redaction import iban_valid, luhn_valid, redact
from tests.helpers import run_cli

# Realistic-looking (fake) secrets of the common formats.
SECRETS = {
    "openai": "sk-proj-Xq3vT9bLm2Rk8Yp4Wn6Zs1Hd5Jf7Gc0Av2Bx4Ny6Mu8Qe",
    "openai_legacy": "sk-4f9KQ2mX8vB3nR7tL1pZ6wY0cJ5hD9gF2sA8eU3iO",
    "anthropic": "sk-ant-api03-Hk2Lm9Nq4Rs7Tv1Wx5Yz8Ab3Cd6Ef0Gh2Ij4Kl",
    "aws_access": "AKIAIOSFODNN7EXAMPLE",
    "aws_secret": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "github": "ghp_16C7e42F292c6912E7710c838347Ae178B4a",
    "github_pat": "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuv",
    "slack": "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
    "stripe": "sk_live_51HxYzAbCdEfGhIjKlMnOpQr",
    "google": "AIzaSyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY",
    "jwt": "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4ifQ."
    "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c",
    "pg_password": "Sup3rS3cret!",
    "mysql_password": "hunter2hunter2",
    "ado_password": "P@ssw0rd2024",
    "card_visa": "4111 1111 1111 1111",
    "card_amex": "378282246310005",
    "card_dashed": "5555-5555-5555-4444",
    "email": "jane.doe+billing@example.com",
    "phone_us": "+1 (415) 555-0132",
    "phone_uk": "+44 20 7946 0958",
    "phone_local": "415-555-0199",
    "iban": "DE89 3704 0044 0532 0130 00",
    "excluded": "PROJECT-NIGHTJAR",
}

MESSAGES = [
    {
        "user": "dev1",
        "text": f"Use {SECRETS['openai']} for the staging bot, legacy {SECRETS['openai_legacy']}.",
    },
    {
        "user": "dev2",
        "text": f"Claude key {SECRETS['anthropic']} and AWS {SECRETS['aws_access']} "
        f"aws_secret_access_key={SECRETS['aws_secret']}",
    },
    {
        "user": "dev1",
        "text": f"CI token {SECRETS['github']} / {SECRETS['github_pat']}; slack {SECRETS['slack']}",
    },
    {
        "user": "ops",
        "text": f"Billing via {SECRETS['stripe']}, maps key {SECRETS['google']}, "
        f"Authorization: Bearer {SECRETS['jwt']}",
    },
    {
        "user": "ops",
        "text": f"DB is postgresql://app:{SECRETS['pg_password']}@db.internal:5432/prod and "
        f"mysql://root:{SECRETS['mysql_password']}@10.0.0.5/shop, "
        f"Server=sql1;User Id=sa;Password={SECRETS['ado_password']};",
    },
    {
        "user": "finance",
        "text": f"Test cards {SECRETS['card_visa']}, {SECRETS['card_amex']}, "
        f"{SECRETS['card_dashed']}; refund to {SECRETS['iban']}.",
    },
    {
        "user": "sales",
        "text": f"Email {SECRETS['email']} or call {SECRETS['phone_us']}, "
        f"{SECRETS['phone_uk']} or {SECRETS['phone_local']}. Ship on Friday.",
    },
    {
        "user": "sales",
        "text": f"Codename {SECRETS['excluded']} stays internal. We agreed to launch Project Kite.",
    },
    {"user": "mallory", "text": "My private number is 555-867-5309, remember it."},
]


def test_helpers_checksums() -> None:
    assert luhn_valid("4111111111111111") and not luhn_valid("4111111111111112")
    assert iban_valid("DE89 3704 0044 0532 0130 00") and not iban_valid("DE89 3704 0044 0532 0130 01")


# Passwords and AWS secret keys carry no marker of their own: they are found by context.
IN_CONTEXT = {
    "aws_secret": "AWS_SECRET_ACCESS_KEY={}",
    "pg_password": "postgres://admin:{}@db.example.com/app",
    "mysql_password": "password: {}",
    "ado_password": "Data Source=x;Pwd={};",
}


@pytest.mark.parametrize("name", sorted(set(SECRETS) - {"excluded"}))
def test_each_secret_is_redacted(name: str) -> None:
    template = IN_CONTEXT.get(name, "value: {} end")
    out = redact(template.format(SECRETS[name]))
    assert SECRETS[name] not in out and "[REDACTED:" in out


def test_innocent_text_survives() -> None:
    text = (
        "Release 1.2.3 ships 2026-03-14 10:30 from 192.168.1.10; order #12345 costs $1,299.99; "
        "card ending 4242; call me maybe."
    )
    assert redact(text) == text
    assert redact("Not a card: 4111 1111 1111 1112") == "Not a card: 4111 1111 1111 1112"  # Luhn fails


def _all_text(engine: Any) -> str:
    """Every text-ish column of every table the feature writes to."""
    chunks: list[str] = []
    with engine.db.session() as s:
        for table in (
            "channel_memory_extraction_items",
            "episodic_summaries",
            "kg_entities",
            "kg_relations",
            "events",
            "event_deliveries",
            "worker_state",
        ):
            for row in s.execute(text(f"SELECT * FROM {table}")).mappings():
                chunks.extend(str(v) for k, v in row.items() if k != "embedding")
    return "\n".join(chunks)


def test_channel_memory_end_to_end_stores_no_secret(
    engine: Any, workspace: Path, database_url: str | None
) -> None:
    engine.agents.create("ada")
    channel = engine.service("channel_memory")
    # off by default: nothing is recorded at all
    assert channel.ingest("ada", "#eng", MESSAGES) == []
    res = run_cli(
        [
            "channel-memory",
            "enable",
            "--agent",
            "ada",
            "--channel",
            "#eng",
            "--exclude-user",
            "mallory",
            "--exclude-pattern",
            r"PROJECT-[A-Z]+",
            "--json",
        ],
        workspace=workspace,
        database_url=database_url,
    )
    assert res.code == 0, res.err
    items = channel.ingest("ada", "#eng", MESSAGES)
    assert len(items) == 1 and items[0]["status"] == "pending"
    assert "Project Kite" in items[0]["content"] and "[REDACTED:" in items[0]["content"]
    approved = channel.approve(items[0]["id"])
    assert approved["status"] == "approved" and approved["episodic_id"]
    ep = engine.service("episodic").get(approved["episodic_id"])
    assert ep.source_type == "channel"
    WorkerRunner(engine).run_once()  # semantic + dedup + dreaming run on the same path
    stored = _all_text(engine)
    assert "Project Kite" in stored  # the useful part was remembered
    for name, secret in SECRETS.items():
        assert secret not in stored, f"{name} leaked into the database"
    assert "867-5309" not in stored  # the excluded user's message was dropped entirely
    listed = json.loads(
        run_cli(
            ["channel-memory", "list", "--agent", "ada", "--json"],
            workspace=workspace,
            database_url=database_url,
        ).out
    )
    assert [i["status"] for i in listed] == ["approved"]


def test_channel_memory_with_mocked_llm_redacts_before_and_after(
    make_engine: Any, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.consolidation_helpers import mock_litellm

    calls = mock_litellm(monkeypatch)
    engine = make_engine(plugins={"llm": {"model": "gpt-4o-mini"}})
    engine.agents.create("ada")
    engine.service("channel_memory").configure("ada", "#ops", enabled=True, auto_approve=True)
    items = engine.service("channel_memory").ingest("ada", "#ops", MESSAGES)
    assert items and items[0]["status"] == "approved"
    sent = json.dumps(calls)
    for name, secret in SECRETS.items():
        if name != "excluded":
            assert secret not in sent, f"{name} was sent to the model"
    stored = _all_text(engine)
    for secret in SECRETS.values():
        if secret != SECRETS["excluded"]:
            assert secret not in stored


def test_channel_memory_review_is_once_per_item(engine: Any) -> None:
    """Approve and reject share one check: an unknown item is "unknown", a reviewed one
    cannot be reviewed again (either way), and a rejected item never reaches episodic memory."""
    from goclaw.errors import NotFoundError, ValidationError

    engine.agents.create("ada")
    channel = engine.service("channel_memory")
    channel.configure("ada", "#eng", enabled=True)
    first, second = (channel.ingest("ada", "#eng", [{"user": "bob", "text": t}])[0] for t in _TWO_FACTS)
    with pytest.raises(NotFoundError, match="unknown channel memory item 999999"):
        channel.reject(999999)
    with pytest.raises(NotFoundError, match="unknown channel memory item 999999"):
        channel.approve(999999)
    rejected = channel.reject(first["id"])
    assert rejected["status"] == "rejected" and rejected["episodic_id"] is None
    approved = channel.approve(second["id"])
    assert approved["status"] == "approved" and approved["episodic_id"]
    for review, item, status in (
        (channel.approve, first, "rejected"),
        (channel.reject, first, "rejected"),
        (channel.approve, second, "approved"),
        (channel.reject, second, "approved"),
    ):
        with pytest.raises(ValidationError, match=f"item {item['id']} is already {status}"):
            review(item["id"])
    assert [e.source_id for e in engine.service("episodic").list(engine.agents.get("ada").id)] == [
        f"channel:#eng:{second['id']}"
    ]


_TWO_FACTS = (
    "We decided the Atlas launch moves to the first week of June.",
    "Carol prefers design reviews on Thursday mornings.",
)


SESSION_SECRETS = ("Tr0ub4dor&3xyz", "bAArqH92FN3HIeBR")


def test_session_secrets_never_reach_summaries_topics_or_the_graph(workspace: Path) -> None:
    """Names and topics come from text redacted in context: a password said in passing is a
    secret only beside "my password is", so redacting the extracted fragment alone misses it."""
    run_cli(["init"], workspace=workspace)
    run_cli(["agent", "create", "ops"], workspace=workspace)
    said = (
        "btw my password is Tr0ub4dor&3xyz and the db is redis://:bAArqH92FN3HIeBR@cache:6379/0. "
        "Project Atlas ships on Friday with Maria Lopez."
    )
    for role, text_ in (("user", said), ("assistant", "Noted, I will remember the Atlas date.")):
        res = run_cli(
            ["session", "append", "--agent", "ops", "--key", "s1", "--role", role, text_],
            workspace=workspace,
        )
        assert res.code == 0, res.err
    assert run_cli(["session", "end", "--key", "s1"], workspace=workspace).code == 0
    assert run_cli(["workers", "run", "--once"], workspace=workspace).code == 0

    from goclaw import Engine

    with Engine.open(workspace) as eng:
        stored = _all_text(eng) if eng.has_service("channel_memory") else ""
        with eng.db.session() as s:
            summaries = [dict(r) for r in s.execute(text("SELECT * FROM episodic_summaries")).mappings()]
            names = list(s.execute(text("SELECT name FROM kg_entities")).scalars())
    assert summaries, "the session was consolidated"
    everything = stored + json.dumps(summaries, default=str) + json.dumps(names)
    for secret in SESSION_SECRETS:
        assert secret not in everything
    assert not [n for n in names if "REDACTED" in n]
    assert any("Atlas" in s["summary"] for s in summaries), "the rest of the session is kept"
    for query in SESSION_SECRETS:
        res = run_cli(["memory", "search", "--agent", "ops", "--json", query], workspace=workspace)
        assert res.code == 0, res.err
        assert query not in res.out
