"""One redactor for everything goclaw writes from model or user text.

The memory flush, ``memory add``, compaction summaries, episodic summaries, dreaming, KG facts
and passive channel memory all call :func:`redact_for` (or :func:`redactor_of`) before text
reaches a file or a table. Secrets become typed placeholders such as ``[REDACTED:openai_key]``,
so a reader still sees that something was there.

Replacing it: a plugin offers a ``"redaction"`` service (``goclaw_services``) whose
``redact(text) -> str`` is then used everywhere instead of :class:`SecretRedactor`; it lives in
this library so that no plugin has to import another to reach it.

The default detects (see :mod:`goclaw_text.redaction.detectors`): detect-secrets' detectors,
goclaw's own patterns for what those miss (Azure storage keys, Slack ``xapp-``, Stripe
``whsec_``, Google ``ya29.``, npm, Discord webhooks, DB URLs with passwords, tokens in URL query
strings, private-key blocks, bare AWS secret keys near an access key, keys split across
lines), a bare-token entropy test, and personal data (emails, phones, Luhn-checked card
numbers, mod-97-checked IBANs). User-supplied exclude patterns run under a timeout.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

__all__ = [
    "ExcludedPatterns",
    "RedactionResult",
    "Redactor",
    "SecretRedactor",
    "iban_valid",
    "luhn_valid",
    "redact",
    "redact_for",
    "redactor_of",
]

log = logging.getLogger("goclaw_text.redaction")

SERVICE = "redaction"
GENERIC_KINDS = frozenset({"secret", "password", "url_token", "high_entropy_string", "credentials"})
PATTERN_TIMEOUT_SECONDS = 0.2
MAX_PATTERN_LENGTH = 500


def __getattr__(name: str) -> Any:
    # The validators live with the patterns, which compile on first use (about 60 of them):
    # importing this package stays cheap for processes that never redact.
    if name in ("iban_valid", "luhn_valid"):
        from goclaw_text.redaction import rules

        return getattr(rules, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def tag(kind: str) -> str:
    return f"[REDACTED:{kind}]"


_PLACEHOLDER = re.compile(r"\[REDACTED:[a-z0-9_]+\]")


def _only_placeholders(span: str) -> bool:
    """A finding made of earlier placeholders (``[REDACTED:x]@host``): redacting is idempotent."""
    return "[REDACTED:" in span and sum(c.isalnum() for c in _PLACEHOLDER.sub("", span)) < 4


@runtime_checkable
class Redactor(Protocol):
    """The contract of the ``"redaction"`` service."""

    def redact(self, text: str) -> str:
        """``text`` with every secret replaced; idempotent on its own output."""
        ...


@dataclass
class RedactionResult:
    text: str
    counts: dict[str, int] = field(default_factory=dict)

    @property
    def redacted(self) -> bool:
        return bool(self.counts)


class PatternError(ValueError):
    """An exclude pattern that is too long or does not compile."""


class ExcludedPatterns:
    """User-supplied regexes (channel memory's ``--exclude-pattern``), always redacted.

    They run on the ``regex`` module with a timeout, so a catastrophic pattern such as
    ``(a+)+$`` cannot hang ingestion: a pattern that times out on a text redacts the whole
    text (fail closed: it was meant to hide something there) and is reported in the counts.
    """

    def __init__(self, patterns: Iterable[str] = (), *, timeout: float = PATTERN_TIMEOUT_SECONDS) -> None:
        import regex

        self.timeout = timeout
        self._compiled: list[Any] = []
        for p in patterns:
            if len(p) > MAX_PATTERN_LENGTH:
                raise PatternError(f"exclude pattern is longer than {MAX_PATTERN_LENGTH} characters")
            try:
                self._compiled.append(regex.compile(p))
            except regex.error as exc:
                raise PatternError(f"invalid exclude pattern {p!r}: {exc}") from None

    def __bool__(self) -> bool:
        return bool(self._compiled)

    def apply(self, text: str, counts: dict[str, int]) -> str:
        for pattern in self._compiled:
            try:
                text, n = pattern.subn(tag("excluded_pattern"), text, timeout=self.timeout)
            except TimeoutError:
                log.warning("exclude pattern %r timed out; the whole text is redacted", pattern.pattern)
                counts["excluded_pattern_timeout"] = counts.get("excluded_pattern_timeout", 0) + 1
                return tag("excluded_pattern")
            if n:
                counts["excluded_pattern"] = counts.get("excluded_pattern", 0) + n
        return text


class SecretRedactor:
    """The built-in redactor: detectors, merged spans, then the excluded patterns."""

    def __init__(self, extra_patterns: Iterable[str] = ()) -> None:
        self.excluded = ExcludedPatterns(extra_patterns)

    def redact_result(self, text: str) -> RedactionResult:
        from goclaw_text.redaction.detectors import find_secrets

        counts: dict[str, int] = {}
        if not text:
            return RedactionResult(text, counts)
        # Longest first at each start; on a tie the specific kind names the placeholder.
        found = [f for f in find_secrets(text) if not _only_placeholders(text[f.start : f.end])]
        spans = sorted(found, key=lambda f: (f.start, -f.end, f.kind in GENERIC_KINDS))
        merged: list[list[Any]] = []
        for f in spans:
            if merged and f.start < merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], f.end)
            else:
                merged.append([f.start, f.end, f.kind])
        out: list[str] = []
        pos = 0
        for start, end, kind in merged:
            out.append(text[pos:start])
            out.append(tag(kind))
            counts[kind] = counts.get(kind, 0) + 1
            pos = end
        out.append(text[pos:])
        result = "".join(out)
        if self.excluded:
            result = self.excluded.apply(result, counts)
        return RedactionResult(result, counts)

    def redact(self, text: str) -> str:
        return self.redact_result(text).text


_DEFAULT: SecretRedactor | None = None


def default_redactor() -> SecretRedactor:
    global _DEFAULT
    if _DEFAULT is None:
        _DEFAULT = SecretRedactor()
    return _DEFAULT


def redact(text: str, extra_patterns: Iterable[str] = ()) -> str:
    """Redact ``text`` with the built-in redactor (plus ``extra_patterns``); no engine needed."""
    patterns = list(extra_patterns)
    return (SecretRedactor(patterns) if patterns else default_redactor()).redact(text)


class _WithExcluded:
    def __init__(self, inner: Redactor, excluded: ExcludedPatterns) -> None:
        self.inner, self.excluded = inner, excluded

    def redact(self, text: str) -> str:
        return self.excluded.apply(self.inner.redact(text), {})


def redactor_of(engine: Any, extra_patterns: Iterable[str] = ()) -> Redactor:
    """The engine's redactor: a plugin's ``"redaction"`` service, else the built-in one;
    ``extra_patterns`` (user regexes) are applied after it, under a timeout."""
    patterns = list(extra_patterns)
    if engine is not None and engine.has_service(SERVICE):
        service: Redactor = engine.service(SERVICE)
        return _WithExcluded(service, ExcludedPatterns(patterns)) if patterns else service
    return SecretRedactor(patterns) if patterns else default_redactor()


def redact_for(engine: Any, text: str) -> str:
    """``text`` through the engine's redactor (see :func:`redactor_of`)."""
    if not text:
        return text
    return redactor_of(engine).redact(text)
