"""Split a memory document into chunks with line ranges and their heading path.

Rules:

* a chunk never exceeds ``max_len`` characters (Unicode code points, never bytes);
* once the current chunk has reached half of ``max_len``, a blank line (paragraph break) ends it,
  and once it has reached a quarter, a Markdown heading starts the next one (section boundary);
* when the next line would push the chunk past ``max_len`` the chunk is flushed first
  ("force flush at max"), so no chunk is ever larger than the maximum;
* a single line longer than ``max_len`` is split into pieces (at whitespace when there is some
  in the second half of the window, else hard), each piece a chunk on that one line;
* a heading never stands alone: when a chunk holding only headings would be flushed before a
  line that does not fit, the line's first piece joins it (a heading longer than three quarters
  of ``max_len`` aside);
* every chunk keeps ``start_line``/``end_line`` (1-based, inclusive) of the source lines it
  covers; leading and trailing blank lines are not part of a chunk;
* every chunk keeps its ``context``: the headings above its first line (the file's title, then
  each section's), joined by " > ". The search indexes ``context`` + text
  (:attr:`TextChunk.indexed`), so words split between a title and its body still add up; what a
  user or a model is shown (``text``) stays the file's own lines. Headings inside fenced code
  blocks are not headings.
* a memory entry's marker line (``<!-- goclaw-memory id=... -->``, written by the memory API)
  ends the chunk before it, so one chunk never spans two entries; the entry's first chunk
  starts with the marker line (its hit id covers the whole entry, and search filters read the
  entry's tags and day from it). What a user or a model is shown leaves markers out
  (:func:`without_markers`): snippets, tool results and the Memory Context show the memory,
  not its bookkeeping.
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


def without_markers(text: str) -> str:
    """``text`` without its memory entry marker lines (what a user or a model is shown)."""
    if "<!-- goclaw-memory " not in text:
        return text
    return "\n".join(line for line in text.split("\n") if not is_entry_marker(line))


@dataclass(frozen=True)
class TextChunk:
    text: str
    start_line: int
    end_line: int
    context: str = ""  # the heading path above the chunk ("Title > Section"), "" for none

    @property
    def indexed(self) -> str:
        """What the search indexes (terms and vector): the heading path, then the text."""
        return f"{self.context}\n{self.text}" if self.context else self.text

    @cached_property
    def hash(self) -> str:
        """Of :attr:`indexed`; computed once (the indexer asks several times per chunk), then a
        plain attribute."""
        return content_hash(self.indexed)


def hash_all(chunks: list[TextChunk]) -> None:
    """Compute the :attr:`TextChunk.hash` of these chunks now, in one loop (an index run asks
    for every one; 100,000 through the cached property: 0.54 s)."""
    sha = hashlib.sha256
    for c in chunks:
        found = c.__dict__
        if "hash" not in found:
            body = f"{c.context}\n{c.text}" if c.context else c.text  # as TextChunk.indexed
            found["hash"] = sha(body.encode("utf-8")).hexdigest()[:32]  # as content_hash


def content_hash(text: str) -> str:
    """Hex of the first 16 bytes of SHA-256, used for documents and chunks."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


# Part of every document's hash: a change to how documents are chunked changes every hash, so
# the next index run re-chunks each file of an index made before it.
CHUNK_FORMAT = "headings-entries-1"


def document_hash(text: str) -> str:
    """A memory document's hash as the index stores it: its text's, with :data:`CHUNK_FORMAT`."""
    return content_hash(f"{CHUNK_FORMAT}\n{text}")


def _cut(line: str, pos: int, room: int) -> int:
    """Where a piece of ``line`` starting at ``pos`` and at most ``room`` long ends: at the last
    whitespace in the window's second half, else at the window's end (a hard cut)."""
    end = pos + room
    cut = max(line.rfind(" ", pos, end), line.rfind("\t", pos, end))
    return end if cut - pos < room // 2 else cut


def split_long_line(line: str, max_len: int) -> list[str]:
    """Split one over-long line into pieces of at most ``max_len`` characters.

    Linear in the line's length: the loop moves an index along the line instead of copying
    the rest of it at each cut (copying it makes a 16 MB line take about two minutes).
    """
    pieces: list[str] = []
    n = len(line)
    pos = 0
    while n - pos > max_len:
        cut = _cut(line, pos, max_len)
        piece = line[pos:cut].rstrip()
        if piece:
            pieces.append(piece)
        nxt = _NON_SPACE.search(line, cut)  # what lstrip() would drop
        pos = nxt.start() if nxt else n
    if line[pos:].strip():
        pieces.append(line[pos:])
    return pieces


_HEADING = re.compile(r" {0,3}(#{1,6})[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$")
_FENCE = re.compile(r" {0,3}(```|~~~)")


def heading(line: str) -> tuple[int, str] | None:
    """``(level, title)`` of a Markdown ATX heading line (``## Title``), else None."""
    m = _HEADING.match(line)
    return (len(m.group(1)), m.group(2).strip()) if m and m.group(2).strip() else None


class _Chunker:
    """The state of :func:`chunk_text`: the chunk being filled, the heading path, the fences.

    Where chunks end is decided in :meth:`line` (one source line at a time) with the rules of
    the module docstring; :meth:`flush` closes the current chunk."""

    def __init__(self, max_len: int) -> None:
        self.max_len = max_len
        self.chunks: list[TextChunk] = []
        self.buf: list[str] = []
        self.marks: list[tuple[int, bool]] = []  # per line of buf: (line number, is a heading)
        self.buf_len = 0
        self.start = 0
        self.last_content = 0  # line number of the last non-blank line in buf
        self.only_headings = True  # buf holds headings (and blank lines) only
        self.context = ""  # the heading path when the chunk in buf started
        self.path: list[tuple[int, str]] = []  # (level, title) of the headings above
        self.path_before: list[tuple[int, str]] = []
        self.in_fence = False

    def flush(self) -> None:
        if self.buf:
            body = "\n".join(self.buf).rstrip()
            if body.strip():
                self.chunks.append(TextChunk(body, self.start, self.last_content, self.context))
        self.buf, self.marks, self.buf_len, self.start, self.last_content = [], [], 0, 0, 0
        self.only_headings = True

    def _flush_keeping_headings(self) -> None:
        """Flush, except the headings (and blank lines) the chunk ends with: they start the
        next chunk, beside the lines they head."""
        keep = len(self.buf)
        while keep and (self.marks[keep - 1][1] or not self.buf[keep - 1]):
            keep -= 1
        if keep == 0 or not any(head for _n, head in self.marks[keep:]):
            self.flush()
            return
        first = next(i for i in range(keep, len(self.buf)) if self.buf[i])
        tail = [(self.buf[i], self.marks[i][0]) for i in range(first, len(self.buf))]
        self.buf, self.marks = self.buf[:keep], self.marks[:keep]
        self.last_content = max(n for n, _h in self.marks)
        self.path = self.path_before  # the tail's headings are entered again below
        self.flush()
        for text, number in tail:
            if text:
                self._add(text, number, len(text) + (1 if self.buf else 0), heading(text))
            else:
                self.buf.append("")
                self.marks.append((0, False))
                self.buf_len += 1

    def _add(self, line: str, number: int, added: int, title: tuple[int, str] | None) -> None:
        above = self.path if title is None else [h for h in self.path if h[0] < title[0]]
        if not self.buf:
            self.start = number
            self.context = " > ".join(t for _level, t in above)
        if title is None or not self.only_headings or not self.buf:
            # the path before the chunk's trailing headings (see _flush_keeping_headings)
            self.path_before = self.path
        self.buf.append(line)
        self.marks.append((number, title is not None))
        self.buf_len += added
        self.last_content = number
        if title is None:
            self.only_headings = False
        else:  # the headings above the next lines
            self.path = [*above, title]

    def _pieces(self, line: str, number: int) -> None:
        """A line that does not fit: its first piece joins a chunk of headings only (when at
        least a quarter of ``max_len`` is left for it), the rest are chunks on that line."""
        room = self.max_len - self.buf_len - 1
        rest = line
        if self.buf and self.only_headings and room >= self.max_len // 4:
            cut = _cut(line, 0, room)
            head = line[:cut].rstrip()
            nxt = _NON_SPACE.search(line, cut)
            rest = line[nxt.start() :] if nxt else ""
            if head:
                self._add(head, number, len(head) + 1, None)
        self.flush()
        context = " > ".join(t for _level, t in self.path)
        for piece in split_long_line(rest, self.max_len) if len(rest) > self.max_len else [rest]:
            if piece.strip():
                self.chunks.append(TextChunk(piece, number, number, context))

    def line(self, line: str, number: int) -> None:
        max_len = self.max_len
        if is_entry_marker(line):  # one chunk never spans two entries
            self.flush()
        if not line.strip():
            if not self.buf:
                return  # leading blank lines do not start a chunk
            if self.buf_len >= max_len // 2 and not self.only_headings:
                self.flush()  # paragraph break once the chunk is at least half full
                return
            # A blank line inside a short chunk is kept (it separates paragraphs).
            if self.buf_len + 1 > max_len:
                self.flush()
                return
            self.buf.append("")  # whitespace-only lines count (and are stored) as empty
            self.marks.append((0, False))
            self.buf_len += 1
            return
        title = None if self.in_fence else heading(line)
        if _FENCE.match(line):
            self.in_fence = not self.in_fence
        if title is not None and not self.only_headings and self.buf_len >= max_len // 4:
            self.flush()  # a section starts the next chunk
        added = len(line) + (1 if self.buf else 0)
        if len(line) > max_len or (self.buf and self.buf_len + added > max_len):
            if not self.only_headings:
                self._flush_keeping_headings()  # force flush at max
            if self.buf and self.buf_len + len(line) + 1 <= max_len:
                self._add(line, number, len(line) + 1, title)
            elif not self.buf and len(line) <= max_len:
                self._add(line, number, len(line), title)
            else:
                self._pieces(line, number)
            if self.buf_len >= max_len:
                self.flush()
            return
        self._add(line, number, added, title)
        if self.buf_len >= max_len:
            self.flush()


def chunk_text(text: str, max_len: int = DEFAULT_MAX_CHUNK_LEN) -> list[TextChunk]:
    """Chunk ``text`` per the rules in the module docstring."""
    if max_len <= 0:
        max_len = DEFAULT_MAX_CHUNK_LEN
    state = _Chunker(max_len)
    for number, raw in enumerate(text.split("\n"), start=1):
        state.line(raw[:-1] if raw.endswith("\r") else raw, number)
    state.flush()
    return state.chunks
