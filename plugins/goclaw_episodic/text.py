"""Episodic text rules: the L0 abstract, key-topic limits and the trivial-message
filter of auto-injection. Shared text mechanisms are in the library :mod:`goclaw_text`."""

from __future__ import annotations

from collections.abc import Iterable

from goclaw_text.sentences import clip, sentences

L0_MAX_CHARS = 200  # ~50 tokens at four characters a token
L0_MIN_SENTENCE = 20
MAX_TOPICS = 20


def l0_abstract(summary: str) -> str:
    """The ~50-token abstract: the first sentence of at least
    20 characters, clipped to 200; else the first 200 characters."""
    for s in sentences(summary):
        if len(s) >= L0_MIN_SENTENCE:
            return clip(s, L0_MAX_CHARS)
    return clip(" ".join(summary.split()), L0_MAX_CHARS)


def dedupe(items: Iterable[str]) -> list[str]:
    seen: set[str] = set()
    out: list[str] = []
    for item in items:
        key = item.lower()
        if item and key not in seen:
            seen.add(key)
            out.append(item)
    return out


# Greetings, acknowledgements and glue words: a message made only of these is "trivial" and
# never triggers auto-injection.
TRIVIAL_WORDS = frozenset(
    """
    hi hello hey yo hiya howdy morning evening afternoon night good gm gn thanks thank thx ty you
    ok okay k kk yes yeah yep yup no nope nah sure fine cool great nice awesome perfect alright
    right got it bye goodbye cya later see please pls welcome lol haha hmm oh ah wow np cheers done
    noted understood agreed sounds the a an and so that this is are was i me my we to of for too
    very much all just well then
    """.split()  # noqa: SIM905
)


def is_trivial(message: str | None) -> bool:
    """True for greetings and acknowledgements ("hi", "ok thanks!"): fewer than 3 words that
    are not in :data:`TRIVIAL_WORDS` after trimming punctuation."""
    if not message or not message.strip():
        return True
    words = [w.strip(".,!?;:'\"()-").lower() for w in message.split()]
    meaningful = [w for w in words if w and w not in TRIVIAL_WORDS]
    return len(meaningful) < 3 and len([w for w in words if w]) < 6
