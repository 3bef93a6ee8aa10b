"""Question files of the memory evaluation harness (:mod:`goclaw_memory.evaluation`, whose
docstring describes the format): JSONL, one labelled question a line, read into
:class:`Question` objects with errors that name the file and line."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from goclaw.errors import ValidationError

# "partial" (some of the evidence's keywords) is what benchmarks/synth_memory.py asks besides
# exact keywords and paraphrases.
KINDS = ("exact-code", "partial", "paraphrase", "temporal", "multi-hop", "preference", "unanswerable")


class QuestionsError(ValidationError):
    """A malformed question file; the message names the file and line."""


@dataclass(frozen=True)
class Expect:
    """One piece of expected evidence."""

    path: str | None = None
    lines: tuple[int, int] | None = None
    text: str | None = None
    any_of: tuple[Expect, ...] = ()  # {"any": [...]}: the same evidence written in several places

    def as_json(self) -> dict[str, Any]:
        if self.any_of:
            return {"any": [e.as_json() for e in self.any_of]}
        out: dict[str, Any] = {}
        if self.path is not None:
            out["path"] = self.path
        if self.lines is not None:
            out["lines"] = list(self.lines)
        if self.text is not None:
            out["text"] = self.text
        return out


@dataclass(frozen=True)
class Question:
    id: str
    question: str
    agent: str
    kind: str
    user: str | None = None
    expect: tuple[Expect, ...] = ()
    source: str = ""  # "file:line" it was read from, for error messages

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id, "question": self.question, "agent": self.agent}
        if self.user:
            out["user"] = self.user
        out["kind"] = self.kind
        if self.expect:
            out["expect"] = [e.as_json() for e in self.expect]
        return out


# --------------------------------------------------------------------------- reading questions


def _expect(item: Any, where: str, nested: bool = False) -> Expect:
    if not isinstance(item, dict):
        raise QuestionsError(f"{where}: each expect item must be an object")
    if "any" in item and not nested:
        alternatives = item["any"]
        if set(item) != {"any"} or not isinstance(alternatives, list) or not alternatives:
            raise QuestionsError(f'{where}: "any" must be the only key, with a non-empty list of items')
        return Expect(any_of=tuple(_expect(a, where, nested=True) for a in alternatives))
    unknown = set(item) - {"path", "lines", "text"}
    if unknown:
        raise QuestionsError(f"{where}: unknown expect key(s) {', '.join(sorted(unknown))}")
    path, lines, text = item.get("path"), item.get("lines"), item.get("text")
    if path is None and text is None:
        raise QuestionsError(f'{where}: an expect item needs "path" (with "lines") or "text"')
    if path is not None and (not isinstance(path, str) or not path.strip()):
        raise QuestionsError(f'{where}: "path" must be a non-empty string')
    if text is not None and (not isinstance(text, str) or not text.strip()):
        raise QuestionsError(f'{where}: "text" must be a non-empty string')
    span: tuple[int, int] | None = None
    if lines is not None:
        if path is None:
            raise QuestionsError(f'{where}: "lines" needs a "path"')
        ok = (
            isinstance(lines, list)
            and len(lines) == 2
            and all(isinstance(n, int) and not isinstance(n, bool) for n in lines)
        )
        if not ok or not 1 <= lines[0] <= lines[1]:
            raise QuestionsError(f'{where}: "lines" must be [first, last] with 1 <= first <= last')
        span = (int(lines[0]), int(lines[1]))
    return Expect(path=path.strip().lstrip("/") if path else None, lines=span, text=text)


def parse_question(data: Any, where: str) -> Question:
    """One question from its decoded JSON object; errors name ``where`` (file:line)."""
    if not isinstance(data, dict):
        raise QuestionsError(f"{where}: a question must be a JSON object")
    for key in ("id", "question", "agent", "kind"):
        value = data.get(key)
        if not isinstance(value, str) or not value.strip():
            raise QuestionsError(f'{where}: "{key}" is required and must be a non-empty string')
    unknown = set(data) - {"id", "question", "agent", "user", "kind", "expect", "note"}
    if unknown:
        raise QuestionsError(f"{where}: unknown key(s) {', '.join(sorted(unknown))}")
    kind = data["kind"]
    if kind not in KINDS:
        raise QuestionsError(f"{where}: unknown kind {kind!r} (use one of: {', '.join(KINDS)})")
    user = data.get("user")
    if user is not None and (not isinstance(user, str) or not user.strip()):
        raise QuestionsError(f'{where}: "user" must be a non-empty string when given')
    raw = data.get("expect") or []
    if not isinstance(raw, list):
        raise QuestionsError(f'{where}: "expect" must be a list')
    if kind == "unanswerable" and raw:
        raise QuestionsError(f'{where}: an unanswerable question has no "expect"')
    if kind != "unanswerable" and not raw:
        raise QuestionsError(f'{where}: "expect" must list at least one piece of evidence')
    expect = tuple(_expect(item, where) for item in raw)
    return Question(data["id"], data["question"], data["agent"], kind, user or None, expect, where)


def parse_questions(lines: Iterable[str], source: str = "<questions>") -> list[Question]:
    """Questions from JSONL text lines (blank lines and ``#`` comments skipped)."""
    out: list[Question] = []
    seen: dict[str, int] = {}
    for number, line in enumerate(lines, start=1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        where = f"{source}:{number}"
        try:
            data = json.loads(stripped)
        except json.JSONDecodeError as exc:
            raise QuestionsError(f"{where}: not valid JSON ({exc.msg} at column {exc.colno})") from None
        q = parse_question(data, where)
        if q.id in seen:
            raise QuestionsError(f"{where}: duplicate id {q.id!r} (first on line {seen[q.id]})")
        seen[q.id] = number
        out.append(q)
    if not out:
        raise QuestionsError(f"{source}: no questions")
    return out


def load_questions(path: str | Path) -> list[Question]:
    """Read a question file; a bad line raises :class:`QuestionsError` naming its number."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise QuestionsError(f"{p}: no such file") from None
    except UnicodeDecodeError:
        raise QuestionsError(f"{p}: not UTF-8 text") from None
    return parse_questions(text.splitlines(), str(p))
