"""Redaction of secrets and personal data before anything is stored (spec §18, passive
channel memory: "redacts secrets, tokens, connection strings, payment-like numbers, emails,
phones, and configured excluded users/patterns").

The patterns run in a fixed order, most specific first, and each match becomes a typed
placeholder such as ``[REDACTED:openai_key]`` so a reader still sees that something was there.
Card numbers are only redacted when the Luhn checksum holds, IBANs when mod-97 holds, and
phone numbers need 9-15 digits and must not look like a date, time, IP address or version.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

Replacer = Callable[["re.Match[str]"], str]


def _tag(kind: str) -> str:
    return f"[REDACTED:{kind}]"


def luhn_valid(digits: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = ord(ch) - 48
        if i % 2 == 1:
            d *= 2
            if d > 9:
                d -= 9
        total += d
    return total % 10 == 0


def iban_valid(candidate: str) -> bool:
    s = candidate.replace(" ", "").upper()
    if not 15 <= len(s) <= 34:
        return False
    rearranged = s[4:] + s[:4]
    try:
        number = int("".join(str(int(c, 36)) for c in rearranged))
    except ValueError:
        return False
    return number % 97 == 1


def _card(m: re.Match[str]) -> str:
    digits = re.sub(r"\D", "", m.group(0))
    if 13 <= len(digits) <= 19 and luhn_valid(digits):
        return _tag("card_number")
    return m.group(0)


def _iban(m: re.Match[str]) -> str:
    return _tag("iban") if iban_valid(m.group(0)) else m.group(0)


_DATE_LIKE = re.compile(r"\d{4}[-/.]\d{1,2}[-/.]\d{1,2}|\d{1,2}[-/.]\d{1,2}[-/.]\d{2,4}")
_IP_LIKE = re.compile(r"^\d{1,3}(?:\.\d{1,3}){3}$")


def _phone(m: re.Match[str]) -> str:
    text = m.group(0)
    digits = re.sub(r"\D", "", text)
    if not 9 <= len(digits) <= 15:
        return text
    stripped = text.strip()
    if _IP_LIKE.match(stripped) or _DATE_LIKE.search(stripped):
        return text
    if re.fullmatch(r"\d+(?:\.\d+){2,}", stripped):  # version numbers
        return text
    if not stripped.startswith("+") and not re.search(r"[\s().-]", stripped) and len(digits) > 12:
        return text  # a long bare number (ids, timestamps) rather than a phone
    return _tag("phone")


def _keep_key(kind: str) -> Replacer:
    def _sub(m: re.Match[str]) -> str:
        return f"{m.group('key')}{m.group('sep')}{_tag(kind)}"

    return _sub


def _url_credentials(m: re.Match[str]) -> str:
    return f"{m.group('scheme')}://{_tag('credentials')}@"


# (name, pattern, replacement); order matters: specific before generic.
RULES: list[tuple[str, re.Pattern[str], str | Replacer]] = [
    (
        "private_key",
        re.compile(
            r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----[\s\S]*?"
            r"(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY-----|$)"
        ),
        _tag("private_key"),
    ),
    # scheme://user:password@host -> credentials removed, host kept (useful, not secret).
    (
        "connection_string",
        re.compile(r"(?P<scheme>[a-zA-Z][a-zA-Z0-9+.-]{1,30})://[^\s:/@'\"]+:[^\s@'\"]+@"),
        _url_credentials,
    ),
    ("jwt", re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"), _tag("jwt")),
    ("anthropic_key", re.compile(r"\bsk-ant-[A-Za-z0-9_-]{20,}"), _tag("anthropic_key")),
    (
        "openai_key",
        re.compile(r"\bsk-(?:proj-|svcacct-|admin-|None-)?[A-Za-z0-9_-]{20,}"),
        _tag("openai_key"),
    ),
    ("stripe_key", re.compile(r"\b(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}"), _tag("stripe_key")),
    (
        "aws_access_key",
        re.compile(r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA)[A-Z0-9]{16}\b"),
        _tag("aws_access_key"),
    ),
    (
        "github_token",
        re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{22,})"),
        _tag("github_token"),
    ),
    ("gitlab_token", re.compile(r"\bglpat-[A-Za-z0-9_-]{20,}"), _tag("gitlab_token")),
    ("slack_token", re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}"), _tag("slack_token")),
    (
        "slack_webhook",
        re.compile(r"https://hooks\.slack\.com/services/[A-Za-z0-9/_-]+"),
        _tag("slack_webhook"),
    ),
    ("google_api_key", re.compile(r"\bAIza[0-9A-Za-z_-]{35}"), _tag("google_api_key")),
    ("huggingface_token", re.compile(r"\bhf_[A-Za-z0-9]{30,}"), _tag("huggingface_token")),
    ("bearer_token", re.compile(r"(?i)\bbearer\s+[A-Za-z0-9._~+/-]{16,}=*"), _tag("bearer_token")),
    # password=..., api_key: ..., "secret": "..." (ADO-style connection strings included).
    (
        "secret_assignment",
        re.compile(
            r"(?i)(?P<key>\b(?:[a-z0-9]+[_-])*(?:password|passwd|pwd|pass|secret|client[_-]?secret|api[_-]?key|apikey|"
            r"access[_-]?key(?:[_-]?id)?|secret[_-]?access[_-]?key|auth[_-]?token|access[_-]?token|"
            r"refresh[_-]?token|token|private[_-]?key)\b[\"']?)(?P<sep>\s*(?:=|:|\bis\b)\s*)"
            r"(?:\"[^\"]*\"|'[^']*'|[^\s,;\"']+)"
        ),
        _keep_key("secret"),
    ),
    (
        "email",
        re.compile(r"\b[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}\b"),
        _tag("email"),
    ),
    ("card_number", re.compile(r"(?<![\d-])\d(?:[ -]?\d){12,18}(?![\d-])"), _card),
    ("iban", re.compile(r"\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,4})?\b"), _iban),
    ("phone", re.compile(r"(?<![\w/+.-])\+?\(?\d[\d\s().-]{7,}\d(?![\w/-])"), _phone),
]


@dataclass
class RedactionResult:
    text: str
    counts: dict[str, int] = field(default_factory=dict)

    @property
    def redacted(self) -> bool:
        return bool(self.counts)


@dataclass
class Redactor:
    """Applies :data:`RULES`, then the configured excluded patterns (regexes)."""

    extra_patterns: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._extra = [re.compile(p) for p in self.extra_patterns]

    def redact(self, text: str) -> RedactionResult:
        counts: dict[str, int] = {}
        for name, pattern, repl in RULES:

            def _sub(m: re.Match[str], name: str = name, repl: str | Replacer = repl) -> str:
                out = repl if isinstance(repl, str) else repl(m)
                if out != m.group(0):
                    counts[name] = counts.get(name, 0) + 1
                return out

            text = pattern.sub(_sub, text)
        for pattern in self._extra:
            text, n = pattern.subn(_tag("excluded_pattern"), text)
            if n:
                counts["excluded_pattern"] = counts.get("excluded_pattern", 0) + n
        return RedactionResult(text, counts)


def redact(text: str, extra_patterns: Iterable[str] = ()) -> str:
    """Redact ``text`` with the built-in rules plus ``extra_patterns``."""
    return Redactor(list(extra_patterns)).redact(text).text
