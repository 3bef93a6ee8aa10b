"""Deterministic text helpers: L0 abstracts, entity names, extractive summaries, the trivial-
message filter and name similarity (spec §17-§18). No model needed; these are the fallbacks
DESIGN.md §5 asks for, and the cheap parts every path uses."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence

L0_MAX_CHARS = 200  # ~50 tokens at chars/4 (DECISIONS.md units)
L0_MIN_SENTENCE = 20
MAX_TOPICS = 20

_SENTENCE_SPLIT = re.compile(r"(?<=[.!?])\s+")
_ABBREV = re.compile(r"(?<![\w.])(?:Mr|Mrs|Ms|Dr|Prof|Sr|Jr|St|Mt|vs|etc|e\.g|i\.e)\.$", re.I)
_WORD = re.compile(r"[\w][\w'’-]*", re.UNICODE)

# Greetings, acknowledgements and glue words: a message made only of these is "trivial" and
# never triggers auto-injection (spec §17; the reference uses a 41-word list).
TRIVIAL_WORDS = frozenset(
    [
        "hi",
        "hello",
        "hey",
        "yo",
        "hiya",
        "howdy",
        "morning",
        "evening",
        "afternoon",
        "night",
        "good",
        "gm",
        "gn",
        "thanks",
        "thank",
        "thx",
        "ty",
        "you",
        "ok",
        "okay",
        "k",
        "kk",
        "yes",
        "yeah",
        "yep",
        "yup",
        "no",
        "nope",
        "nah",
        "sure",
        "fine",
        "cool",
        "great",
        "nice",
        "awesome",
        "perfect",
        "alright",
        "right",
        "got",
        "it",
        "bye",
        "goodbye",
        "cya",
        "later",
        "see",
        "please",
        "pls",
        "welcome",
        "lol",
        "haha",
        "hmm",
        "oh",
        "ah",
        "wow",
        "np",
        "cheers",
        "done",
        "noted",
        "understood",
        "agreed",
        "sounds",
        "the",
        "a",
        "an",
        "and",
        "so",
        "that",
        "this",
        "is",
        "are",
        "was",
        "i",
        "me",
        "my",
        "we",
        "to",
        "of",
        "for",
        "too",
        "very",
        "much",
        "all",
        "just",
        "well",
        "then",
    ]
)

STOPWORDS = frozenset(
    [
        "a",
        "about",
        "above",
        "after",
        "again",
        "against",
        "all",
        "also",
        "am",
        "an",
        "and",
        "any",
        "are",
        "as",
        "at",
        "be",
        "because",
        "been",
        "before",
        "being",
        "below",
        "between",
        "both",
        "but",
        "by",
        "can",
        "could",
        "did",
        "do",
        "does",
        "doing",
        "down",
        "during",
        "each",
        "few",
        "for",
        "from",
        "further",
        "had",
        "has",
        "have",
        "having",
        "he",
        "her",
        "here",
        "hers",
        "herself",
        "him",
        "himself",
        "his",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "itself",
        "just",
        "me",
        "more",
        "most",
        "my",
        "myself",
        "no",
        "nor",
        "not",
        "now",
        "of",
        "off",
        "on",
        "once",
        "only",
        "or",
        "other",
        "our",
        "ours",
        "ourselves",
        "out",
        "over",
        "own",
        "same",
        "she",
        "should",
        "so",
        "some",
        "such",
        "than",
        "that",
        "the",
        "their",
        "theirs",
        "them",
        "themselves",
        "then",
        "there",
        "these",
        "they",
        "this",
        "those",
        "through",
        "to",
        "too",
        "under",
        "until",
        "up",
        "very",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "while",
        "who",
        "whom",
        "why",
        "will",
        "with",
        "would",
        "you",
        "your",
        "yours",
        "yourself",
        "yourselves",
        "let",
        "lets",
        "shall",
        "may",
        "might",
        "must",
        "need",
        "want",
        "like",
        "get",
        "got",
        "make",
        "made",
        "use",
        "used",
        "one",
        "two",
        "also",
        "okay",
        "please",
        "thanks",
        "thank",
        "hello",
        "hi",
        "hey",
        "yes",
        "yeah",
        "sure",
        "ok",
    ]
)

# Capitalised words that start sentences or address roles, never entities on their own.
_NOT_ENTITIES = frozenset(
    [
        "The",
        "A",
        "An",
        "I",
        "We",
        "You",
        "He",
        "She",
        "It",
        "They",
        "This",
        "That",
        "These",
        "Those",
        "There",
        "Here",
        "What",
        "When",
        "Where",
        "Why",
        "How",
        "Who",
        "Which",
        "Yes",
        "No",
        "Ok",
        "Okay",
        "Sure",
        "Thanks",
        "Thank",
        "Hello",
        "Hi",
        "Hey",
        "Please",
        "Also",
        "But",
        "And",
        "Or",
        "So",
        "If",
        "Then",
        "Let",
        "Lets",
        "User",
        "Assistant",
        "Today",
        "Tomorrow",
        "Yesterday",
        "Monday",
        "Tuesday",
        "Wednesday",
        "Thursday",
        "Friday",
        "Saturday",
        "Sunday",
        "My",
        "Our",
        "Your",
        "Their",
        "His",
        "Her",
        "Its",
        "Can",
        "Could",
        "Would",
        "Should",
        "Will",
        "Shall",
        "Do",
        "Does",
        "Did",
        "Is",
        "Are",
        "Was",
        "Were",
        "Be",
        "Been",
        "Not",
        "Just",
        "Great",
        "Good",
        "Sounds",
        "Perfect",
        "Summary",
        "Session",
        "Conversation",
        "Discussed",
        "Next",
        "Note",
        "Notes",
        "Decision",
        "Decisions",
        "Key",
        "Points",
        "Topics",
        "After",
        "Before",
        "Once",
        "Maybe",
        "Actually",
        "Also",
        "January",
        "February",
        "March",
        "April",
        "May",
        "June",
        "July",
        "August",
        "September",
        "October",
        "November",
        "December",
        "REDACTED",
        "Redacted",
        "Channel",
        "Great",
        "Sure",
        "Done",
    ]
)


def clip(text: str, limit: int, suffix: str = "...") -> str:
    """At most ``limit`` characters (code points), cut on a word boundary when possible."""
    text = text.strip()
    if len(text) <= limit:
        return text
    cut = text[: max(0, limit - len(suffix))]
    space = cut.rfind(" ")
    if space > limit // 2:
        cut = cut[:space]
    return cut.rstrip(" ,;:") + suffix


def sentences(text: str) -> list[str]:
    out: list[str] = []
    for para in re.split(r"\n\s*\n|\n[-*•]\s+|\n", text):
        pieces: list[str] = []
        for piece in _SENTENCE_SPLIT.split(para.strip()):
            if pieces and _ABBREV.search(pieces[-1]):
                pieces[-1] += " " + piece  # "Dr. Patel" is one sentence
            else:
                pieces.append(piece)
        for s in pieces:
            s = s.strip().lstrip("-*• ").strip()
            if s:
                out.append(s)
    return out


def l0_abstract(summary: str) -> str:
    """The ~50-token abstract (spec §18 EpisodicWorker step 4): the first sentence of at least
    20 characters, clipped to 200; else the first 200 characters."""
    for s in sentences(summary):
        if len(s) >= L0_MIN_SENTENCE:
            return clip(s, L0_MAX_CHARS)
    return clip(" ".join(summary.split()), L0_MAX_CHARS)


def entity_names(text: str, limit: int = MAX_TOPICS) -> list[str]:
    """Candidate entity names (spec §18 ``extractEntityNames``): the rules are in
    :mod:`goclaw_consolidation.entities`; deduplicated case-insensitively, at most ``limit``."""
    from goclaw_consolidation.entities import mentions

    seen: set[str] = set()
    out: list[str] = []
    for sentence in sentences(text):
        for m in mentions(sentence, text):
            key = m.name.lower()
            if key in seen:
                continue
            seen.add(key)
            out.append(m.name)
            if len(out) >= limit:
                return out
    return out


def content_terms(text: str) -> list[str]:
    """Lower-cased words of 2+ characters that are not stopwords, in order, deduplicated."""
    seen: set[str] = set()
    out: list[str] = []
    for w in _WORD.findall(text.lower()):
        w = w.strip("'’-")
        if len(w) < 2 or w in STOPWORDS or w in seen:
            continue
        seen.add(w)
        out.append(w)
    return out


def is_trivial(message: str | None) -> bool:
    """True for greetings and acknowledgements ("hi", "ok thanks!"): fewer than 3 words that
    are not in :data:`TRIVIAL_WORDS` after trimming punctuation."""
    if not message or not message.strip():
        return True
    words = [w.strip(".,!?;:'\"()-").lower() for w in message.split()]
    meaningful = [w for w in words if w and w not in TRIVIAL_WORDS]
    return len(meaningful) < 3 and len([w for w in words if w]) < 6


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


# --------------------------------------------------------------------------- names


def normalize_name(name: str) -> str:
    """The entity key: lower case, accents folded, punctuation dropped, spaces collapsed."""
    folded = unicodedata.normalize("NFKD", name)
    folded = "".join(c for c in folded if not unicodedata.combining(c)).lower()
    folded = re.sub(r"[^\w\s]+", " ", folded)
    return " ".join(folded.split())


def _compact(name: str) -> str:
    return normalize_name(name).replace(" ", "").replace("_", "")


def jaro_winkler(a: str, b: str, prefix_scale: float = 0.1) -> float:
    """Standard Jaro-Winkler similarity in 0..1 over code points (prefix up to 4, boosted only
    above Jaro 0.7), from rapidfuzz: the hand-written one was non-standard and 63x slower
    (issue 12)."""
    from rapidfuzz.distance import JaroWinkler

    return float(JaroWinkler.similarity(a, b, prefix_weight=prefix_scale))


def name_similarity(a: str, b: str) -> float:
    """Similarity of two entity names: Jaro-Winkler of the compact forms (case, accents,
    spaces and punctuation ignored), or of the word-sorted forms when higher, so
    "Open AI"/"OpenAI" and "Atlas Project"/"Project Atlas" score 1.0."""
    direct = jaro_winkler(_compact(a), _compact(b))
    sorted_a = "".join(sorted(normalize_name(a).split()))
    sorted_b = "".join(sorted(normalize_name(b).split()))
    return max(direct, jaro_winkler(sorted_a, sorted_b))


def dedupe(items: Iterable[str]) -> list[str]:
    seen: set[str] = set()
    out: list[str] = []
    for item in items:
        key = item.lower()
        if item and key not in seen:
            seen.add(key)
            out.append(item)
    return out
