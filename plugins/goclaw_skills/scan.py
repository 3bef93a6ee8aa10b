"""A content scan of SKILL.md text for instructions an agent must not follow blindly.

A skill's text becomes the agent's instructions, and anyone who can write a skills folder or
call ``skills add`` writes it. The scan flags what a reviewer should look at before an agent
runs it: a download piped into a shell or interpreter (``curl ... | sh``, ``bash <(curl ...)``,
``sh -c "$(wget ...)"``), decoded text run as code (``base64 -d | sh``), sending secrets,
credentials or the environment to somewhere else (exfiltration), and the classic prompt
injection phrases. It matches patterns, line by line, so it can be fooled and can flag a skill
that only explains an attack; it is a review aid, not a sandbox. ``skills lint`` reports the
findings as problems; ``skills add`` refuses a flagged skill unless forced.
"""

from __future__ import annotations

import re

_FETCH = r"(?:curl|wget|fetch|iwr|irm|invoke-webrequest|invoke-restmethod)\b"
_SHELL = (
    r"(?:sudo\s+(?:-\S+\s+)*)?(?:ba|z|k|da|fi)?sh|python[0-9.]*|perl|ruby|node|iex|invoke-expression|"
    r"powershell|pwsh"
)
_SECRET = (
    r"(?:api[ _-]?keys?|access[ _-]?keys?|secret[s]?|tokens?|passwords?|passwd|credentials?|"
    r"private[ _-]?keys?|ssh[ _-]?keys?|cookies?|session[ _-]?ids?|env(?:ironment)?(?:\s+variables?)?|"
    r"\.env\b|~/\.ssh|id_rsa|id_ed25519|\.aws/credentials|\.netrc|/etc/shadow|/etc/passwd|keychain)"
)
_SEND = r"(?:send|post|upload|forward|transmit|exfiltrate|leak|copy|paste|submit|report|email|mail)"

# (what it is, pattern): each pattern runs over one line at a time, case-insensitive.
RULES: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "a download piped into a shell or interpreter",
        re.compile(rf"{_FETCH}[^|\n]*\|\s*(?:{_SHELL})\b", re.I),
    ),
    (
        "a download run by a shell (process or command substitution)",
        re.compile(rf"(?:{_SHELL})\b[^\n]*(?:<\(|\$\(|`)\s*{_FETCH}", re.I),
    ),
    ("decoded text run as code", re.compile(rf"base64\s+(?:-d|--decode)\b[^|\n]*\|\s*(?:{_SHELL})\b", re.I)),
    (
        "an instruction to send secrets or the environment elsewhere",
        re.compile(
            rf"\b{_SEND}\b[^\n]{{0,80}}{_SECRET}[^\n]{{0,80}}(?:https?://|\bto\s+\S+@\S+|webhook)", re.I
        ),
    ),
    (
        "secrets or the environment uploaded by a command",
        re.compile(
            rf"(?:{_FETCH}[^\n]*(?:-d|--data\S*|-F|--form|-T|--upload-file|--post-file|--body-file)\s*"
            rf"[\"']?@?[^\n]*{_SECRET})|(?:(?:\benv\b|printenv|cat\s+[^\n|]*{_SECRET})[^\n|]*\|\s*{_FETCH})",
            re.I,
        ),
    ),
    (
        "a prompt-injection phrase",
        re.compile(
            r"\b(?:ignore|disregard|forget)\s+(?:all\s+|any\s+)?(?:the\s+)?(?:previous|prior|above|earlier|system)"
            r"\s+(?:instructions|rules|prompts?|directives)\b|\bdo\s+not\s+tell\s+the\s+user\b",
            re.I,
        ),
    ),
)


def scan_skill_text(text: str) -> list[str]:
    """The findings in ``text``, one ``"line N: what (excerpt)"`` per flagged line and rule."""
    findings: list[str] = []
    for number, line in enumerate(text.replace("\r\n", "\n").split("\n"), start=1):
        for what, pattern in RULES:
            m = pattern.search(line)
            if m:
                excerpt = " ".join(m.group(0).split())
                excerpt = excerpt if len(excerpt) <= 80 else excerpt[:77] + "..."
                findings.append(f"line {number}: {what} ({excerpt!r})")
    return findings
