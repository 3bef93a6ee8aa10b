"""A useful summary with no model: every LLM step in goclaw has a deterministic fallback.

Shared by the episodic worker (a session's summary) and channel memory (a channel's candidate
memory), which never import each other.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from goclaw_text.entities import entity_names
from goclaw_text.sentences import clip, sentences

__all__ = ["extractive_summary"]

_SALIENT = re.compile(
    r"\b(decid\w*|agree\w*|prefer\w*|plan\w*|will|going to|need\w*|must|should|deadline|due|"
    r"launch\w*|migrat\w*|deploy\w*|fix\w*|bug|issue|budget|cost|price|meeting|schedul\w*|"
    r"remember|always|never|favou?rite|works? (?:at|on|for)|lives? in|moved|switch\w*|chose|"
    r"use[sd]?|using|want\w*|goal|because|todo|next step)\b",
    re.IGNORECASE,
)


def extractive_summary(messages: Sequence[tuple[str, str]], max_chars: int = 1200) -> str:
    """A useful summary with no model: a topic sentence, then the most salient sentences of
    the conversation in their original order (decisions, preferences, plans, facts).

    ``messages`` are ``(role, content)`` pairs; system messages should be left out.
    """
    turns = [(r, " ".join(c.split())) for r, c in messages if c and c.strip()]
    if not turns:
        return ""
    all_text = "\n".join(c for _, c in turns)
    topics = entity_names(all_text, limit=6)
    user_turns = sum(1 for r, _ in turns if r == "user")
    if topics:
        head = f"Session about {', '.join(topics)} ({len(turns)} messages, {user_turns} from the user)."
    else:
        head = f"Conversation of {len(turns)} messages ({user_turns} from the user)."
    scored: list[tuple[float, int, str, str]] = []
    order = 0
    for role, content in turns:
        for s in sentences(content):
            if len(s) < 12:
                continue
            score = (
                len(_SALIENT.findall(s)) * 2.0 + len(entity_names(s, 5)) + (0.5 if role == "user" else 0.0)
            )
            score += 0.5 if re.search(r"\d", s) else 0.0
            scored.append((score, order, role, s))
            order += 1
    best = sorted(scored, key=lambda t: (-t[0], t[1]))[:8]
    lines: list[str] = []
    budget = max_chars - len(head) - 1
    for _score, _order, role, s in sorted(best, key=lambda t: t[1]):
        who = "User" if role == "user" else "Assistant"
        line = f"{who}: {clip(s, 240)}"
        if len(line) + 1 > budget:
            break
        lines.append(line)
        budget -= len(line) + 1
    return "\n".join([head, *lines])
