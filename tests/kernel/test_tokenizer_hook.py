"""The tokenizer hook: tiktoken offline by default, used by sessions and the skills
section; characters ÷ 4 only as the fallback; a plugin can register its own."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

import pytest

from goclaw import hookimpl
from goclaw.errors import ConfigError
from goclaw.tokenizer import CharsTokenizer, make_tokenizer

CHINESE = "我们决定在周五之前完成数据库迁移，然后通知所有客户新的维护窗口。" * 3
CODE = "def merge(a: list[int], b: list[int]) -> list[int]:\n    return sorted(a + b)\n" * 3


def test_default_is_o200k_and_counts_what_chars_miss(engine: Any) -> None:
    tok = engine.tokenizer
    assert tok.name == "o200k_base"
    chars = CharsTokenizer()
    assert tok.count(CHINESE) > 2 * chars.count(CHINESE)  # ÷4 undercounts Chinese badly
    assert tok.count("hello world") == 2 and tok.count("") == 0
    assert make_tokenizer("cl100k_base").count(CODE) > chars.count(CODE)


def test_tiktoken_loads_offline_from_litellms_copy(tmp_path: Any) -> None:
    env = {k: v for k, v in os.environ.items() if k != "TIKTOKEN_CACHE_DIR"}
    # No network: any download attempt goes to a dead proxy and fails.
    env.update(
        {"HTTPS_PROXY": "http://127.0.0.1:9", "HTTP_PROXY": "http://127.0.0.1:9", "HOME": str(tmp_path)}
    )
    code = "from goclaw.tokenizer import make_tokenizer as m\nt = m('o200k_base')\n"
    code += "print(t.name, t.count('hi there'))"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["o200k_base", "2"]


def test_sessions_and_flush_thresholds_use_the_tokenizer(make_engine: Any) -> None:
    eng = make_engine()
    eng.agents.create("ada")
    msg = eng.sessions.append("ada", "k", "user", CHINESE)
    assert msg.token_count == eng.tokenizer.count(CHINESE) > CharsTokenizer().count(CHINESE)
    assert eng.sessions.tokens("k") == msg.token_count
    chars = make_engine(tokenizer="chars")
    assert chars.tokenizer.name == "chars"
    chars.agents.create("bo")
    assert chars.sessions.append("bo", "k2", "user", CHINESE).token_count == CharsTokenizer().count(CHINESE)


def test_skills_inline_estimate_uses_the_tokenizer() -> None:
    from types import SimpleNamespace

    from goclaw_skills.section import estimate_tokens

    skills: Any = [SimpleNamespace(record=SimpleNamespace(name="数据库迁移", description=CHINESE))]
    counted = estimate_tokens(skills, make_tokenizer("o200k_base").count)
    assert counted > estimate_tokens(skills)  # the ÷4 fallback


class Words:
    @hookimpl
    def goclaw_tokenizers(self) -> dict[str, Any]:
        return {"words": lambda engine: SimpleWords()}


class SimpleWords:
    name = "words"

    def count(self, text: str) -> int:
        return len(text.split())


def test_a_plugin_tokenizer_and_unknown_names(make_engine: Any) -> None:
    eng = make_engine(tokenizer="words", extra_plugins=[("words", Words())])
    assert eng.tokenizer.count("one two three") == 3
    with pytest.raises(ConfigError, match="unknown tokenizer 'nope'"):
        _ = make_engine(tokenizer="nope").tokenizer
