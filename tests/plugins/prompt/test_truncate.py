"""The truncation pipeline (docs/decisions.md): every edge, counted in characters."""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import given, settings
from hypothesis import strategies as st

from goclaw_prompt.truncate import TruncateConfig, build_context_files


@dataclass
class F:
    name: str
    content: str
    missing: bool = False


def marker(name: str) -> str:
    return f"[...truncated, read {name} for full content...]"


def body(n: int, seed: str = "abcdefghij") -> str:
    return (seed * (n // len(seed) + 1))[:n]


def test_exactly_the_per_file_limit_is_not_truncated() -> None:
    text = body(20_000)
    [out] = build_context_files([F("SOUL.md", text)])
    assert out.content == text
    assert out.truncated is False
    assert out.chars == 20_000 == out.original_chars


def test_one_over_the_limit_keeps_70_head_marker_line_and_20_tail() -> None:
    text = "".join(chr(ord("a") + i % 26) for i in range(20_001))
    [out] = build_context_files([F("SOUL.md", text)])
    expected = text[:14_000] + "\n" + marker("SOUL.md") + "\n" + text[20_001 - 4_000 :]
    assert out.content == expected
    assert out.truncated is True
    assert out.original_chars == 20_001
    # the marker sits on its own line
    assert ("\n" + marker("SOUL.md") + "\n") in out.content


def test_total_budget_exhausted_part_way_through_a_file() -> None:
    a, b, c = body(15_000, "A"), body(15_000, "B"), body(500, "C")
    out = build_context_files([F("AGENTS.md", a), F("SOUL.md", b), F("TOOLS.md", c)])
    assert [o.name for o in out] == ["AGENTS.md", "SOUL.md"]  # TOOLS.md: remaining 0 < 64
    assert out[0].content == a and not out[0].truncated
    tail = "\n" + marker("SOUL.md")
    assert out[1].content == b[: 9_000 - len(tail)] + tail
    assert out[1].chars == 9_000  # never more than the remaining budget
    assert sum(o.chars for o in out) == 24_000


def test_min_file_budget_floor_stops_below_64() -> None:
    cfg = TruncateConfig(total_max_chars=1_000)
    # 937 used -> 63 left: the next file is not even started
    out = build_context_files([F("AGENTS.md", body(937)), F("SOUL.md", body(500))], cfg)
    assert [o.name for o in out] == ["AGENTS.md"]
    # 936 used -> exactly 64 left: the next file gets a 64-character clamp
    out = build_context_files([F("AGENTS.md", body(936)), F("SOUL.md", body(500, "s"))], cfg)
    assert [o.name for o in out] == ["AGENTS.md", "SOUL.md"]
    assert out[1].chars == 64
    assert out[1].truncated
    assert out[1].content.endswith(marker("SOUL.md"))


def test_tiny_budget_uses_a_counted_ellipsis() -> None:
    cfg = TruncateConfig(total_max_chars=20, min_file_budget=5)
    [out] = build_context_files([F("SOUL.md", body(100))], cfg)
    assert out.content == body(100)[:19] + "…"
    assert out.chars == 20


def test_empty_whitespace_and_missing_files_are_skipped_and_cost_nothing() -> None:
    cfg = TruncateConfig(total_max_chars=100, min_file_budget=10)
    files = [
        F("AGENTS.md", ""),
        F("SOUL.md", " \n\t  \n"),
        F("TOOLS.md", "x" * 50, missing=True),
        F("USER.md", body(100, "u")),
    ]
    out = build_context_files(files, cfg)
    assert [o.name for o in out] == ["USER.md"]
    assert out[0].content == body(100, "u")  # the full budget was still there


def test_non_ascii_is_counted_in_characters_and_never_split() -> None:
    text = "😀é中" * 7_000  # 21,000 characters, 63,000+ bytes in UTF-8
    [out] = build_context_files([F("USER.md", text)])
    assert out.truncated
    head, _, rest = out.content.partition("\n" + marker("USER.md") + "\n")
    assert head == text[:14_000]
    assert rest == text[-4_000:]
    out.content.encode("utf-8")  # no lone surrogates / split characters
    # a clamp in the middle of multibyte text
    cfg = TruncateConfig(total_max_chars=101, min_file_budget=1)
    [clamped] = build_context_files([F("USER.md", "中" * 500)], cfg)
    assert clamped.chars == 101
    assert clamped.content.startswith("中" * (101 - len("\n" + marker("USER.md"))))


def test_everything_is_configurable() -> None:
    cfg = TruncateConfig(max_chars_per_file=1_000, total_max_chars=5_000, head_ratio=0.5, tail_ratio=0.3)
    text = body(3_000, "0123456789")
    [out] = build_context_files([F("X.md", text)], cfg)
    assert out.content == text[:500] + "\n" + marker("X.md") + "\n" + text[-300:]


def test_small_limits_keep_the_70_20_shape_and_the_marker_comes_on_top() -> None:
    # Head and tail never shrink to fit the marker (100 chars at a 50-char limit would give
    # 'aa\n[marker]\na'): head 70 % + marker + tail 20 % of the limit, always.
    text = "".join(chr(ord("a") + i % 26) for i in range(100))
    cfg = TruncateConfig(max_chars_per_file=50)
    [out] = build_context_files([F("X.md", text)], cfg)
    assert out.content == text[:35] + "\n" + marker("X.md") + "\n" + text[-10:]
    assert out.truncated
    cfg = TruncateConfig(max_chars_per_file=80)
    [out] = build_context_files([F("AGENTS.md", body(500))], cfg)
    assert out.content == body(500)[:56] + "\n" + marker("AGENTS.md") + "\n" + body(500)[-16:]
    # a limit smaller than the marker: still the shape (here head 3, tail 0), marker included
    [out] = build_context_files([F("X.md", text)], TruncateConfig(max_chars_per_file=4))
    assert out.content == text[:2] + "\n" + marker("X.md") + "\n"
    # the total budget still caps the result
    cfg = TruncateConfig(max_chars_per_file=50, total_max_chars=70, min_file_budget=1)
    [out] = build_context_files([F("X.md", text)], cfg)
    assert out.chars == 70 and out.content.endswith(marker("X.md"))


def test_a_clamp_keeps_a_prefix_of_the_original_never_a_cut_through_the_marker() -> None:
    # Found by tests/system/test_fuzz.py after the 70/20 change: the clamp cut the trimmed text, so a
    # file could end in half a marker line, or start with the marker's own characters.
    text = "".join(chr(ord("a") + i % 26) for i in range(100))
    tail = "\n" + marker("X.md")
    cfg = TruncateConfig(max_chars_per_file=50, total_max_chars=90, min_file_budget=1)
    [out] = build_context_files([F("X.md", text)], cfg)
    assert out.content == text[: 90 - len(tail)] + tail
    cfg = TruncateConfig(max_chars_per_file=1, total_max_chars=2, min_file_budget=0)
    [out] = build_context_files([F("AGENTS.md", "00")], cfg)
    assert out.content == "…" and out.truncated  # over its limit: never passed whole


@settings(max_examples=200, deadline=None)
@given(
    sizes=st.lists(st.integers(min_value=0, max_value=400), min_size=1, max_size=8),
    per_file=st.integers(min_value=1, max_value=300),
    total=st.integers(min_value=0, max_value=900),
    floor=st.integers(min_value=0, max_value=100),
    alphabet=st.sampled_from(["ab", "é中😀", "x \n"]),
)
def test_property_budgets_always_hold(
    sizes: list[int], per_file: int, total: int, floor: int, alphabet: str
) -> None:
    cfg = TruncateConfig(max_chars_per_file=per_file, total_max_chars=total, min_file_budget=floor)
    files = [F(f"F{i}.md", (alphabet * 400)[:n]) for i, n in enumerate(sizes)]
    out = build_context_files(files, cfg)
    assert sum(o.chars for o in out) <= total
    for o in out:
        # the limit bounds the content kept (70 % + 20 %); the marker line comes on top
        shape = int(per_file * 0.7) + int(per_file * 0.2) + len(marker(o.name)) + 2
        assert o.chars <= max(per_file, shape)
        assert o.truncated == (o.content != next(f.content for f in files if f.name == o.name))
        if not o.truncated:
            assert o.content.strip()
