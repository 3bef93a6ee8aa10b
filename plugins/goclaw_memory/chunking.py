"""Split a memory document into chunks with line ranges.

Rules:

* a chunk never exceeds ``max_len`` characters (Unicode code points, never bytes);
* once the current chunk has reached half of ``max_len``, a blank line (paragraph break) ends it;
* when the next line would push the chunk past ``max_len`` the chunk is flushed first
  ("force flush at max"), so no chunk is ever larger than the maximum;
* a single line longer than ``max_len`` is split into pieces (at whitespace when there is some
  in the second half of the window, else hard), each piece a chunk on that one line;
* every chunk keeps ``start_line``/``end_line`` (1-based, inclusive) of the source lines it
  covers; leading and trailing blank lines are not part of a chunk;
* a memory entry's marker line (``<!-- goclaw-memory id=... -->``, written by the memory API)
  ends the chunk before it, so one chunk never spans two entries; the entry's first chunk
  starts at the marker line (its hit id covers the whole entry) but its text leaves the marker
  out: snippets, tool results and the Memory Context show the memory, not its bookkeeping.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from functools import cached_property

DEFAULT_MAX_CHUNK_LEN = 1000
_NON_SPACE = re.compile(r"\S")
_ENTRY_MARKER = re.compile(r"<!-- goclaw-memory .* -->\s*")


def is_entry_marker(line: str) -> bool:
    """A memory entry's marker line (:mod:`goclaw_memory.entries`): a chunk boundary."""
    return line.startswith("<!-- goclaw-memory ") and _ENTRY_MARKER.fullmatch(line) is not None


@dataclass(frozen=True)
class TextChunk:
    text: str
    start_line: int
    end_line: int

    @cached_property
    def hash(self) -> str:
        """Computed once (the indexer asks several times per chunk), then a plain attribute."""
        return content_hash(self.text)


def hash_all(chunks: list[TextChunk]) -> None:
    """Compute the :attr:`TextChunk.hash` of these chunks now, in one loop (an index run asks
    for every one; 100,000 through the cached property: 0.54 s)."""
    sha = hashlib.sha256
    for c in chunks:
        found = c.__dict__
        if "hash" not in found:
            found["hash"] = sha(c.text.encode("utf-8")).hexdigest()[:32]  # as content_hash


def content_hash(text: str) -> str:
    """Hex of the first 16 bytes of SHA-256, used for documents and chunks."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def split_long_line(line: str, max_len: int) -> list[str]:
    """Split one over-long line into pieces of at most ``max_len`` characters.

    Linear in the line's length: the loop moves an index along the line instead of copying
    the rest of it at each cut (copying it makes a 16 MB line take about two minutes).
    """
    pieces: list[str] = []
    n = len(line)
    pos = 0
    while n - pos > max_len:
        end = pos + max_len
        cut = max(line.rfind(" ", pos, end), line.rfind("\t", pos, end))
        if cut - pos < max_len // 2:
            cut = end  # no usable whitespace: hard cut
        piece = line[pos:cut].rstrip()
        if piece:
            pieces.append(piece)
        nxt = _NON_SPACE.search(line, cut)  # what lstrip() would drop
        pos = nxt.start() if nxt else n
    if line[pos:].strip():
        pieces.append(line[pos:])
    return pieces


def chunk_text(text: str, max_len: int = DEFAULT_MAX_CHUNK_LEN) -> list[TextChunk]:
    """Chunk ``text`` per the rules in the module docstring."""
    if max_len <= 0:
        max_len = DEFAULT_MAX_CHUNK_LEN
    half = max_len // 2
    lines = text.split("\n")
    chunks: list[TextChunk] = []
    buf: list[str] = []
    buf_len = 0
    start = 0
    last_content = 0  # line number of the last non-blank line in buf

    def flush() -> None:
        nonlocal buf, buf_len, start, last_content
        if buf:
            body = "\n".join(buf).rstrip()
            if body.strip():
                chunks.append(TextChunk(body, start, last_content))
        buf, buf_len, start, last_content = [], 0, 0, 0

    for number, raw in enumerate(lines, start=1):
        line = raw[:-1] if raw.endswith("\r") else raw
        if is_entry_marker(line):
            flush()
            start = number  # the entry's chunk covers its marker line, its text does not
            continue
        blank = not line.strip()
        if blank:
            if not buf:
                continue  # leading blank lines do not start a chunk
            if buf_len >= half:
                flush()  # paragraph break once the chunk is at least half full
                continue
            # A blank line inside a short chunk is kept (it separates paragraphs).
            if buf_len + 1 > max_len:
                flush()
                continue
            buf.append("")  # whitespace-only lines count (and are stored) as empty
            buf_len += 1
            continue
        if len(line) > max_len:
            flush()
            for piece in split_long_line(line, max_len):
                chunks.append(TextChunk(piece, number, number))
            continue
        added = len(line) + (1 if buf else 0)
        if buf and buf_len + added > max_len:
            flush()
            added = len(line)
        if not buf:
            start = start or number
        buf.append(line)
        buf_len += added
        last_content = number
        if buf_len >= max_len:
            flush()
    flush()
    return chunks
