"""The memory flush before compaction.

The agent gets one chance per compaction cycle to write durable memories to disk: an LLM loop
(at most 5 iterations and 90 s in total) with ``read_file`` / ``write_file`` / ``append_file``
tools confined to the session scope's memory files (``MEMORY.md``, ``memory/**/*.md``). When
the model fails, times out, answers ``NO_REPLY`` or writes nothing, an extractive fallback saves
the decisions, preferences, facts, URLs, paths and dates of the turns being compacted to
``memory/YYYY-MM-DD.md`` (appended atomically), so a flush always ends in durable memory when
there was anything to keep. Everything written, by the model or the fallback, goes through the
engine's redactor first (:mod:`goclaw_text.redaction`). Written files are re-indexed
at once.
"""

from __future__ import annotations

import json
import logging
import re
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from goclaw.contracts.providers import ToolCallingLLMProvider
from goclaw.errors import GoclawError
from goclaw_memory.paths import atomic_write, writable_memory_path
from goclaw_text.redaction import redactor_of

if TYPE_CHECKING:
    from goclaw.contracts.host import Host
    from goclaw.contracts.store import Agent
    from goclaw_memory.settings import FlushSettings

log = logging.getLogger(__name__)

NO_REPLY = "NO_REPLY"
FLUSH_SYSTEM = (
    "You are saving long-term memory for an AI agent before its conversation history is "
    "compacted. Use the file tools to append durable facts to memory files. Paths are relative "
    "to the memory folder: MEMORY.md or memory/<name>.md."
)
_LOCKS: dict[str, threading.Lock] = {}
_LOCKS_GUARD = threading.Lock()


@dataclass
class FlushResult:
    ran: bool
    method: str = "none"  # llm | fallback | none
    reason: str = ""  # why the fallback ran (error, timeout, no_reply, nothing_written)
    written: list[str] = field(default_factory=list)
    iterations: int = 0


# --------------------------------------------------------------------------- file tools


def _file_lock(path: Path) -> threading.Lock:
    with _LOCKS_GUARD:
        return _LOCKS.setdefault(str(path), threading.Lock())


def append_text(path: Path, block: str) -> None:
    """Append ``block`` atomically (read + temp file + ``os.replace``; one writer per file)."""
    with _file_lock(path):
        old = path.read_text(encoding="utf-8") if path.exists() else ""
        if old and not old.endswith("\n"):
            old += "\n"
        sep = "\n" if old else ""  # a blank line between entries
        atomic_write(path, old + sep + block.rstrip("\n") + "\n")


class FlushTools:
    """``read_file`` / ``write_file`` / ``append_file`` confined to one scope's memory files."""

    SPECS: tuple[dict[str, Any], ...] = (
        {
            "type": "function",
            "function": {
                "name": "read_file",
                "description": "Read a memory file (MEMORY.md or memory/<name>.md).",
                "parameters": {
                    "type": "object",
                    "properties": {"path": {"type": "string"}},
                    "required": ["path"],
                },
            },
        },
        {
            "type": "function",
            "function": {
                "name": "write_file",
                "description": "Replace a memory file's whole content.",
                "parameters": {
                    "type": "object",
                    "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
                    "required": ["path", "content"],
                },
            },
        },
        {
            "type": "function",
            "function": {
                "name": "append_file",
                "description": "Append text to a memory file (created if missing).",
                "parameters": {
                    "type": "object",
                    "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
                    "required": ["path", "content"],
                },
            },
        },
    )

    def __init__(self, agent_dir: Path, user_id: str, redact: Callable[[str], str] | None = None) -> None:
        self.agent_dir = agent_dir
        self.user_id = user_id
        self.redact: Callable[[str], str] = redact or (lambda text: text)
        self.written: list[str] = []

    def call(self, name: str, arguments: str | dict[str, Any]) -> str:
        try:
            args = json.loads(arguments) if isinstance(arguments, str) else dict(arguments or {})
            path = str(args.get("path", ""))
            rel, abs_path = writable_memory_path(self.agent_dir, self.user_id, path)
            if name == "read_file":
                return abs_path.read_text(encoding="utf-8") if abs_path.exists() else "(file does not exist)"
            content = self.redact(str(args.get("content", "")))
            if name == "write_file":
                if not content.strip():
                    return "error: refusing to write an empty memory file"
                with _file_lock(abs_path):
                    atomic_write(abs_path, content if content.endswith("\n") else content + "\n")
            elif name == "append_file":
                if not content.strip():
                    return "error: nothing to append"
                append_text(abs_path, content)
            else:
                return f"error: unknown tool {name!r}"
            self.written.append(rel)
            return f"ok: {rel}"
        except (GoclawError, OSError, ValueError) as exc:
            return f"error: {exc}"


# --------------------------------------------------------------------------- the LLM loop


class _Timeout(Exception):
    pass


def _call_with_deadline(fn: Callable[[], Any], seconds: float) -> Any:
    """Run ``fn`` in a daemon thread; raise :class:`_Timeout` after ``seconds``."""
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:
            box["error"] = exc

    thread = threading.Thread(target=run, name="goclaw-memory-flush", daemon=True)
    thread.start()
    thread.join(max(0.0, seconds))
    if thread.is_alive():
        raise _Timeout()
    if "error" in box:
        raise box["error"]
    return box.get("value")


def _transcript(messages: Sequence[Any], summary: str, limit: int) -> str:
    parts: list[str] = []
    if summary:
        parts.append(f"[Previous conversation summary]\n{summary}")
    for m in list(messages)[-limit:]:
        parts.append(f"{m.role}: {m.content}")
    return "\n\n".join(parts)


def _llm_loop(
    engine: Host, tools: FlushTools, prompt: str, transcript: str, cfg: FlushSettings
) -> tuple[str, int]:
    """Run the tool loop; returns (outcome, iterations). Outcome: done | no_reply | error:... | timeout."""
    llm = engine.llm()
    if llm is None:
        return "error: no LLM configured", 0
    deadline = time.monotonic() + cfg.timeout
    user_msg = f"{transcript}\n\n{prompt}" if transcript else prompt
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": FLUSH_SYSTEM},
        {"role": "user", "content": user_msg},
    ]
    if not isinstance(llm, ToolCallingLLMProvider):
        # A provider without tool calling: one plain completion whose answer is the memory text.
        try:
            answer = _call_with_deadline(
                lambda: llm.complete(messages, timeout=cfg.timeout), deadline - time.monotonic()
            )
        except _Timeout:
            return "timeout", 1
        except Exception as exc:
            return f"error: {type(exc).__name__}: {exc}", 1
        text = str(answer or "").strip()
        if not text or NO_REPLY in text:
            return "no_reply", 1
        tools.call("append_file", {"path": f"memory/{datetime.now().date().isoformat()}.md", "content": text})
        return "done", 1

    # The tool loop runs through the provider contract (goclaw.contracts.providers), so
    # any provider that implements chat() gets the full flush.
    iterations = 0
    for _ in range(cfg.max_iterations):
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return "timeout", iterations
        iterations += 1
        snapshot = list(messages)
        try:
            msg = _call_with_deadline(
                lambda snapshot=snapshot, remaining=remaining: llm.chat(
                    snapshot, tools=list(FlushTools.SPECS), timeout=remaining
                ),
                remaining,
            )
        except _Timeout:
            return "timeout", iterations
        except Exception as exc:
            return f"error: {type(exc).__name__}: {' '.join(str(exc).split())[:200]}", iterations
        if not msg.tool_calls:
            return ("no_reply" if NO_REPLY in msg.content else "done"), iterations
        messages.append(msg.as_dict())
        for c in msg.tool_calls:
            result = tools.call(c.name, c.arguments)
            messages.append({"role": "tool", "tool_call_id": c.id, "content": result})
    return "done", iterations


# --------------------------------------------------------------------------- extractive fallback

_CATEGORIES: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "Decisions",
        re.compile(
            r"\b(decided|decide|decision|we will|we'll|let's|agreed|agree|going with|go with|chose|"
            r"choose|settled on|the plan is|will use|switch(?:ed)? to)\b",
            re.I,
        ),
    ),
    (
        "Preferences",
        re.compile(
            r"\b(prefer|prefers|preferred|preference|i like|i love|i hate|i don't like|i dislike|"
            r"favou?rite|always|never|rather)\b",
            re.I,
        ),
    ),
    (
        "Facts",
        re.compile(
            r"\b(my name is|i am|i'm|i work|we use|is called|is named|lives? in|located in|remember|"
            r"note that|important|deadline|due|version|runs on|password|account|address|phone|email)\b",
            re.I,
        ),
    ),
)
URL_RE = re.compile(r"https?://[^\s<>()\"'`]+[^\s<>()\"'`.,;:!?]")
PATH_RE = re.compile(
    r"(?<![\w:/.])(?:~|\.{1,2})?/(?:[\w.\-]+/)*[\w.\-]+|(?<![\w/.])[\w\-]+(?:/[\w.\-]+)+\.\w{1,8}\b"
)
_MONTHS = r"(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.?"
DATE_RE = re.compile(
    rf"\b\d{{4}}-\d{{2}}-\d{{2}}\b|\b\d{{1,2}}/\d{{1,2}}/\d{{2,4}}\b|\b{_MONTHS} \d{{1,2}}(?:st|nd|rd|th)?"
    rf"(?:,? \d{{4}})?\b|\b\d{{1,2}}(?:st|nd|rd|th)? {_MONTHS}(?: \d{{4}})?\b|"
    r"\b(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday|tomorrow|next week|next month)\b",
    re.I,
)
_SENTENCE_RE = re.compile(r"(?<=[.!?])\s+|\n+")


def extract_memories(messages: Sequence[Any]) -> dict[str, list[str]]:
    """Decisions, preferences, facts, URLs, paths and dates found in the turns (deterministic)."""
    found: dict[str, list[str]] = {
        "Decisions": [],
        "Preferences": [],
        "Facts": [],
        "URLs": [],
        "Paths": [],
        "Dates": [],
    }

    def add(kind: str, value: str) -> None:
        value = value.strip()
        if value and value not in found[kind] and len(found[kind]) < 25:
            found[kind].append(value[:300])

    for m in messages:
        if m.role not in ("user", "assistant"):
            continue
        content = str(m.content or "")
        for url in URL_RE.findall(content):
            add("URLs", url)
        no_urls = URL_RE.sub(" ", content)
        for path in PATH_RE.findall(no_urls):
            path = path.rstrip(".")  # the sentence's full stop ("... in /etc/app.conf.")
            if len(path) > 2:
                add("Paths", path)
        for sentence in _SENTENCE_RE.split(content):
            s = " ".join(sentence.split())
            if len(s) < 4:
                continue
            for kind, pattern in _CATEGORIES:
                if pattern.search(s):
                    add(kind, f"{m.role}: {s}")
                    break
            if DATE_RE.search(URL_RE.sub(" ", s)):
                add("Dates", f"{m.role}: {s}")
    return {k: v for k, v in found.items() if v}


def fallback_block(found: dict[str, list[str]], session_key: str, now: datetime) -> str:
    lines = [
        "## Extracted Context (auto-saved before compaction)",
        f"_session {session_key}, {now.isoformat(timespec='seconds')}_",
    ]
    for kind, items in found.items():
        lines += ["", f"### {kind}", *(f"- {item}" for item in items)]
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- entry point


def run_flush(
    engine: Host,
    agent: Agent,
    user_id: str,
    session_key: str,
    messages: Sequence[Any],
    summary: str,
    cfg: FlushSettings,
    *,
    now: datetime | None = None,
) -> FlushResult:
    """One memory flush for these turns (the caller enforces once per cycle)."""
    now = now or datetime.now().astimezone()
    agent_dir = engine.agent_dir(agent)
    redactor = redactor_of(engine)
    tools = FlushTools(agent_dir, user_id, redactor.redact)
    today = now.date().isoformat()
    prompt = cfg.prompt.replace("YYYY-MM-DD", today)
    outcome, iterations = _llm_loop(
        engine, tools, prompt, _transcript(messages, summary, cfg.recent_messages), cfg
    )
    result = FlushResult(ran=True, iterations=iterations)
    if tools.written:
        result.method = "llm"
        result.written = list(dict.fromkeys(tools.written))
        if outcome != "done":
            result.reason = outcome
    else:
        result.reason = outcome if outcome != "done" else "nothing_written"
        found = extract_memories(messages)
        if found:
            rel, abs_path = writable_memory_path(agent_dir, user_id, f"memory/{today}.md")
            append_text(abs_path, redactor.redact(fallback_block(found, session_key, now)))
            result.method = "fallback"
            result.written = [rel]
    if result.written:
        try:
            engine.memory.index(agent, scopes=[user_id])
        except Exception:  # the files are safe on disk; the next index run picks them up
            log.warning("re-index after the memory flush failed", exc_info=True)
    return result
