"""Property-based tests of the parsers and pipelines that eat untrusted text.

Invariants, not examples: hypothesis generates the inputs (including unicode, control
characters, CRLF, NUL bytes and giant lines) and shrinks any failure to a minimal case.
"""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from goclaw_memory.chunking import chunk_text
from goclaw_prompt.truncate import TruncateConfig, build_context_files, marker_line
from goclaw_skills.parsing import SkillParseError, parse_skill_text, split_frontmatter
from goclaw_skills.slash import looks_like_path, parse

FAST = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# Text that looks like what users write: words, blank lines, long lines, unicode, CR.
line = st.one_of(
    st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\n"), max_size=80),
    st.just(""),
    st.just("   "),
    st.text(alphabet="ab 🦀é\t", min_size=150, max_size=2500),
)
documents = st.lists(line, max_size=60).map("\n".join)


# --------------------------------------------------------------------------- chunker


@FAST
@given(text=documents, max_len=st.integers(min_value=8, max_value=1200))
@example(text="x" * 2001, max_len=1000)
@example(text="a\n\n\nb\r\nc", max_len=8)
def test_chunker_invariants(text: str, max_len: int) -> None:
    chunks = chunk_text(text, max_len)
    lines = text.split("\n")
    previous_end = 0
    for chunk in chunks:
        assert 0 < len(chunk.text) <= max_len, "no chunk over the maximum, none empty"
        assert 1 <= chunk.start_line <= chunk.end_line <= len(lines), "line ranges valid"
        assert chunk.start_line >= previous_end, "chunks are in document order"
        assert chunk.text.strip(), "no blank chunk"
        previous_end = chunk.end_line
    covered = set()
    for chunk in chunks:
        covered.update(range(chunk.start_line, chunk.end_line + 1))
    for number, raw in enumerate(lines, start=1):
        if raw.strip():
            assert number in covered, f"non-blank line {number} is in no chunk"
    # Every non-whitespace character of the document survives, in order.
    original = "".join(text.split())
    rebuilt = "".join("".join(c.text.split()) for c in chunks)
    assert rebuilt == original


# --------------------------------------------------------------------------- truncation


@dataclass
class _File:
    name: str
    content: str


names = st.sampled_from(["AGENTS.md", "SOUL.md", "TOOLS.md", "IDENTITY.md", "USER.md", "NOTES.md"])
contents = st.one_of(
    st.text(max_size=300),
    st.text(alphabet="héllo wörld 🦀\n", min_size=0, max_size=3000),
    st.just(""),
    st.just(" \n\t "),
)


@FAST
@given(
    files=st.lists(st.builds(_File, names, contents), max_size=6, unique_by=lambda f: f.name),
    per_file=st.integers(min_value=1, max_value=2000),
    total=st.integers(min_value=0, max_value=5000),
    floor=st.integers(min_value=0, max_value=200),
)
def test_truncation_stays_within_budget(files: list[_File], per_file: int, total: int, floor: int) -> None:
    cfg = TruncateConfig(max_chars_per_file=per_file, total_max_chars=total, min_file_budget=floor)
    out = build_context_files(files, cfg)
    assert sum(f.chars for f in out) <= total, "the total budget holds"
    for f in out:
        assert f.content.strip(), "empty and whitespace files cost nothing and are skipped"
        original = next(x.content for x in files if x.name == f.name)
        assert f.truncated == (f.content != original)
        f.content.encode("utf-8")  # always valid text: no split character, no lone surrogate
        if not f.truncated:
            assert f.content == original
        else:
            # What is kept is a true prefix of the original (the head), never rewritten text.
            head = f.content.split("\n" + marker_line(f.name))[0].removesuffix("…")
            assert original.startswith(head)


@FAST
@given(content=st.text(alphabet="ab🦀é\n", min_size=0, max_size=50_000))
def test_per_file_limit_default(content: str) -> None:
    [*out] = build_context_files([_File("SOUL.md", content)], TruncateConfig(total_max_chars=10**9))
    if not content.strip():
        assert out == []
        return
    [f] = out
    assert f.truncated == (len(content) > 20_000)
    if f.truncated:
        assert marker_line("SOUL.md") in f.content
        assert f.content.startswith(content[:14_000])
        assert f.content.endswith(content[-4_000:])


# --------------------------------------------------------------------------- SKILL.md frontmatter


frontmatter_like = st.one_of(
    st.text(max_size=400),
    st.builds(lambda a, b: f"---\n{a}\n---\n{b}", st.text(max_size=200), st.text(max_size=200)),
    st.builds(lambda a: "---\r\n" + a + "\r\n---\r\nbody", st.text(max_size=200)),
    st.builds(lambda a: "---\n{" + a + "}\n---\n", st.text(max_size=100)),
)


@FAST
@given(text=frontmatter_like)
@example(text="---\nname: [unclosed\n---\n")
@example(text="---\n- a list\n---\n")
@example(text='---\n{"name": 1}\n---\n')
@example(text="\ufeff---\nname: x\n---\n")
def test_frontmatter_parser_never_crashes(text: str) -> None:
    try:
        meta, body = split_frontmatter(text)
    except SkillParseError as exc:
        assert str(exc), "a parse error always says why"
        return
    assert isinstance(meta, dict)
    assert all(isinstance(k, str) for k in meta)
    assert isinstance(body, str)
    record = parse_skill_text(text, "some-skill", path="/x/SKILL.md", base_dir="/x")
    assert record.name and isinstance(record.description, str)
    assert "\r" not in record.content


# --------------------------------------------------------------------------- slash commands


@FAST
@given(text=st.text(max_size=200), prefix=st.sampled_from(["/", "!", "#"]))
@example(text="/home/user/file.txt", prefix="/")
@example(text="/use", prefix="/")
@example(text="/help   ", prefix="/")
@example(text="/\\\\server\\share", prefix="/")
def test_slash_parser_never_crashes(text: str, prefix: str) -> None:
    parsed = parse(text, prefix)
    stripped = text.strip()
    if not stripped.startswith(prefix):
        assert parsed is None, "messages without the prefix are never commands"
        return
    if parsed is None:
        return
    first = stripped[len(prefix) :].split(None, 1)[0]
    assert not looks_like_path(first), "path-like first tokens are never commands"
    assert parsed.kind in {"list", "help", "use", "direct"}
