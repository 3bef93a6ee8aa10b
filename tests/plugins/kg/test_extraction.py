"""Knowledge-graph extraction without a model.

Measured on a labelled set of agent-conversation sentences (``tests/data/kg_entities.jsonl``,
scorer in ``tests/kg_eval.py``; ``python -m tests.kg_eval`` prints every miss) and on a
held-out set written after the rules and never tuned on.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from sqlmodel import select

from goclaw_kg.dedup import DedupWorker
from goclaw_kg.semantic import heuristic_extract
from goclaw_kg.tables import KGDedupCandidate, KGEntity
from goclaw_text.entities import entity_names
from tests import kg_eval
from tests.consolidation_helpers import kg_entity


def _names(text: str) -> dict[str, str]:
    return {e["name"]: e["type"] for e in heuristic_extract(text).entities}


def test_precision_and_recall_on_the_labelled_sets() -> None:
    labelled = kg_eval.evaluate(kg_eval.DATA)
    assert labelled.precision >= 0.97 and labelled.recall >= 0.97, labelled
    assert labelled.type_accuracy >= 0.9, labelled.mistyped
    held_out = kg_eval.evaluate(kg_eval.HOLDOUT)
    assert held_out.precision >= 0.95 and held_out.recall >= 0.9, held_out
    assert held_out.type_accuracy >= 0.7, held_out.mistyped


def test_sentence_openers_and_joined_names_are_not_entities() -> None:
    found = _names(
        "Understood. Noted: we run PostgreSQL and Redis. Internal tooling sends a Bearer token.\n"
        "Bob Smith and I will meet OpenAI next week."
    )
    assert not {"Understood", "Noted", "Internal", "Bearer"} & set(found)
    assert {"PostgreSQL", "Redis", "Bob Smith", "OpenAI"} <= set(found)
    assert not [n for n in found if " and " in n]
    assert found["Bob Smith"] == "person" and found["PostgreSQL"] == found["Redis"] == "technology"
    # The episodic key topics use the same rules.
    assert entity_names("Understood. Elena and Marco chose Grafana.") == ["Elena", "Marco", "Grafana"]


def test_both_spellings_of_a_name_get_one_type() -> None:
    assert _names("We compared OpenAI models.")["OpenAI"] == _names("Open AI released a model.")["Open AI"]
    # A name that is capitalised mid-sentence elsewhere is kept at a sentence start too.
    assert "Atlas" in _names("Atlas is late. The team behind Atlas needs help.")


def test_dedup_compares_near_identical_names_across_types(engine: Any) -> None:
    agent = engine.agents.create("ada")
    typed = kg_entity(engine, agent, "OpenAI", "organization", [1, 0, 0], conf=0.6)
    untyped = kg_entity(engine, agent, "Open AI", "concept", [1, 0.01, 0], conf=0.9)
    person = kg_entity(engine, agent, "Jordan", "person", [0, 1, 0])
    place = kg_entity(engine, agent, "Jordan", "place", [0, 1, 0.01])
    other = kg_entity(engine, agent, "Anthropic", "concept", [0, 0, 1])  # far name: not compared
    DedupWorker().handle(SimpleNamespace(payload={"entity_ids": [untyped, place, other]}), engine)
    with engine.db.session() as s:
        rows = {r.id: r for r in s.exec(select(KGEntity))}
        cands = s.exec(select(KGDedupCandidate)).all()
    # the untyped spelling folds into the typed one, whatever the confidences
    assert rows[untyped].merged_into == typed and rows[typed].valid_until is None
    assert "Open AI" in rows[typed].properties["aliases"] and rows[typed].entity_type == "organization"
    # two real types are only proposed, and a reviewer may merge them
    assert [tuple(sorted((c.entity_a_id, c.entity_b_id))) for c in cands] == [tuple(sorted((person, place)))]
    assert rows[person].valid_until is None and rows[place].valid_until is None
    (cand,) = engine.kg.candidates("ada")
    assert engine.kg.review_candidate(cand["id"], accept=True)["status"] == "merged"
    assert rows[other].valid_until is None


def test_a_verb_opening_a_sentence_and_single_letters_are_not_names() -> None:
    found = _names("Noted the Project Atlas deadline is Friday. We compared options A, B C and D.")
    assert "Project Atlas" in found and not [n for n in found if n.startswith("Noted")]
    assert "B C" not in found
    assert entity_names("Noted the Project Atlas. B C.") == ["Project Atlas"]
    # a name that itself has "the" in it stays whole
    assert "Alexander the Great" in _names("Alexander the Great was king.")


def test_weak_links_do_not_chain_along_a_list() -> None:
    rels = heuristic_extract("Present were Alice Smith, Bob Jones, Carol White and Dan Brown.").relations
    assert not [r for r in rels if r["relation"] == "related_to"]
    pair = heuristic_extract("Alice Smith, Bob Jones.").relations
    assert [(r["source"], r["target"]) for r in pair if r["relation"] == "related_to"] == [
        ("Alice Smith", "Bob Jones")
    ]
