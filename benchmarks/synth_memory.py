"""Synthetic long memory with planted facts: retrieval quality at 10k-1M chunks.

    python benchmarks/synth_memory.py OUT_DIR --chunks 100000 --facts 150 --seed 7

API (what benchmarks/memory_bench.py uses)::

    from synth_memory import generate
    questions = generate(agent_dir, n_chunks=100_000, n_facts=150, seed=7)

``generate`` writes dated Markdown notes under ``<out_dir>/memory/YYYY/MM/`` (an agent folder:
index it with ``engine.memory.index(agent)``) plus ``<out_dir>/questions.jsonl``, and returns
the same questions as dicts in the format of ``goclaw eval`` (docs/eval.md).

What the notes look like: a support/operations team's daily notes over years (four notes a
day: standup, customer calls, operations, decisions), each note a few ``##`` sections of
bullets about customers, people, cities, services, hosts and codes (TCK-, INC-, INV-, ORD-,
BUG- numbers, versions, amounts). Many sections are near duplicates: the same sentence
templates recur with other companies, cities, people and numbers, and the planted facts'
own templates recur as distractors with other entities, so a retriever must match the right
entity, not just the topic.

Guarantees (tested in tests/system/test_synth_memory.py):

* exactly ``n_chunks`` chunks with goclaw's default chunker (``max_chunk_len`` 1,000): every
  section is 560-950 characters and sections are separated by a blank line, so each section
  is one chunk;
* ``n_facts`` planted facts, each a single bullet in a section whose line range is the
  evidence; no other section states the same (template, entity) pair;
* each fact asked 3 ways: ``exact-code`` (the fact's distinctive keywords, its code when it
  has one), ``partial`` (the entity and one keyword of the attribute) and ``paraphrase``
  (the entity plus other words for the attribute); plus ``n_facts // 10`` unanswerable
  questions about entities that appear nowhere;
* deterministic: the same arguments write byte-identical files; 100,000 chunks take a few
  seconds.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, timedelta
from pathlib import Path
from typing import Any


def hit_rank(hits: list[Any], expect: list[dict[str, Any]]) -> int | None:
    """The 1-based rank of the first hit (``path``, ``start_line``, ``end_line``) overlapping
    one of a question's ``expect`` regions, or None."""
    for rank, h in enumerate(hits, 1):
        for e in expect:
            lo, hi = e["lines"]
            if h.path == e["path"] and h.start_line <= hi and lo <= h.end_line:
                return rank
    return None


def _split(words: str) -> list[str]:
    return words.split()


FIRST = _split(
    "Ada Tomás Priya Mei Hannah Luis Jonas Aiko Sam Dana Marguerite Rafael Jens Wes Beth Noor Marcus Sofia "
    "Tunde Joana Elena Farid Grace Hugo Ines Jamal Kenji Lena Mateo Nadia Omar Paula Quentin Rosa Stefan "
    "Talia Umar Vera Wiktor Xenia Yusuf Zoe Amara Bruno Chloe Dmitri Esther Felix Gita Henrik Ivy Jonah "
    "Kira Liam Maya Niko Olga Pedro Rania Soren Thea Uri Valeria Wren Yara Zane Alba Cyrus Delia Emil"
)
LAST = _split(
    "Okafor Reyes Nair Lin Cole Ortega Weber Tanaka Park Whitfield Ashby Moreno Lindner Harper Lawson "
    "Haddad Bell Almeida Silva Novak Kowalski Dubois Rossi Jensen Murphy Fischer Costa Ivanova Sato Kim "
    "Nguyen Petrov Larsen Moretti Khan Adeyemi Berg Castillo Duarte Eriksen Fontaine Gallo Horvath Ito "
    "Jovanovic Keller Lund Mendes Nowak Oliveira Popescu Quinn Richter Santos Toth Ueda Varga Walsh Yilmaz"
)
CITIES = _split(
    "Denver Reno Austin Lisbon Leipzig Porto Lyon Utrecht Gdansk Bilbao Tampere Graz Brno Cork Malmo "
    "Turin Ghent Aarhus Basel Seville Krakow Riga Tallinn Vilnius Bologna Nantes Bergen Dundee Eindhoven "
    "Salzburg Tucson Boise Omaha Tulsa Fresno Spokane Dayton Akron Toledo Wichita Madison Raleigh Savannah "
    "Halifax Calgary Regina Hobart Perth Dunedin Nelson Durban Accra Mombasa Pune Kochi Cebu Busan Sapporo"
)
SERVICES = _split(
    "billing labels tracking webhooks returns customs rates pickups invoices notifications search "
    "reporting exports imports onboarding payouts refunds addresses manifests scanning"
)
PREFIX = _split(
    "Acme Kite Fern Blue Oak North Silver Red Iron Maple Cedar Harbor Summit Pine River Stone Lark Swift "
    "Amber Coral Delta Echo Falcon Granite Hazel Indigo Juniper Kestrel Lumen Meadow Nimbus Orchid Pebble "
    "Quartz Raven Sage Tidal Umber Violet Willow Zephyr Alder Birch Copper Dune Ember Flint Glacier Heron"
)
SUFFIX = _split(
    "Outdoor Toys Tea Surf Supply Pet Co Labs Goods Works Trading Home Coffee Bikes Books Apparel Garden "
    "Kitchen Optics Audio Ceramics Farms Roasters Studio Outfitters Market Foods Crafts"
)
WEEKDAYS = _split("Monday Tuesday Wednesday Thursday Friday")
CHANNELS = _split("phone Slack email SMS WhatsApp Teams")
CURRENCIES = _split("euros pounds dollars kroner zloty francs")
TOPICS = (
    "Standup",
    "Queue",
    "Customer calls",
    "Escalations",
    "Billing",
    "Carriers",
    "Incidents",
    "Releases",
    "Decisions",
    "Follow-ups",
    "Onboarding",
    "Operations",
)
NOTE_KINDS = ("standup", "customers", "ops", "decisions")


@dataclass
class World:
    rng: random.Random
    people: list[str]
    companies: list[str]
    cities: list[str]
    ghosts_people: list[str]
    ghosts_companies: list[str]
    ghosts_cities: list[str]

    def person(self) -> str:
        return self.rng.choice(self.people)

    def company(self) -> str:
        return self.rng.choice(self.companies)

    def city(self) -> str:
        return self.rng.choice(self.cities)

    def code(self, prefix: str, digits: int) -> str:
        return f"{prefix}-{self.rng.randrange(10 ** (digits - 1), 10**digits)}"

    def time(self) -> str:
        return f"{self.rng.randrange(7, 19):02d}:{self.rng.choice(('00', '15', '30', '45'))}"

    def amount(self) -> str:
        return f"${self.rng.randrange(20, 9000):,}"

    def version(self) -> str:
        return f"v{self.rng.randrange(3, 7)}.{self.rng.randrange(0, 30)}.{self.rng.randrange(0, 9)}"

    def host(self) -> str:
        region = self.rng.choice(("eu", "us", "ap"))
        return f"{self.rng.choice(SERVICES)}-{region}-{self.rng.randrange(1, 40):02d}"


def _world(rng: random.Random) -> World:
    people = sorted({f"{f} {last}" for f in FIRST for last in LAST})
    companies = sorted({f"{p} {s}" for p in PREFIX for s in SUFFIX})
    rng.shuffle(people)
    rng.shuffle(companies)
    cities = list(CITIES)
    rng.shuffle(cities)
    # Entities kept out of every note: the unanswerable questions ask about them.
    return World(rng, people[60:], companies[60:], cities[8:], people[:60], companies[:60], cities[:8])


# --------------------------------------------------------------------------- filler sentences

Filler = Callable[[World], str]
FILLERS: list[Filler] = [
    lambda w: (
        f"{w.code('TCK', 5)}: {w.company()} asked why {w.rng.choice(SERVICES)} looked slow; "
        f"{w.person()} replied with the status page link."
    ),
    lambda w: (
        f"{w.person()} took the {w.city()} queue from {w.time()} UTC; {w.rng.randrange(5, 90)} tickets open."
    ),
    lambda w: (
        f"{w.company()} shipped {w.rng.randrange(200, 40000):,} labels last month, mostly from {w.city()}."
    ),
    lambda w: f"Invoice {w.code('INV', 6)} for {w.company()} paid, {w.amount()}; no action for support.",
    lambda w: (
        f"{w.code('INC', 4)}: {w.rng.choice(SERVICES)} degraded for {w.rng.randrange(5, 90)} minutes, "
        f"{w.person()} on call, post-mortem pending."
    ),
    lambda w: (
        f"Release {w.version()} moved the {w.rng.choice(SERVICES)} settings page; macro updated by "
        f"{w.person()}."
    ),
    lambda w: (
        f"{w.company()} reported {w.code('BUG', 4)}: {w.rng.choice(SERVICES)} export drops accents "
        "in street names."
    ),
    lambda w: (
        f"Order {w.code('ORD', 7)} from {w.company()} stuck at customs in {w.city()}; carrier "
        "trace requested."
    ),
    lambda w: (
        f"{w.person()} and {w.person()} reviewed the {w.rng.choice(SERVICES)} runbook; two steps out of date."
    ),
    lambda w: f"Host {w.host()} restarted after a memory alert at {w.time()} UTC; no customer impact.",
    lambda w: (
        f"{w.company()} wants a call about {w.rng.choice(SERVICES)} on {w.rng.choice(WEEKDAYS)} "
        f"at {w.time()} UTC."
    ),
    lambda w: (
        f"Refund request for {w.company()} ({w.amount()}) sent to finance with ticket {w.code('TCK', 5)}."
    ),
    lambda w: f"Carrier pickup in {w.city()} late again; {w.person()} logged it for the weekly review.",
    lambda w: (
        f"{w.person()} closed {w.rng.randrange(10, 60)} tickets; CSAT {w.rng.randrange(80, 99)}% this week."
    ),
    lambda w: f"Training: {w.person()} shadowed {w.person()} on {w.rng.choice(SERVICES)} tickets.",
    lambda w: f"{w.company()} moved their warehouse from {w.city()} to {w.city()}; addresses updated.",
    lambda w: (
        f"Path /srv/{w.rng.choice(SERVICES)}/exports/{w.rng.randrange(1000, 9999)}.csv was "
        "regenerated for the monthly report."
    ),
    lambda w: (
        f"Decision: {w.rng.choice(SERVICES)} tickets go to {w.person()} until {w.rng.choice(WEEKDAYS)}."
    ),
]


# --------------------------------------------------------------------------- fact templates


@dataclass(frozen=True)
class FactTemplate:
    """A fact sentence and three ways to ask for it; ``key`` names what makes it unique."""

    key: str  # which slot identifies the fact: "company", "city" or "person"
    sentence: str
    exact: str
    partial: str
    paraphrase: str
    values: Callable[[World], dict[str, str]]


def _vals(**makers: Callable[[World], str]) -> Callable[[World], dict[str, str]]:
    return lambda w: {k: f(w) for k, f in makers.items()}


FACTS: list[FactTemplate] = [
    FactTemplate(
        "city",
        "Door code for the {city} warehouse is {code} (changed by {person}).",
        "door code {city} warehouse {code}",
        "{city} warehouse door",
        "How do I get into the {city} storage building?",
        _vals(code=lambda w: f"{w.rng.randrange(1000, 9999)}#", person=World.person),
    ),
    FactTemplate(
        "company",
        "{company} escalation call moved to {weekday} {time} UTC by {person}.",
        "{company} escalation call {weekday} {time}",
        "{company} escalation call",
        "When is the urgent meeting with {company} now scheduled?",
        _vals(weekday=lambda w: w.rng.choice(WEEKDAYS), time=World.time, person=World.person),
    ),
    FactTemplate(
        "company",
        "{company} asked to be invoiced in {currency} from next quarter; approved by {person}.",
        "{company} invoiced in {currency}",
        "{company} invoice currency",
        "Which money does {company} want its bills in?",
        _vals(currency=lambda w: w.rng.choice(CURRENCIES), person=World.person),
    ),
    FactTemplate(
        "company",
        "The {service} API key of {company} was rotated after a leak reported in {ticket}.",
        "{ticket} {company} {service} API key rotated",
        "{company} API key rotated",
        "Why did {company} have to replace its secret credential?",
        _vals(service=lambda w: w.rng.choice(SERVICES), ticket=lambda w: w.code("TCK", 5)),
    ),
    FactTemplate(
        "person",
        "{person} prefers to be contacted by {channel} and never before {time}.",
        "{person} contacted by {channel} before {time}",
        "{person} contacted",
        "What is the best way to reach {person}, and how early?",
        _vals(channel=lambda w: w.rng.choice(CHANNELS), time=World.time),
    ),
    FactTemplate(
        "company",
        "Refund {ref} of {amount} for {company} was approved by {person}.",
        "refund {ref} {company}",
        "{company} refund approved",
        "Who signed off the money given back to {company}?",
        _vals(
            ref=lambda w: (
                "re_" + "".join(w.rng.choice("ABCDEFGHJKLMNPQRSTUVWXYZ23456789") for _ in range(12))
            ),
            amount=World.amount,
            person=World.person,
        ),
    ),
    FactTemplate(
        "city",
        "Courier pickup cut-off at the {city} depot is {time} local time from now on.",
        "pickup cut-off {city} depot {time}",
        "{city} pickup cut-off",
        "By what hour must parcels be ready for collection in {city}?",
        _vals(time=World.time),
    ),
    FactTemplate(
        "company",
        "{company} contract renewal date is {day}, with a notice period of {days} days.",
        "{company} contract renewal {day}",
        "{company} renewal",
        "When does the agreement with {company} come up for extension?",
        _vals(
            day=lambda w: (date(2027, 1, 1) + timedelta(days=w.rng.randrange(0, 700))).isoformat(),
            days=lambda w: str(w.rng.choice((30, 45, 60, 90))),
        ),
    ),
    FactTemplate(
        "person",
        "{person}'s badge number is {badge}; it also opens the server room.",
        "{person} badge number {badge}",
        "{person} badge",
        "Which identification card digits belong to {person}?",
        _vals(badge=lambda w: w.code("BDG", 6)),
    ),
    FactTemplate(
        "city",
        "Host {host} serves the {city} region; its disk fills to {pct}% every Monday.",
        "{host} {city} disk {pct}%",
        "{city} host disk",
        "Which machine handles the {city} area and what happens to its storage weekly?",
        _vals(host=World.host, pct=lambda w: str(w.rng.randrange(70, 99))),
    ),
]


# --------------------------------------------------------------------------- writing


@dataclass
class _Planted:
    template: FactTemplate
    values: dict[str, str]


def _section(w: World, topic: str, lead: str, fact: str | None) -> list[str]:
    """Lines of one section: 560-950 characters in all, one chunk."""
    lines = [f"## {topic}: {lead}"]
    size = len(lines[0]) + 1
    bullets: list[str] = []
    fact_at = w.rng.randrange(0, 4) if fact else -1
    while size < 560 or (fact is not None and fact_at >= len(bullets)):
        text = fact if len(bullets) == fact_at and fact else w.rng.choice(FILLERS)(w)
        line = f"- {text}"
        if size + len(line) + 1 > 950:
            break
        bullets.append(line)
        size += len(line) + 1
    while size < 560:  # pad with short bullets (rare)
        line = f"- {w.person()} checked the {w.rng.choice(SERVICES)} queue."
        bullets.append(line)
        size += len(line) + 1
    return lines + bullets


def generate(
    out_dir: str | Path, n_chunks: int, n_facts: int, seed: int, agent: str = "synth"
) -> list[dict[str, Any]]:
    """Write ``n_chunks`` chunks of dated notes with ``n_facts`` planted facts under ``out_dir``.

    Returns the questions (also written to ``out_dir/questions.jsonl``): per fact an
    ``exact-code``, a ``partial`` and a ``paraphrase`` question whose evidence is the fact's
    section (``{"path", "lines"}``, paths relative to ``out_dir``), then ``n_facts // 10``
    ``unanswerable`` ones. ``agent`` is the agent name written into the questions.
    """
    if n_chunks < 1 or n_facts < 0 or n_facts > n_chunks:
        raise ValueError("need n_chunks >= 1 and 0 <= n_facts <= n_chunks")
    rng = random.Random(seed)
    w = _world(rng)
    out = Path(out_dir)
    # Plant facts first: each (template, key entity) pair is used once; distractors reuse the
    # templates with other entities only.
    used: set[tuple[int, str]] = set()
    planted: dict[int, _Planted] = {}
    slots = rng.sample(range(n_chunks), n_facts)
    for i, slot in enumerate(slots):
        t_index = i % len(FACTS)
        t = FACTS[t_index]
        while True:
            values = t.values(w)
            values.update(company=w.company(), city=w.city(), person=w.person())
            if "service" not in values:
                values["service"] = rng.choice(SERVICES)
            if (t_index, values[t.key]) not in used:
                break
        used.add((t_index, values[t.key]))
        planted[slot] = _Planted(t, values)

    def distractor() -> str:
        t_index = rng.randrange(len(FACTS))
        t = FACTS[t_index]
        for _ in range(20):
            values = t.values(w)
            values.update(company=w.company(), city=w.city(), person=w.person())
            values.setdefault("service", rng.choice(SERVICES))
            if (t_index, values[t.key]) not in used:
                return t.sentence.format(**values)
        return FILLERS[0](w)

    sections_per_note = 6
    start = date(2019, 1, 1)
    questions: list[dict[str, Any]] = []
    evidence: dict[int, dict[str, Any]] = {}
    chunk = 0
    note = 0
    while chunk < n_chunks:
        day = start + timedelta(days=note // len(NOTE_KINDS))
        kind = NOTE_KINDS[note % len(NOTE_KINDS)]
        rel = f"memory/{day:%Y}/{day:%m}/{day.isoformat()}-{kind}.md"
        lines = [f"# {day.isoformat()} ({day:%a}) - {kind}", ""]
        for _ in range(sections_per_note):
            if chunk >= n_chunks:
                break
            fact = planted.get(chunk)
            sentence = fact.template.sentence.format(**fact.values) if fact else None
            if sentence is None and rng.random() < 0.25:
                sentence = distractor()  # near duplicates of the planted facts' templates
            lead = fact.values["company"] if fact else w.company()
            body = _section(w, rng.choice(TOPICS), lead, sentence)
            # The note's title line (and the blank after it) joins the first section's chunk.
            first = 1 if len(lines) == 2 else len(lines) + 1
            lines.extend(body)
            if fact:
                evidence[chunk] = {"path": rel, "lines": [first, len(lines)]}
            lines.append("")
            chunk += 1
        path = out / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join(lines).rstrip("\n") + "\n", encoding="utf-8")
        note += 1

    for n, slot in enumerate(slots):
        fact = planted[slot]
        for way, form in (
            ("exact-code", fact.template.exact),
            ("partial", fact.template.partial),
            ("paraphrase", fact.template.paraphrase),
        ):
            questions.append(
                {
                    "id": f"fact{n:05d}-{way}",
                    "question": form.format(**fact.values),
                    "agent": agent,
                    "kind": way,
                    "expect": [evidence[slot]],
                    "note": fact.template.sentence.format(**fact.values),
                }
            )
    for n in range(n_facts // 10):
        t = FACTS[n % len(FACTS)]
        values = t.values(w)
        values.update(
            company=w.ghosts_companies[n % len(w.ghosts_companies)],
            person=w.ghosts_people[n % len(w.ghosts_people)],
            city=w.ghosts_cities[n % len(w.ghosts_cities)],
        )
        values.setdefault("service", rng.choice(SERVICES))
        questions.append(
            {
                "id": f"none{n:05d}",
                "question": t.paraphrase.format(**values),
                "agent": agent,
                "kind": "unanswerable",
            }
        )
    with open(out / "questions.jsonl", "w", encoding="utf-8") as fh:
        for q in questions:
            fh.write(json.dumps(q, ensure_ascii=False) + "\n")
    return questions


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("out_dir", type=Path, help="agent folder to write memory/ and questions.jsonl into")
    parser.add_argument("--chunks", type=int, default=10_000)
    parser.add_argument("--facts", type=int, default=150)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--agent", default="synth", help="agent name written into the questions")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    qs = generate(args.out_dir, args.chunks, args.facts, args.seed, agent=args.agent)
    took = time.perf_counter() - started
    print(f"wrote {args.chunks:,} chunks and {len(qs)} questions to {args.out_dir} in {took:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
