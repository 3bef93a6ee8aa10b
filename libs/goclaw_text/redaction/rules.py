"""goclaw's own secret and personal-data patterns: what detect-secrets' detectors miss.

Each :class:`Rule` names the group holding the secret (the rest of the match is context that
stays readable: ``password=``, the URL's host, the query parameter's name) and may validate
the candidate (Luhn for card numbers, mod-97 for IBANs, a placeholder filter for assignments).
Everything here is a plain :mod:`re` pattern with bounded repetition where a match could
otherwise be retried from many positions, so adversarial input stays near linear time.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Rule:
    kind: str
    pattern: re.Pattern[str]
    group: int | str = 0  # the part of the match that is secret
    check: Callable[[re.Match[str]], bool] | None = None


# --------------------------------------------------------------------------- validators


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


def _card(m: re.Match[str]) -> bool:
    digits = re.sub(r"\D", "", m.group(0))
    seps = {c for c in m.group(0) if not c.isdigit()}
    return 13 <= len(digits) <= 19 and len(seps) <= 1 and luhn_valid(digits)


_DATE_LIKE = re.compile(r"\d{4}[-/.]\d{1,2}[-/.]\d{1,2}|\d{1,2}[-/.]\d{1,2}[-/.]\d{2,4}")
_IP_LIKE = re.compile(r"^\d{1,3}(?:\.\d{1,3}){3}$")


def _phone(m: re.Match[str]) -> bool:
    text = m.group(0).strip()
    digits = re.sub(r"\D", "", text)
    if not 9 <= len(digits) <= 15:
        return False
    if _IP_LIKE.match(text) or _DATE_LIKE.search(text) or re.fullmatch(r"\d+(?:\.\d+){2,}", text):
        return False
    # A long bare number (ids, timestamps) rather than a phone.
    return text.startswith("+") or bool(re.search(r"[\s().-]", text)) or len(digits) <= 12


_PLACEHOLDER_WORDS = """none null nil true false yes no empty unset set required optional hidden redacted
changeme example placeholder secret password token xxx xxxx xxxxxx dummy test invalid incorrect
wrong expired missing needed correct valid enabled disabled n/a tbd todo pass passwd pwd change-me
changeit"""
PLACEHOLDERS = frozenset(_PLACEHOLDER_WORDS.split())


HASH_PREFIX = re.compile(r"(?i)(?:sha\d*|md5|blake2\w*|h1|xxh\d*|integrity|digest|checksum)[-:=]\s*$")


def _not_a_digest(m: re.Match[str]) -> bool:
    """Base64 after ``sha512-`` / ``sha256:`` (lock files, SRI) is a hash, not a key."""
    return not HASH_PREFIX.search(m.string[max(0, m.start() - 16) : m.start()])


def is_placeholder(value: str) -> bool:
    v = value.strip().strip("\"'`").strip().rstrip(".,;:!?)").strip("\"'`")
    if not v or v.lower() in PLACEHOLDERS or v.startswith("[REDACTED"):
        return True
    if re.fullmatch(r"[*x.•_-]{3,}|<[^<>]*>?|\$\{[^}]*\}?|\{\{[^}]*\}\}|%\(?\w+\)?s?|\$\w+", v, re.I):
        return True
    return bool(re.fullmatch(r"(?:os\.)?(?:environ|getenv|env)\b.*|process\.env\..*", v))


def shannon(value: str) -> float:
    if not value:
        return 0.0
    n = len(value)
    return -sum((c / n) * math.log2(c / n) for c in Counter(value).values())


def secretish(value: str, min_len: int = 8) -> bool:
    """A value that looks generated: letters and digits mixed, or long and high in entropy."""
    v = value.strip("\"'`")
    if len(v) < min_len or is_placeholder(v):
        return False
    if re.search(r"\d", v) and re.search(r"[A-Za-z]", v):
        return True
    return len(v) >= 20 and bool(re.search(r"[a-z]", v) and re.search(r"[A-Z]", v)) and shannon(v) >= 3.7


def _password_value(m: re.Match[str]) -> bool:
    return not is_placeholder(m.group("value"))


def _token_value(m: re.Match[str]) -> bool:
    # A bare "key" (ticket key, primary key) needs a longer value than "api_key" or "token".
    bare_key = m.group("key").lower().endswith("key") and not re.search(
        r"(?i)(api|access|account|secret|private|signing|shared)[_ -]?key$", m.group("key")
    )
    return secretish(m.group("value"), 16 if bare_key else 8)


_PASSWORD_KEYS = r"[A-Za-z0-9_.-]{0,40}(?:password|passwd|passphrase|passcode|pwd|pass|pw)"
_TOKEN_KEYS = (
    r"[A-Za-z0-9_.-]{0,40}(?:secret|token|api[_-]?key|apikey|access[_-]?key(?:[_-]?id)?|account[_-]?key|"
    r"shared[_-]?access[_-]?key|private[_ -]?key|auth|credentials?|client[_-]?secret|signing[_-]?key|"
    r"sig|signature|dsn|key)"
)
_SEP = r"[\"']?\]?\s*(?::=|=>|==|=|:|\bis\b|\bwas\b)\s*"
_VALUE = r"(?P<value>\"[^\"\n]{1,400}\"|'[^'\n]{1,400}'|[^\s,;\"'<>)\]}]{1,400})"

_URL_PARAM_WORDS = (
    "token|key|apikey|secret|sig|signature|password|passwd|pwd|auth|code|credential|credentials|jwt|sas"
)

# Order does not matter (findings are merged by position); kinds name the placeholder.
RULES: tuple[Rule, ...] = (
    Rule(
        "private_key",
        re.compile(
            r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----[\s\S]*?"
            r"(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|\Z)"
        ),
    ),
    Rule("private_key", re.compile(r"PuTTY-User-Key-File-\d+:[\s\S]*?(?:Private-MAC: *\S+|\Z)")),
    # scheme://user:password@host (DB URLs, AMQP, Redis with an empty user): credentials only.
    Rule(
        "credentials",
        re.compile(
            r"\b[a-zA-Z][a-zA-Z0-9+.-]{1,30}://(?P<cred>[^\s:/@'\"<>]{0,128}:[^\s'\"<>?#]{1,256})@[\w.\[\]-]"
        ),
        "cred",
        lambda m: not is_placeholder(m.group("cred").split(":", 1)[1]),
    ),
    # scheme://TOKEN@host (git URLs with a token, Sentry DSNs).
    Rule(
        "credentials",
        re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.-]{1,30}://(?P<cred>[A-Za-z0-9_-]{16,256})@[\w.-]"),
        "cred",
        lambda m: secretish(m.group("cred"), 16),
    ),
    # Tokens in URL query strings and fragments (?access_token=, &sig=, X-Amz-Signature=).
    Rule(
        "url_token",
        re.compile(
            r"[?&#;](?:[A-Za-z0-9]{1,40}[_.-]){0,8}(?:[A-Za-z0-9]{0,40}(?i:" + _URL_PARAM_WORDS + r"))"
            r"=(?P<value>[^&#\s\"'<>]{6,})",
        ),
        "value",
        lambda m: not is_placeholder(m.group("value")),
    ),
    Rule(
        "password",
        re.compile(r"(?i)(?<![A-Za-z0-9])[\"']?" + _PASSWORD_KEYS + _SEP + _VALUE),
        "value",
        _password_value,
    ),
    Rule(
        "secret",
        re.compile(r"(?i)(?<![A-Za-z0-9])[\"']?(?P<key>" + _TOKEN_KEYS + ")" + _SEP + _VALUE),
        "value",
        _token_value,
    ),
    Rule("password", re.compile(r"(?i)\bsshpass\s+-p\s*(?P<value>'[^']+'|\"[^\"]+\"|\S+)"), "value"),
    Rule(
        "password",
        re.compile(r"(?i)\b(?:mysql|mysqldump|psql)\b[^\n]{0,200}?\s-p(?P<value>[^\s-][^\s]{3,})"),
        "value",
    ),
    Rule("bearer_token", re.compile(r"(?i)\bbearer\s+(?P<t>[A-Za-z0-9._~+/-]{16,}=*)"), "t"),
    Rule("basic_auth", re.compile(r"(?i)\bbasic\s+(?P<t>[A-Za-z0-9+/]{12,}={0,2})"), "t"),
    Rule("jwt", re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}")),
    Rule("anthropic_key", re.compile(r"\bsk-ant-[A-Za-z0-9_-]{20,}")),
    Rule("openai_key", re.compile(r"\bsk-(?:proj-|svcacct-|admin-|None-)?[A-Za-z0-9_-]{20,}")),
    Rule("stripe_key", re.compile(r"\b(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}")),
    Rule("stripe_webhook_secret", re.compile(r"\bwhsec_[A-Za-z0-9+/=]{24,}")),
    Rule(
        "aws_access_key", re.compile(r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA|ABIA|ACCA)[A-Z0-9]{16}\b")
    ),
    Rule("github_token", re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{22,})")),
    Rule("gitlab_token", re.compile(r"\bgl(?:pat|dt|ft|rt|cbt|ptt|oas)-[A-Za-z0-9_-]{20,}")),
    Rule("slack_token", re.compile(r"\bxox[abposre]-[A-Za-z0-9-]{10,}")),
    Rule("slack_token", re.compile(r"\bxapp-\d-[A-Za-z0-9]+-\d+-[A-Za-z0-9]+")),
    Rule(
        "slack_webhook",
        re.compile(r"https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9/_-]+"),
    ),
    Rule(
        "discord_webhook",
        re.compile(r"https://(?:\w+\.)?discord(?:app)?\.com/api/webhooks/\d+/[A-Za-z0-9_-]+"),
    ),
    Rule("google_api_key", re.compile(r"\bAIza[0-9A-Za-z_-]{35}")),
    Rule("google_oauth_token", re.compile(r"\bya29\.[0-9A-Za-z_-]{20,}")),
    Rule("google_client_secret", re.compile(r"\bGOCSPX-[0-9A-Za-z_-]{20,}")),
    Rule("huggingface_token", re.compile(r"\bhf_[A-Za-z0-9]{30,}")),
    Rule("npm_token", re.compile(r"\bnpm_[A-Za-z0-9]{36}\b")),
    Rule("sendgrid_key", re.compile(r"\bSG\.[A-Za-z0-9_-]{16,32}\.[A-Za-z0-9_-]{30,50}")),
    Rule("mailchimp_key", re.compile(r"\b[0-9a-f]{32}-us\d{1,2}\b")),
    Rule("twilio_key", re.compile(r"\b(?:SK|AC)[0-9a-f]{32}\b")),
    Rule("shopify_token", re.compile(r"\bshp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}\b")),
    Rule("digitalocean_token", re.compile(r"\bdo[opr]_v1_[a-f0-9]{64}\b")),
    Rule("linear_key", re.compile(r"\blin_(?:api|oauth)_[A-Za-z0-9]{32,}")),
    Rule("atlassian_token", re.compile(r"\bATATT3[A-Za-z0-9_=-]{30,}")),
    Rule("square_token", re.compile(r"\bsq0(?:atp|csp)-[0-9A-Za-z_-]{22,}")),
    Rule("pypi_token", re.compile(r"\bpypi-AgE[A-Za-z0-9_-]{50,}")),
    Rule("databricks_token", re.compile(r"\bdapi[0-9a-f]{32}\b")),
    Rule("doppler_token", re.compile(r"\bdp\.(?:st|pt|ct|sa|scim)\.[A-Za-z0-9._-]{30,}")),
    Rule("azure_client_secret", re.compile(r"(?<![A-Za-z0-9])[A-Za-z0-9_~.]{3}\dQ~[A-Za-z0-9_~.-]{31,34}")),
    Rule("telegram_token", re.compile(r"\b\d{8,10}:AA[0-9A-Za-z_-]{33}\b")),
    Rule("postman_key", re.compile(r"\bPMAK-[0-9a-f]{24}-[0-9a-f]{34}\b")),
    Rule("newrelic_key", re.compile(r"\bNR(?:AK|AA|II|JS|IQ|SP)-[A-Z0-9]{27}\b")),
    Rule("airtable_token", re.compile(r"\bpat[A-Za-z0-9]{14}\.[a-f0-9]{64}\b")),
    # A Twilio auth token is 32 bare hex digits: a secret only where Twilio is named nearby.
    Rule(
        "twilio_token",
        re.compile(r"(?i)\btwilio\b[^\n]{0,60}?(?<![0-9a-f])(?P<t>[0-9a-f]{32})(?![0-9a-f])"),
        "t",
    ),
    # An Ethereum private key is 64 hex digits, like a transaction hash: a secret where a key,
    # a wallet or a seed is named nearby.
    Rule(
        "private_key",
        re.compile(
            r"(?i)\b(?:private|priv|secret|wallet|signing|eth(?:ereum)?)\b[^\n]{0,40}?"
            r"(?<![0-9a-fx])(?P<k>(?:0x)?[0-9a-f]{64})(?![0-9a-f])"
        ),
        "k",
    ),
    # Session cookies (Cookie: sessionid=..., Set-Cookie: JSESSIONID=...).
    Rule(
        "session_cookie",
        re.compile(
            r"(?i)(?<![A-Za-z0-9])(?:session(?:[_-]?id)?|sid|sessid|phpsessid|jsessionid|connect\.sid|"
            r"_session|session[_-]?token|auth[_-]?session)=(?P<value>[^;\s\"'<>]{6,})"
        ),
        "value",
        lambda m: not is_placeholder(m.group("value")),
    ),
    # Azure storage: AccountKey=..., SharedAccessKey=..., a bare 88-character account key.
    Rule(
        "azure_storage_key",
        re.compile(
            r"(?i)\b(?:AccountKey|SharedAccessKey|SharedAccessSignature)\s*=\s*(?P<k>[A-Za-z0-9+/=%]{20,})"
        ),
        "k",
    ),
    Rule(
        "azure_storage_key",
        re.compile(r"(?<![A-Za-z0-9+/])[A-Za-z0-9+/]{86}==(?![A-Za-z0-9+/=])"),
        check=_not_a_digest,
    ),
    # Personal data.
    # Not the password of a URL's user:password@host (that is a credential, and the host stays).
    Rule(
        "email",
        re.compile(r"(?:(?<=mailto:)|(?<![\w.%+:/-]))[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}\b"),
    ),
    # US social security numbers (never issued: area 000, 666, 9xx; group 00; serial 0000).
    Rule("ssn", re.compile(r"(?<![\d-])(?!000|666|9\d\d)\d{3}-(?!00)\d{2}-(?!0000)\d{4}(?![\d-])")),
    Rule("card_number", re.compile(r"(?<![\d.-])\d(?:[ .-]?\d){12,18}(?![\d-]|\.\d)"), check=_card),
    Rule(
        "iban",
        re.compile(r"\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,4})?\b"),
        check=lambda m: iban_valid(m.group(0)),
    ),
    Rule("phone", re.compile(r"(?<![\w/+.:-])\+?\(?\d[\d\s().-]{7,}\d(?![\w/:-])"), check=_phone),
)

# AWS secret access keys carry no marker: 40 base64 characters near an access key id.
AWS_SECRET = re.compile(r"(?<![A-Za-z0-9+/=])[A-Za-z0-9+/]{40}(?![A-Za-z0-9+/=])")
AWS_KEY_ID = re.compile(r"\b(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}\b")
AWS_CONTEXT = re.compile(r"(?i)\baws\b|secret[_ -]?access|AWS_SECRET")
