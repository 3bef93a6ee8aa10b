"""Plugin goclaw.tokens: tiktoken's o200k_base (the default) and cl100k_base, loaded offline
from litellm's copies, counting what characters ÷ 4 misses."""

from __future__ import annotations

import os
import subprocess
import sys
from types import SimpleNamespace
from typing import Any

from goclaw.tokenizer import CharsTokenizer

CHINESE = "我们决定在周五之前完成数据库迁移，然后通知所有客户新的维护窗口。" * 3
CODE = "def merge(a: list[int], b: list[int]) -> list[int]:\n    return sorted(a + b)\n" * 3


def test_default_is_o200k_and_counts_what_chars_miss(engine: Any) -> None:
    tok = engine.tokenizer
    assert tok.name == "o200k_base"
    chars = CharsTokenizer()
    assert tok.count(CHINESE) > 2 * chars.count(CHINESE)  # ÷4 undercounts Chinese badly
    assert tok.count("hello world") == 2 and tok.count("") == 0
    assert tok.count("<|endoftext|>") > 1  # special tokens count as text, never raise


def test_cl100k_on_request(make_engine: Any) -> None:
    tok = make_engine(tokenizer="cl100k_base").tokenizer
    assert tok.name == "cl100k_base"
    assert tok.count(CODE) > CharsTokenizer().count(CODE)


def test_sessions_count_with_o200k(engine: Any) -> None:
    engine.agents.create("ada")
    msg = engine.sessions.append("ada", "k", "user", CHINESE)
    assert msg.token_count == engine.tokenizer.count(CHINESE) > CharsTokenizer().count(CHINESE)


def test_tiktoken_loads_offline_from_litellms_copy_and_not_before_it_is_used(tmp_path: Any) -> None:
    env = {k: v for k, v in os.environ.items() if k != "TIKTOKEN_CACHE_DIR"}
    # No network: any download attempt goes to a dead proxy and fails.
    env.update(
        {"HTTPS_PROXY": "http://127.0.0.1:9", "HTTP_PROXY": "http://127.0.0.1:9", "HOME": str(tmp_path)}
    )
    code = (
        "import sys\nfrom goclaw import Engine\n"
        f"e = Engine.open({str(tmp_path / 'ws')!r})\n"
        "print('tiktoken' in sys.modules)\n"
        "t = e.tokenizer\nprint(t.name, t.count('hi there'), 'tiktoken' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["False", "o200k_base", "2", "True"]


def test_skills_inline_estimate_uses_the_tokenizer(engine: Any) -> None:
    from goclaw_skills.section import estimate_tokens

    skills: Any = [SimpleNamespace(record=SimpleNamespace(name="数据库迁移", description=CHINESE))]
    counted = estimate_tokens(skills, engine.tokenizer.count)
    assert counted > estimate_tokens(skills)  # the ÷4 fallback
