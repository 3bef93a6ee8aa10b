"""The search-backend conformance suite: memory indexing and hybrid search as every backend
must give them (channels and fusion, scope isolation, reindexing, embedder switches and
failures, the CLI, the tools and the extra tiers), on SQLite and PostgreSQL. Every built-in
backend passes it; import it into a test module to run it on yours (see
:mod:`goclaw_memory.testing`)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from sqlalchemy import text

from goclaw_memory.testing.filter_suite import (  # noqa: F401 - the suite's filter tests
    test_filter_by_date_range_reads_file_and_entry_dates,
    test_filter_by_path_prefix_and_scope,
    test_filter_by_tags_counts_only_tagged_hits,
)
from goclaw_memory.testing.helpers import EmbedderPlugin, chunk_rows, run_cli, write

FILLER = [
    "Quarterly revenue grew by twelve percent after the spring campaign.",
    "The build pipeline runs unit tests before every merge to main.",
    "Remember to water the tomato plants on the balcony twice a week.",
    "The team retrospective happens every other Friday afternoon.",
    "Invoices are sent on the first business day of each month.",
    "The staging server was moved to a new region last autumn.",
    "Our style guide prefers short sentences and active voice.",
    "The quarterly board meeting covers hiring and budget plans.",
]


@pytest.fixture
def search_backend() -> str | None:
    """The ``[plugins.memory] backend`` every test runs with; None: the configured default.
    Override this fixture in your module to run the suite on your backend."""
    return None


@pytest.fixture(autouse=True)
def selected_search_backend(search_backend: str | None, monkeypatch: pytest.MonkeyPatch) -> None:
    """Selects ``search_backend`` through the environment, so the CLI tests select it too."""
    if search_backend is not None:
        monkeypatch.setenv("GOCLAW_PLUGINS__MEMORY__BACKEND", search_backend)


@pytest.fixture
def plugin() -> EmbedderPlugin:
    return EmbedderPlugin()


@pytest.fixture
def eng(make_engine: Any, plugin: EmbedderPlugin, search_backend: str | None) -> Any:
    """An engine with the real default (static) embedder, agent ``ada`` and the backend."""
    e = make_engine(extra_plugins=[("testemb", plugin)])
    e.agents.create("ada")
    assert search_backend is None or e.memory.backend.name == search_backend
    return e


def ada_dir(eng: Any) -> Path:
    return Path(eng.agent_dir(eng.agents.get("ada")))


def fill(root: Path, n: int = len(FILLER)) -> None:
    for i, line in enumerate(FILLER[:n]):
        write(root, f"memory/notes-{i}.md", f"# Note {i}\n\n{line}\n")


# --------------------------------------------------------------------------- channels


def test_lexical_only_hit_ranks_first(eng: Any) -> None:
    root = ada_dir(eng)
    fill(root)
    write(root, "memory/codes.md", "Misc\n\nThe vault access code for the archive is XK-4471-ZQ.\n")
    eng.memory.index("ada")
    for channel in ("hybrid", "lexical"):
        hits = eng.memory.search("XK-4471-ZQ", "ada", channel=channel)
        assert hits, channel
        assert hits[0].path == "memory/codes.md", (channel, [h.path for h in hits])
        assert "XK-4471-ZQ" in hits[0].snippet
    lexical = eng.memory.search("XK-4471-ZQ", "ada", channel="lexical")
    assert [h.path for h in lexical] == ["memory/codes.md"]  # no other doc has these terms
    assert lexical[0].score == pytest.approx(1.0)  # single channel, normalised by the max


def test_paraphrase_found_through_vector_channel(eng: Any) -> None:
    root = ada_dir(eng)
    fill(root)
    write(root, "memory/pets.md", "The cat sleeps on the warm windowsill all afternoon.\n")
    eng.memory.index("ada")
    query = "feline napping spot"
    words = set(re.findall(r"\w+", query.lower()))
    corpus = " ".join([*FILLER, "The cat sleeps on the warm windowsill all afternoon."]).lower()
    assert not words & set(re.findall(r"\w+", corpus)), "the query must share no word with any doc"
    assert eng.memory.search(query, "ada", channel="lexical") == []
    vector = eng.memory.search(query, "ada", channel="vector")
    assert vector[0].path == "memory/pets.md"
    hybrid = eng.memory.search(query, "ada")
    assert hybrid[0].path == "memory/pets.md"
    # Vector-only: the single-channel rule gives the cosine similarity at weight 1.0.
    assert hybrid[0].score == pytest.approx(vector[0].score)


def test_hybrid_weights_follow_decisions(eng: Any) -> None:
    root = ada_dir(eng)
    write(root, "memory/a.md", "Backups of the ledger database run nightly at two.\n")
    write(root, "memory/b.md", "Nightly jobs include log rotation.\n")
    eng.memory.index("ada")
    q = "ledger backups nightly"
    eng.plugin_settings("memory").rerank = "none"  # the fusion itself, before the reranker
    lex = {h.path: h.score for h in eng.memory.search(q, "ada", channel="lexical")}
    vec = {h.path: h.score for h in eng.memory.search(q, "ada", channel="vector")}
    cfg = eng.plugin_settings("memory")
    assert (cfg.text_weight, cfg.vector_weight) == (0.7, 0.3)  # the measured default (docs/decisions.md)
    for tw, vw in ((0.7, 0.3), (0.3, 0.7)):  # and the reverse weights, selectable
        cfg.text_weight, cfg.vector_weight = tw, vw
        hyb = {h.path: h.score for h in eng.memory.search(q, "ada")}
        for path in hyb:
            expected = tw * lex.get(path, 0.0) + vw * vec.get(path, 0.0)
            assert hyb[path] == pytest.approx(expected, abs=1e-5)
    assert max(lex.values()) == pytest.approx(1.0)


# --------------------------------------------------------------------------- scopes


def test_scope_isolation_between_agents(eng: Any) -> None:
    eng.agents.create("bob")
    write(ada_dir(eng), "MEMORY.md", "Ada keeps the harbour lighthouse schedule.\n")
    bob_dir = Path(eng.agent_dir(eng.agents.get("bob")))
    write(bob_dir, "MEMORY.md", "Bob keeps the harbour lighthouse secret ZEBRA-9.\n")
    eng.memory.index()
    for channel in ("hybrid", "lexical", "vector"):
        for who, other in (("ada", "Bob"), ("bob", "Ada")):
            hits = eng.memory.search("harbour lighthouse ZEBRA-9 schedule", who, channel=channel, limit=50)
            assert hits, (who, channel)
            assert all(other not in h.snippet for h in hits), (who, channel)


def test_scope_isolation_between_users(eng: Any) -> None:
    root = ada_dir(eng)
    write(root, "MEMORY.md", "Agent level: the office wifi is called Orchard.\n")
    write(root, "users/u1/memory/private.md", "U1 secret: orchard password PLUM-111.\n")
    write(root, "users/u2/memory/notes.md", "U2 secret: orchard password PEAR-222.\n")
    report = eng.memory.index("ada")
    assert report.files_scanned == 3
    q = "orchard password secret"
    for channel in ("hybrid", "lexical", "vector"):
        none = eng.memory.search(q, "ada", channel=channel, limit=50)
        assert {h.path for h in none} == {"MEMORY.md"}, channel
        u1 = eng.memory.search(q, "ada", "u1", channel=channel, limit=50)
        assert {h.path for h in u1} == {"MEMORY.md", "users/u1/memory/private.md"}, channel
        assert all("PEAR" not in h.snippet for h in u1)
        u2 = eng.memory.search(q, "ada", "u2", channel=channel, limit=50)
        assert {h.path for h in u2} == {"MEMORY.md", "users/u2/memory/notes.md"}, channel
    # Indexing one user touches only that user's scope.
    write(root, "users/u2/memory/notes.md", "U2 changed.\n")
    write(root, "MEMORY.md", "Agent level changed.\n")
    only = eng.memory.index("ada", "u2")
    assert only.files_scanned == 1 and only.rechunked == 1


def test_user_boost_and_dedup_user_copy_wins(eng: Any) -> None:
    root = ada_dir(eng)
    same = "Standup is at nine thirty in the blue room.\n"
    write(root, "MEMORY.md", same)
    write(root, "users/u1/MEMORY.md", same)
    write(root, "memory/other.md", "Lunch is at noon in the cafeteria room.\n")
    eng.memory.index("ada")
    for channel in ("lexical", "vector", "hybrid"):
        agent_only = {h.path: h for h in eng.memory.search("standup blue room", "ada", channel=channel)}
        with_user = eng.memory.search("standup blue room", "ada", "u1", channel=channel)
        keys = [(h.path.removeprefix("users/u1/"), h.start_line) for h in with_user]
        assert len(keys) == len(set(keys)), "deduplicated by (path, start_line)"
        top = with_user[0]
        assert top.path == "users/u1/MEMORY.md" and top.scope == "user", channel
        assert "MEMORY.md" not in {h.path for h in with_user}  # the agent copy lost the tie
        assert top.score == pytest.approx(agent_only["MEMORY.md"].score * 1.2, rel=1e-4), channel


# --------------------------------------------------------------------------- re-indexing


def test_reindex_after_edit_replaces_only_that_document(eng: Any) -> None:
    root = ada_dir(eng)
    fill(root, 3)
    eng.memory.index("ada")
    agent_id = eng.agents.get("ada").id
    before = {r[2]: r[0] for r in chunk_rows(eng, agent_id)}
    write(root, "memory/notes-1.md", "# Note 1\n\nThe pipeline now deploys with PINEAPPLE-77.\n")
    report = eng.memory.index("ada")
    assert (report.rechunked, report.skipped_unchanged, report.removed) == (1, 2, 0)
    after = {r[2]: r[0] for r in chunk_rows(eng, agent_id)}
    assert after["memory/notes-0.md"] == before["memory/notes-0.md"]
    assert after["memory/notes-2.md"] == before["memory/notes-2.md"]
    assert after["memory/notes-1.md"] != before["memory/notes-1.md"]
    assert eng.memory.search("PINEAPPLE-77", "ada")[0].path == "memory/notes-1.md"
    assert eng.memory.search("unit tests before every merge", "ada", channel="lexical") == []
    # A deleted file leaves the index.
    (root / "memory/notes-2.md").unlink()
    report = eng.memory.index("ada")
    assert report.removed == 1
    assert "memory/notes-2.md" not in {r[2] for r in chunk_rows(eng, agent_id)}


def test_unchanged_reindex_embeds_nothing(make_engine: Any, plugin: EmbedderPlugin) -> None:
    eng = make_engine(extra_plugins=[("testemb", plugin)], plugins={"embeddings": {"provider": "counting"}})
    eng.agents.create("ada")
    root = ada_dir(eng)
    fill(root)
    n0 = len(plugin.counting.texts)  # other plugins (skills) may embed too: count deltas
    first = eng.memory.index("ada")
    n = len(plugin.counting.texts)
    assert n - n0 == first.chunks_embedded == len(FILLER)
    second = eng.memory.index("ada")
    assert (second.rechunked, second.chunks_embedded, second.skipped_unchanged) == (0, 0, len(FILLER))
    assert len(plugin.counting.texts) == n
    # Edit one paragraph of a two-chunk document: only the new chunk text is embedded.
    long_a = "Alpha paragraph. " * 40
    long_b = "Beta paragraph. " * 40
    write(root, "memory/two.md", f"{long_a}\n\n{long_b}\n")
    eng.memory.index("ada")
    n = len(plugin.counting.texts)
    write(root, "memory/two.md", f"{long_a}\n\nGamma paragraph replaced.\n")
    third = eng.memory.index("ada")
    assert plugin.counting.texts[n:] == ["Gamma paragraph replaced."]
    assert third.cache_hits == 1 and third.chunks_embedded == 1
    # Content that existed before (same text in a new file) comes from the cache too.
    write(root, "memory/copy.md", FILLER[0] + "\n")
    n = len(plugin.counting.texts)
    fourth = eng.memory.index("ada")
    assert len(plugin.counting.texts) == n + 1  # "# Note 0\n\n..." differs from the bare line
    assert fourth.rechunked == 1


def test_model_switch_never_mixes_dimensions(make_engine: Any, plugin: EmbedderPlugin) -> None:
    eng = make_engine(extra_plugins=[("testemb", plugin)])  # static, 256-d
    eng.agents.create("ada")
    root = ada_dir(eng)
    fill(root)
    write(root, "memory/pets.md", "The cat sleeps on the warm windowsill.\n")
    eng.memory.index("ada")
    agent_id = eng.agents.get("ada").id
    assert {r[8] for r in chunk_rows(eng, agent_id)} == {256}
    eng2 = make_engine(extra_plugins=[("testemb", plugin)], plugins={"embeddings": {"provider": "hash"}})
    # Before re-indexing, no row is in the new model's space: vectors are not mixed, and the
    # full-text channel still answers.
    assert eng2.memory.search("cat windowsill", "ada", channel="vector") == []
    assert eng2.memory.search("cat windowsill", "ada")[0].path == "memory/pets.md"
    report = eng2.memory.index("ada")
    assert report.reembedded == len(FILLER) + 1 and report.rechunked == 0
    rows = chunk_rows(eng2, agent_id)
    assert {(r[6], r[7], r[8]) for r in rows} == {("test-hash", "hash-64", 64)}
    assert eng2.memory.search("cat windowsill", "ada", channel="vector")[0].path == "memory/pets.md"
    # And back: the static engine re-embeds again (from the embedding cache, no new model calls).
    back = eng.memory.index("ada")
    assert back.reembedded == len(FILLER) + 1 and back.chunks_embedded == 0
    assert {r[8] for r in chunk_rows(eng, agent_id)} == {256}


FTS_INPUTS = [
    '"unbalanced quote',
    "NEAR(alpha beta, 2)",
    "alph*",
    "-alpha",
    "(alpha OR",
    "alpha AND NOT beta",
    "'; DROP TABLE memory_chunks; --",
    "text: alpha",
    "^alpha",
    "{text}: alpha",
    "alpha & beta | !gamma <-> delta",
    "O'Reilly's \"book\"",
    "\\x00 \\ backslash",
    "",
    "   ",
    "***",
]


def test_fts_syntax_in_input_is_searched_as_text(eng: Any) -> None:
    root = ada_dir(eng)
    write(root, "memory/a.md", "alpha beta gamma delta NEAR text book reilly\n")
    eng.memory.index("ada")
    vocabulary = {"alpha", "beta", "gamma", "delta", "near", "text", "book", "reilly"}
    for query in FTS_INPUTS:
        for channel in ("hybrid", "lexical"):
            hits = eng.memory.search(query, "ada", channel=channel)
            if channel == "lexical":
                words = set(re.findall(r"\w+", query.lower())) & vocabulary
                assert bool(hits) == bool(words), (query, hits)
    with eng.db.engine.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM memory_chunks")).scalar_one() == 1


def test_operator_words_are_plain_terms(eng: Any) -> None:
    root = ada_dir(eng)
    write(root, "memory/ops.md", "Use NEAR and OR and NOT as plain words here.\n")
    write(root, "memory/other.md", "Nothing relevant.\n")
    eng.memory.index("ada")
    for q in ("NEAR", "NEAR*", '"NEAR', "NEAR(plain)", "-NEAR"):
        assert [h.path for h in eng.memory.search(q, "ada", channel="lexical")] == ["memory/ops.md"]
    # English stopwords are not indexed (goclaw_search.tokenize): no match, and no error.
    for q in ("OR", "NOT", "AND"):
        assert eng.memory.search(q, "ada", channel="lexical") == []


def test_any_term_matches(eng: Any) -> None:
    root = ada_dir(eng)
    write(root, "memory/a.md", "Apples are red.\n")
    write(root, "memory/b.md", "Bananas are yellow.\n")
    eng.memory.index("ada")
    paths = {h.path for h in eng.memory.search("apples bananas kiwis", "ada", channel="lexical")}
    assert paths == {"memory/a.md", "memory/b.md"}


# --------------------------------------------------------------------------- files


def test_memory_paths_exclusions_and_fallback(eng: Any) -> None:
    root = ada_dir(eng)
    write(root, "memory.md", "fallback file WOMBAT\n")
    write(root, "memory/deep/er/x.md", "deep WOMBAT\n")
    write(root, "memory/.git/y.md", "git WOMBAT\n")
    write(root, "memory/node_modules/z.md", "npm WOMBAT\n")
    write(root, "memory/.hidden/h.md", "hidden WOMBAT\n")
    write(root, "memory/notes.txt", "not markdown WOMBAT\n")
    write(root, "other/o.md", "outside WOMBAT\n")
    eng.memory.index("ada")
    paths = {h.path for h in eng.memory.search("wombat", "ada", channel="lexical", limit=50)}
    assert paths == {"memory.md", "memory/deep/er/x.md"}
    write(root, "MEMORY.md", "main file WOMBAT\n")
    eng.memory.index("ada")
    paths = {h.path for h in eng.memory.search("wombat", "ada", channel="lexical", limit=50)}
    assert paths == {"MEMORY.md", "memory/deep/er/x.md"}


def test_chunks_keep_line_ranges(eng: Any) -> None:
    root = ada_dir(eng)
    paras = [f"Paragraph {i} " + ("word " * 60).strip() for i in range(12)]
    body = "\n\n".join(paras) + "\n"
    write(root, "MEMORY.md", body)
    eng.memory.index("ada")
    lines = body.split("\n")
    rows = chunk_rows(eng, eng.agents.get("ada").id)
    assert len(rows) > 3
    for r in rows:
        assert len(r[5]) <= 1000
        assert "\n".join(lines[r[3] - 1 : r[4]]).strip() == r[5]


def test_memory_get_is_confined(eng: Any, tmp_path: Path) -> None:
    root = ada_dir(eng)
    write(root, "MEMORY.md", "one\ntwo\nthree\n")
    write(root, "users/u1/memory/p.md", "private\n")
    write(root, "SOUL.md", "not memory\n")
    secret = write(tmp_path, "secret.md", "outside\n")
    (root / "memory").mkdir(exist_ok=True)
    (root / "memory/link.md").symlink_to(secret)
    got = eng.memory.get("ada", "MEMORY.md", from_line=2, to_line=3)
    assert got["text"] == "two\nthree" and got["total_lines"] == 3
    assert eng.memory.get("ada", "memory/p.md", "u1")["text"] == "private"
    assert eng.memory.get("ada", "users/u1/memory/p.md", "u1")["path"] == "users/u1/memory/p.md"
    from goclaw.errors import GoclawError

    for bad, user in [
        ("../../etc/passwd", None),
        ("/etc/passwd", None),
        ("SOUL.md", None),
        ("memory/link.md", None),
        ("users/u1/memory/p.md", None),
        ("users/u1/memory/p.md", "u2"),
        ("memory/../SOUL.md", None),
    ]:
        with pytest.raises(GoclawError):
            eng.memory.get("ada", bad, user)


def test_symlink_escape_is_not_indexed(eng: Any, tmp_path: Path) -> None:
    root = ada_dir(eng)
    secret = write(tmp_path, "outside.md", "OUTSIDE-SECRET\n")
    (root / "memory").mkdir(parents=True, exist_ok=True)
    (root / "memory/escape.md").symlink_to(secret)
    eng.memory.index("ada")
    assert eng.memory.search("OUTSIDE-SECRET", "ada", channel="lexical") == []


# --------------------------------------------------------------------------- degraded modes


def test_no_embedder_means_full_text_only(make_engine: Any, workspace: Path, database_url: Any) -> None:
    eng = make_engine(plugins={"embeddings": {"provider": "none"}})
    eng.agents.create("ada")
    write(ada_dir(eng), "MEMORY.md", "The cat sleeps on the warm windowsill.\n")
    report = eng.memory.index("ada")
    assert report.embedding is None and report.embedding_error is None
    response = eng.memory.search_response("cat", "ada")
    assert [h.path for h in response.hits] == ["MEMORY.md"]
    assert response.channels == ["lexical"] and "full-text" in response.notes[0]
    assert eng.memory.search("feline", "ada", channel="vector") == []
    (workspace / "goclaw.toml").write_text('[plugins.embeddings]\nprovider = "none"\n')
    res = run_cli(
        ["memory", "search", "cat", "--agent", "ada", "--json"],
        workspace=workspace,
        database_url=database_url,
    )
    assert res.code == 0, res.err
    assert [h["path"] for h in json.loads(res.out)] == ["MEMORY.md"]
    assert "note:" in res.err and "full-text" in res.err


def test_failing_embedder_degrades(make_engine: Any, plugin: EmbedderPlugin) -> None:
    eng = make_engine(extra_plugins=[("testemb", plugin)], plugins={"embeddings": {"provider": "failing"}})
    eng.agents.create("ada")
    write(ada_dir(eng), "MEMORY.md", "The cat sleeps.\n")
    report = eng.memory.index("ada")
    assert report.rechunked == 1 and "embedding service down" in (report.embedding_error or "")
    response = eng.memory.search_response("cat", "ada")
    assert [h.path for h in response.hits] == ["MEMORY.md"]
    assert any("vector search failed" in n for n in response.notes)


# --------------------------------------------------------------------------- CLI, tools, tiers


def test_cli_index_search_get(make_engine: Any, workspace: Path, database_url: Any) -> None:
    eng = make_engine()
    eng.agents.create("ada")
    write(ada_dir(eng), "MEMORY.md", "# Facts\n\nThe release train leaves on Thursdays.\n")
    write(ada_dir(eng), "users/u1/memory/u1.md", "U1 likes the Thursday release train.\n")
    args = {"workspace": workspace, "database_url": database_url}
    res = run_cli(["memory", "index", "--json"], **args)
    assert res.code == 0, res.err
    summary = json.loads(res.out)
    assert summary["files_scanned"] == 2 and summary["rechunked"] == 2 and summary["chunks_embedded"] == 2
    res = run_cli(["memory", "index"], **args)
    assert "skipped unchanged: 2" in res.out and "chunks embedded: 0" in res.out
    res = run_cli(["memory", "search", "release train", "--agent", "ada", "--json", "--user", "u1"], **args)
    hits = json.loads(res.out)
    assert set(hits[0]) == {"id", "path", "start_line", "end_line", "score", "scope", "snippet", "tier"}
    assert {h["path"] for h in hits} == {"MEMORY.md", "users/u1/memory/u1.md"}
    res = run_cli(["memory", "search", "release", "--channel", "lexical", "--limit", "1", "--json"], **args)
    assert len(json.loads(res.out)) == 1 and json.loads(res.out)[0]["path"] == "MEMORY.md"
    res = run_cli(["memory", "get", "MEMORY.md", "--agent", "ada", "--from", "3", "--to", "3"], **args)
    assert res.out.strip() == "The release train leaves on Thursdays."
    res = run_cli(["memory", "get", "../goclaw.toml", "--agent", "ada"], **args)
    assert res.code != 0 and res.err.startswith("error:") and "Traceback" not in res.err


def test_tools_and_recall_section(eng: Any) -> None:
    write(ada_dir(eng), "MEMORY.md", "Line one.\nThe printer on floor two is named Gutenberg.\n")
    eng.memory.index("ada")
    tools = {t.name: t for t in eng.hooks.tools(eng)}
    hits = tools["memory_search"].func(query="printer Gutenberg", agent="ada")
    assert hits[0]["path"] == "MEMORY.md" and hits[0]["tier"] == "document"
    got = tools["memory_get"].func(path=hits[0]["path"], agent="ada", from_line=2, to_line=2)
    assert got["text"] == "The printer on floor two is named Gutenberg."
    from goclaw.contracts.hooks import PromptRequest, ToolInfo
    from goclaw.contracts.host import PromptContext

    section = next(
        s for s in eng.hooks.items("goclaw_prompt_sections", "prompt section") if s.name == "memory_recall"
    )
    assert section.order == 5 and section.modes == frozenset({"full", "task"})
    agent = eng.agents.get("ada")
    ctx = PromptContext(eng, PromptRequest(agent="ada"), agent, "", "full")
    assert "memory_search" in (section.render(ctx) or "")
    ctx2 = PromptContext(eng, PromptRequest(agent="ada", tools=(ToolInfo("exec"),)), agent, "", "full")
    assert section.render(ctx2) is None


class EpisodicTier:
    from goclaw import hookimpl

    @hookimpl
    def goclaw_memory_search_extra(self, engine: Any, query: str, agent: Any, user: Any, limit: int) -> Any:
        from goclaw.contracts.hooks import SearchHit

        return [
            SearchHit(id="e1", score=5.0, text="episode about printers", path="episodic:s1", tier="episodic")
        ]


def test_extra_tiers_are_merged(make_engine: Any) -> None:
    eng = make_engine(extra_plugins=[("episodic-test", EpisodicTier())])
    eng.agents.create("ada")
    write(ada_dir(eng), "MEMORY.md", "Printers are on floor two.\n")
    eng.memory.index("ada")
    hits = eng.memory.search("printers", "ada")
    assert [(h.tier, h.path) for h in hits] == [("episodic", "episodic:s1"), ("document", "MEMORY.md")]


def test_vector_candidates_get_their_full_text_score(eng: Any) -> None:
    """The full-text channel also scores the vector channel's ids (beyond its own top k), so
    the merge counts a vector hit's matching words, and never for another scope's ids."""
    root = ada_dir(eng)
    for i in range(12):
        write(root, f"memory/l{i:02d}.md", f"Ledger ledger ledger entry number {i}.\n")
    write(root, "memory/target.md", "Reconcile the ledger before the quarterly audit.\n")
    write(root, "memory/plain.md", "Nothing about accounts here.\n")
    eng.agents.create("bob")
    write(Path(eng.agent_dir(eng.agents.get("bob"))), "MEMORY.md", "Bob's ledger ledger ledger.\n")
    eng.memory.index()
    with eng.db.engine.connect() as conn:
        ids = {
            (r[0], r[1]): int(r[2])
            for r in conn.execute(text("SELECT agent_id, path, id FROM memory_chunks"))
        }
    ada, bob = eng.agents.get("ada").id, eng.agents.get("bob").id
    target, plain, other = (
        ids[(ada, "memory/target.md")],
        ids[(ada, "memory/plain.md")],
        ids[(bob, "MEMORY.md")],
    )
    hits = eng.memory.search("ledger reconcile quarterly", "ada", limit=20)
    assert {h.chunk_id for h in hits} <= {i for (a, _p), i in ids.items() if a == ada}
    assert other not in {h.chunk_id for h in hits}  # bob's matching chunk never comes back
    # a vector-only candidate is scored on full text too, and gets its real 0 there
    assert all(h.channels["lexical"] == 0 for h in hits if h.chunk_id == plain)
    assert hits[0].chunk_id == target
    for h in hits:  # every hit was scored on both channels, not 0 for lack of a lookup
        assert set(h.channels) == {"lexical", "vector"}


def test_hybrid_equals_the_formula_over_every_chunk(eng: Any) -> None:
    """The fused ranking is the weighted formula (BM25 / best BM25 x 0.7 + cosine x 0.3) applied to
    every chunk of the scope, computed here independently from the stored terms and vectors."""
    import math
    from collections import Counter

    root = ada_dir(eng)
    fill(root)
    for i in range(30):
        write(root, f"memory/extra-{i}.md", f"Ledger entry {i}: tomato budget review number {i % 7}.\n")
    eng.memory.index("ada")
    eng.plugin_settings("memory").rerank = "none"  # the fusion itself, before the reranker
    emb = eng.embedder()
    agent = eng.agents.get("ada").id
    with eng.db.engine.connect() as conn:
        rows = conn.execute(
            text("SELECT id, lex, text FROM memory_chunks WHERE agent_id = :a AND user_id = ''"), {"a": agent}
        ).all()
    query = "tomato ledger budget"
    terms = ["tomato", "ledger", "budget"]
    docs = {int(i): (lex or "").split() for i, lex, _t in rows}
    n = len(docs)
    avgdl = sum(len(d) for d in docs.values()) / n
    df = {t: sum(1 for d in docs.values() if t in d) for t in terms}
    bm25 = {}
    for i, d in docs.items():
        tf = Counter(d)
        bm25[i] = sum(
            math.log(1 + (n - df[t] + 0.5) / (df[t] + 0.5))
            * tf[t]
            * 2.2
            / (tf[t] + 1.2 * (0.25 + 0.75 * len(d) / avgdl))
            for t in terms
            if tf[t]
        )
    q = emb.embed([query])[0]
    vecs = emb.embed([t for _i, _l, t in rows])
    cos = {
        int(r[0]): max(0.0, float(np.dot(v, q) / (np.linalg.norm(v) * np.linalg.norm(q))))
        for r, v in zip(rows, vecs, strict=True)
    }
    best = max(bm25.values())
    fused = {i: 0.7 * bm25[i] / best + 0.3 * cos[i] for i in docs}
    expected = sorted(fused, key=lambda i: -fused[i])[:10]
    hits = eng.memory.search(query, "ada", limit=10)
    assert [h.chunk_id for h in hits] == expected
    for h in hits:
        assert h.score == pytest.approx(fused[h.chunk_id], rel=1e-4, abs=1e-5)


def test_a_failing_query_embedding_leaves_full_text_working(
    eng: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The embedder failing at query time must not break the search: full-text results still
    come back, with a note."""
    root = ada_dir(eng)
    fill(root)
    eng.memory.index("ada")
    emb = eng.embedder()

    def broken(_texts: Any) -> Any:
        raise RuntimeError("embedding service down")

    monkeypatch.setattr(emb, "embed", broken)
    response = eng.memory.search_response("tomato plants balcony", "ada")
    assert response.hits and response.hits[0].path == "memory/notes-2.md"
    assert response.channels == ["lexical"]
    assert any("vector search failed" in n for n in response.notes)


def test_vector_search_after_switching_embedder_says_what_to_run(
    make_engine: Any, plugin: EmbedderPlugin
) -> None:
    """Chunks embedded by one provider, searched with another and nothing
    re-indexed: the vector channel has no vector to compare, and says so (not a silent [])."""
    first = make_engine(extra_plugins=[("testemb", plugin)])
    first.agents.create("ada")
    root = ada_dir(first)
    fill(root)
    first.memory.index("ada")
    first.close()
    other = make_engine(extra_plugins=[("testemb", plugin)], plugins={"embeddings": {"provider": "hash"}})
    response = other.memory.search_response("tomato plants", "ada", channel="vector")
    assert response.hits == []
    assert any(
        "no indexed chunk has a vector from" in n and "goclaw memory index" in n for n in response.notes
    )
    hybrid = other.memory.search_response("tomato plants", "ada")
    assert hybrid.hits and any("goclaw memory index" in n for n in hybrid.notes)  # full text still answers
    other.memory.index("ada")  # re-embeds with the new provider: the note goes away
    again = other.memory.search_response("tomato plants", "ada", channel="vector")
    assert again.hits and not any("no indexed chunk" in n for n in again.notes)


class VectorTier:
    """An extra tier that reads the search's query vector (and names only what it reads)."""

    from goclaw import hookimpl

    def __init__(self) -> None:
        self.seen: list[Any] = []

    @hookimpl
    def goclaw_memory_search_extra(self, query: str, query_vector: Any) -> Any:
        self.seen.append(query_vector)
        return []


def test_the_extra_tiers_get_the_searchs_query_vector(make_engine: Any) -> None:
    tier = VectorTier()
    eng = make_engine(extra_plugins=[("vector-tier", tier)])
    eng.agents.create("ada")
    write(ada_dir(eng), "MEMORY.md", "Printers are on floor two.\n")
    eng.memory.index("ada")
    eng.memory.search("printers", "ada")
    eng.memory.search("printers", "ada", channel="lexical")  # no vector: none to hand on
    hybrid, lexical = tier.seen
    assert np.array_equal(hybrid, eng.embedder().embed(["printers"])[0])
    assert lexical is None


def test_a_search_embeds_the_query_once(make_engine: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The episodic tier searches its vectors with the memory search's query vector."""
    from goclaw.contracts.memory import NewEpisode

    eng = make_engine()
    agent = eng.agents.create("ada")
    write(ada_dir(eng), "MEMORY.md", "Printers are on floor two.\n")
    eng.memory.index("ada")
    episode = NewEpisode(agent.id, "", "s1", "The printers on floor two were repaired.", "src1")
    eng.episodic.insert(eng.episodic.build(episode))
    embedder, asked = eng.embedder(), []
    real = embedder.embed
    monkeypatch.setattr(
        embedder, "embed", lambda texts, *a, **k: asked.append(list(texts)) or real(texts, *a, **k)
    )
    hits = eng.memory.search("printers floor", "ada")
    assert asked == [["printers floor"]]
    assert {h.tier for h in hits} == {"document", "episodic"}


def test_the_own_reranker_is_called_directly(make_engine: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """No other plugin reranks: the search never goes through the kernel's hook machinery."""
    eng = make_engine()
    eng.agents.create("ada")
    write(ada_dir(eng), "MEMORY.md", "Printers are on floor two.\n\nThe printer is named Gutenberg.\n")
    eng.memory.index("ada")
    assert eng.memory.settings.rerank == "overlap"

    def no_hook(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the reranker went through the hook")

    monkeypatch.setattr(eng.hooks, "first", no_hook)
    assert eng.memory.search("printer name", "ada")
