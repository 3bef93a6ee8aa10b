"""The tokenizer hook: the setting ``tokenizer`` picks a plugin's tokenizer, used by sessions;
characters ÷ 4 only as the fallback, with a warning when the named tokenizer is unavailable."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from goclaw import hookimpl
from goclaw.errors import ConfigError
from goclaw.tokenizer import CharsTokenizer, make_tokenizer

CHINESE = "我们决定在周五之前完成数据库迁移，然后通知所有客户新的维护窗口。" * 3


class Words:
    @hookimpl
    def goclaw_tokenizers(self) -> dict[str, Any]:
        return {"words": lambda engine: SimpleWords(), "broken": _broken}


def _broken(engine: Any) -> Any:
    raise OSError("no encoding file")


class SimpleWords:
    name = "words"

    def count(self, text: str) -> int:
        return len(text.split())


def test_chars_counts_characters_over_four_rounded_up() -> None:
    assert [CharsTokenizer().count(t) for t in ("", "a", "abcd", "abcde")] == [0, 1, 1, 2]
    assert make_tokenizer("chars").name == "chars"


def test_sessions_use_the_tokenizer(make_engine: Any) -> None:
    eng = make_engine(tokenizer="words", extra_plugins=[("words", Words())])
    eng.agents.create("ada")
    msg = eng.sessions.append("ada", "k", "user", "one two three four five six seven eight")
    assert msg.token_count == 8 and eng.sessions.tokens("k") == 8  # not ÷ 4 (10)
    chars = make_engine(tokenizer="chars")
    assert chars.tokenizer.name == "chars"
    chars.agents.create("bo")
    assert chars.sessions.append("bo", "k2", "user", CHINESE).token_count == CharsTokenizer().count(CHINESE)


def test_a_plugin_tokenizer_and_unknown_names(make_engine: Any) -> None:
    eng = make_engine(tokenizer="words", extra_plugins=[("words", Words())])
    assert eng.tokenizer.count("one two three") == 3
    with pytest.raises(ConfigError, match=r"unknown tokenizer 'nope'; known: .*chars"):
        _ = make_engine(tokenizer="nope").tokenizer


def test_a_failing_factory_falls_back_to_chars_loudly(
    make_engine: Any, caplog: pytest.LogCaptureFixture
) -> None:
    eng = make_engine(tokenizer="broken", extra_plugins=[("words", Words())])
    with caplog.at_level(logging.WARNING, logger="goclaw.tokenizer"):
        assert eng.tokenizer.name == "chars"
    assert "tokenizer broken unavailable (OSError: no encoding file)" in caplog.text


@pytest.mark.parametrize("name", ["o200k_base", "cl100k_base"])
def test_a_declared_tokenizer_of_a_disabled_plugin_falls_back_to_chars_loudly(
    name: str, make_engine: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """The default setting with goclaw.tokens off counts characters ÷ 4 (its manifest names the
    encodings), where an unknown name is an error."""
    eng = make_engine(tokenizer=name, plugins={"disable": ["goclaw.tokens"]})
    with caplog.at_level(logging.WARNING, logger="goclaw.tokenizer"):
        assert eng.tokenizer.name == "chars"
    assert f"tokenizer {name} unavailable (plugin goclaw.tokens is not active)" in caplog.text
