"""Finding secrets: detect-secrets' detectors, goclaw's own rules, a high-entropy detector.

Every detector returns :class:`Finding` spans on the text; :func:`find_secrets` also looks at a
"joined" view where a token broken across lines (a key pasted with a line wrap) is whole
again, and maps what it finds there back onto the original lines.

detect-secrets (Yelp, maintained) brings its regex detectors in-process: no baseline file, no
subprocess, no network (its ``verify`` methods are never called). Its high-entropy detectors
only look at quoted strings, so the entropy test here runs on bare tokens with guards against
the usual look-alikes (hex hashes and UUIDs, hash-prefixed digests, paths, base64 of text).
"""

from __future__ import annotations

import base64
import binascii
import functools
import itertools
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from goclaw_text.redaction.rules import AWS_CONTEXT, AWS_KEY_ID, AWS_SECRET, HASH_PREFIX, RULES, shannon


@dataclass(frozen=True)
class Finding:
    start: int
    end: int
    kind: str


# detect-secrets plugins used (class name -> placeholder kind). Left out: the public-IP
# detector (an address is not a secret), the keyword and quoted high-entropy detectors
# (replaced by goclaw's assignment rules and the bare-token entropy test below).
DETECT_SECRETS_PLUGINS: dict[str, str] = {
    "ArtifactoryDetector": "artifactory_token",
    "AWSKeyDetector": "aws_key",
    "AzureStorageKeyDetector": "azure_storage_key",
    "BasicAuthDetector": "credentials",
    "CloudantDetector": "cloudant_key",
    "DiscordBotTokenDetector": "discord_token",
    "GitHubTokenDetector": "github_token",
    "GitLabTokenDetector": "gitlab_token",
    "IbmCloudIamDetector": "ibm_cloud_key",
    "IbmCosHmacDetector": "ibm_cos_key",
    "JwtTokenDetector": "jwt",
    "MailchimpDetector": "mailchimp_key",
    "NpmDetector": "npm_token",
    "OpenAIDetector": "openai_key",
    "PypiTokenDetector": "pypi_token",
    "SendGridDetector": "sendgrid_key",
    "SlackDetector": "slack_token",
    "SoftlayerDetector": "softlayer_key",
    "SquareOAuthDetector": "square_token",
    "StripeDetector": "stripe_key",
    "TelegramBotTokenDetector": "telegram_token",
    "TwilioKeyDetector": "twilio_key",
}


@functools.lru_cache(maxsize=1)
def detect_secrets_plugins() -> tuple[tuple[str, Any], ...]:
    """Instances of the detect-secrets detectors above (imported on first use: it is slow)."""
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class

    classes: list[Any] = list(get_mapping_from_secret_type_to_class().values())
    by_name: dict[str, Any] = {c.__name__: c for c in classes}
    return tuple((kind, by_name[name]()) for name, kind in DETECT_SECRETS_PLUGINS.items() if name in by_name)


_WINDOW, _STEP = 2000, 1500  # some detect-secrets regexes are quadratic on one long line


def _windows(line: str) -> Iterator[tuple[int, str]]:
    if len(line) <= _WINDOW:
        yield 0, line
        return
    for start in range(0, len(line) - (_WINDOW - _STEP), _STEP):
        yield start, line[start : start + _WINDOW]


def _detect_secrets(text: str) -> Iterator[Finding]:
    offset = 0
    for full_line in text.splitlines(keepends=True):
        for shift, line in _windows(full_line) if len(full_line.strip()) >= 8 else ():
            for kind, plugin in detect_secrets_plugins():
                for value in set(plugin.analyze_string(line)):
                    secret = str(value).strip(" \t\r\n\"'=:")
                    if len(secret) < 8:
                        continue
                    start = line.find(secret)
                    while start >= 0:
                        yield Finding(offset + shift + start, offset + shift + start + len(secret), kind)
                        start = line.find(secret, start + len(secret))
        offset += len(full_line)


def _rules(text: str) -> Iterator[Finding]:
    for rule in RULES:
        for m in rule.pattern.finditer(text):
            if rule.check is not None and not rule.check(m):
                continue
            start, end = m.span(rule.group)
            if end > start:
                yield Finding(start, end, rule.kind)


def _aws_secrets(text: str) -> Iterator[Finding]:
    """Bare AWS secret access keys: 40 base64 characters within 200 characters of an access key
    id, or of an ``aws``/``secret access`` mention."""
    for m in AWS_SECRET.finditer(text):
        window = text[max(0, m.start() - 200) : m.end() + 200]
        token = m.group(0)
        if (AWS_KEY_ID.search(window) or AWS_CONTEXT.search(window)) and _looks_random(token, 3.5):
            yield Finding(m.start(), m.end(), "aws_secret_key")


# --------------------------------------------------------------------------- entropy

_TOKEN = re.compile(r"(?<![A-Za-z0-9+/=_-])[A-Za-z0-9+/_-]{24,}={0,2}(?![A-Za-z0-9+/=_-])")
_HEXISH = re.compile(r"[0-9a-fA-F-]+")


def _looks_random(token: str, min_entropy: float) -> bool:
    digits = sum(c.isdigit() for c in token)
    upper = sum(c.isupper() for c in token)
    lower = sum(c.islower() for c in token)
    if digits < 2 or (upper == 0 and lower == 0):
        return False
    if shannon(token) < min_entropy:
        return False

    # Class changes (upper/lower/digit/other): random text switches at most characters,
    # identifiers, words and paths rarely.
    def cls(c: str) -> int:
        return 0 if c.isupper() else 1 if c.islower() else 2 if c.isdigit() else 3

    switches = sum(cls(a) != cls(b) for a, b in itertools.pairwise(token))
    return switches / (len(token) - 1) >= 0.3


def _is_text_base64(token: str) -> bool:
    """Base64 of ordinary text (an encoded sentence, a config snippet) is not a secret."""
    if len(token) % 4 == 1 or not re.fullmatch(r"[A-Za-z0-9+/]+={0,2}", token):
        return False
    try:
        raw = base64.b64decode(token + "=" * (-len(token) % 4), validate=True)
        decoded = raw.decode("utf-8")
    except (binascii.Error, ValueError):
        return False
    printable = sum(c.isprintable() or c in "\n\t" for c in decoded)
    return bool(decoded) and printable / len(decoded) > 0.95 and " " in decoded


def _random_token(token: str, before: str) -> bool:
    token = token.strip("=_-")
    if len(token) < 24 or _HEXISH.fullmatch(token):
        return False  # hashes, git SHAs, UUIDs: not secrets without a keyword around them
    if HASH_PREFIX.search(before) or _is_text_base64(token):
        return False
    return _looks_random(token, 4.0 if len(token) < 40 else 4.3)


def _entropy(text: str) -> Iterator[Finding]:
    for m in _TOKEN.finditer(text):
        token, before = m.group(0), text[max(0, m.start() - 16) : m.start()]
        parts = token.split("/")
        if len(parts) > 1 and (token.startswith("/") or any(re.fullmatch(r"[a-z]{3,}", p) for p in parts)):
            # A path (/api/v1/orders/<id>/items): each segment is judged on its own.
            pos = m.start()
            for part in parts:
                if _random_token(part, ""):
                    yield Finding(pos, pos + len(part), "high_entropy_string")
                pos += len(part) + 1
        elif _random_token(token, before):
            yield Finding(m.start(), m.end(), "high_entropy_string")


# --------------------------------------------------------------------------- lines joined

_TOKEN_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=_-")
_JOIN = re.compile(r"(?<=[A-Za-z0-9+/=_-])[ \t]*\r?\n[ \t]*(?=[A-Za-z0-9+/=_-])")


def _joined(text: str) -> tuple[str, list[int]] | None:
    """``text`` with a line break removed wherever a long random-looking token continues on
    the next line, plus the original index of every kept character (None: nothing to join)."""
    cuts: list[tuple[int, int]] = []
    for m in _JOIN.finditer(text):
        i = m.start()
        while i > 0 and m.start() - i < 200 and text[i - 1] in _TOKEN_CHARS:
            i -= 1
        before = text[i : m.start()]
        if len(before) >= 12 and any(c.isdigit() for c in before) and any(c.isalpha() for c in before):
            cuts.append(m.span())
    if not cuts:
        return None
    kept: list[str] = []
    index: list[int] = []
    pos = 0
    for start, end in cuts:
        kept.append(text[pos:start])
        index.extend(range(pos, start))
        pos = end
    kept.append(text[pos:])
    index.extend(range(pos, len(text)))
    return "".join(kept), index


def _detect(text: str) -> Iterator[Finding]:
    yield from _rules(text)
    yield from _detect_secrets(text)
    yield from _aws_secrets(text)
    yield from _entropy(text)


def find_secrets(text: str) -> list[Finding]:
    """Every finding in ``text`` (possibly overlapping), the joined-lines view included."""
    found = list(_detect(text))
    joined = _joined(text)
    if joined is not None:
        view, index = joined
        for f in _detect(view):
            start, end = index[f.start], index[f.end - 1] + 1
            if "\n" in text[start:end]:  # only what the join revealed
                found.append(Finding(start, end, f.kind))
    return found
