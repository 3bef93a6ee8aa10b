"""Model-free entity names and types.

A shared text mechanism used by two features that never import each other:
the episodic key topics and the knowledge graph's fallback extractor when no model is configured.
Measured on ``tests/data/kg_entities.jsonl`` (``python -m tests.kg_eval``); the rules:

* names are runs of capitalised words (and mixed-case tokens such as ``gRPC``), split at
  ``and``/``or`` so a coordination is several entities ("PostgreSQL and Redis", "Bob Smith
  and I"), without a trailing possessive ("Anna's") or generic acronym ("Orion API");
* a lone capitalised word at the start of a sentence (or after ``User:``/a colon) is only a
  name with some evidence: it is marked (inner capitals or digits), known, possessive,
  coordinated with another name, followed by a verb people do, or capitalised elsewhere
  mid-sentence. That drops "Understood", "Noted", "Honestly", "Internal tooling"; such a word
  followed by "the" and a name is not part of it ("Noted the Project Atlas" is "Project Atlas");
* a run of single letters ("B C", options of a list) is not a name;
* auth-scheme and HTTP words ("Bearer", "Authorization", "Unauthorized") and generic acronyms
  (API, VPN, CTO) are never entities;
* the type comes from small gazetteers (software, companies), name suffixes ("Corp",
  "Clinic"), honorifics, the words around the name, and is shared along a coordination
  ("Elena and Marco" are both people when one is). The gazetteers match the name with spaces
  removed, so "Open AI" and "OpenAI" get the same type and dedup compares them.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from goclaw_text.sentences import sentences

MAX_NAMES = 20  # names kept per text (as many as the episodic key topics hold)

# Capitalised words that start sentences or address roles, never entities on their own.
NOT_ENTITIES = frozenset(
    """
    A Actually After Also An And April Are Assistant August Be Been Before But Can Channel
    Conversation Could December Decision Decisions Did Discussed Do Does Done February Friday Good
    Great He Hello Her Here Hey Hi His How I If Is It Its January July June Just Key Let Lets March
    May Maybe Monday My Next No Not Note Notes November October Ok Okay Once Or Our Perfect Please
    Points REDACTED Redacted Saturday September Session Shall She Should So Sounds Summary Sunday
    Sure Thank Thanks That The Their Then There These They This Those Thursday Today Tomorrow
    Topics Tuesday User Was We Wednesday Were What When Where Which Who Why Will Would Yes
    Yesterday You Your
    """.split()  # noqa: SIM905
)

# Words glued inside a name ("Bank of America", "AT&T", "Procter & Gamble"); ``and``/``or``
# are not glue: they separate names.
_CAP_RUN = re.compile(
    r"(?<![\w'’])(?:[A-Z][\w'’&-]*|[a-z]+[A-Z][\w'’&-]*)"
    r"(?:[ \t]+(?:(?:of|de|van|von|the|for|&)[ \t]+)?(?:[A-Z][\w'’&-]*|[a-z]+[A-Z][\w'’&-]*))*"
)
_GLUE = {"of", "de", "van", "von", "the", "for", "&"}
_POSSESSIVE = re.compile(r"['’]s$")
_SPEAKER = re.compile(r"^(?:User|Assistant|System|Tool)\s*:\s*")
_STARTS = re.compile(r"(?:^|:\s+|[.!?]\s+)")
_ABBREV_END = re.compile(r"(?<![\w.])(?:Mr|Mrs|Ms|Dr|Prof|Sr|Jr|St|Mt|vs|etc)\.$", re.I)

# Authentication schemes, HTTP words and capitalised jargon: never names on their own.
JARGON = frozenset(
    ["Bearer", "Basic", "Digest", "Token", "Authorization", "Authentication", "Unauthorized", "Forbidden"]
)
GENERIC_ACRONYMS = frozenset(
    """
    API APIS URL URLS URI HTTP HTTPS JSON YAML XML CSV PDF HTML CSS SQL CLI GUI UI UX CI CD PR PRS
    MR VPN DNS SSH SSL TLS CPU GPU RAM SSD HDD OS SDK IDE CTO CEO CFO COO CIO VP HR QA ETA FAQ TODO
    ASAP FYI EOD EOW OKR OKRS KPI KPIS ID IDS IP TCP UDP LLM AI ML PM AM UTC GMT USD EUR GBP TBD N/A
    OK MVP POC SLA SLO ROI B2B B2C SAAS DM DMS
    """.split()  # noqa: SIM905
)
_TRAIL = frozenset(["API", "APIs", "SDK", "CLI", "UI", "URL", "URLs", "app"])
_QUARTER = re.compile(r"^(?:Q[1-4]|H[12]|FY\d{2,4})$")

# Software, languages and hosted services (compared with spaces removed, lower case).
TECH = frozenset(
    """
    python java javascript typescript go golang rust ruby rails php laravel kotlin swift scala c++
    c# .net dotnet bash perl elixir haskell postgres postgresql sqlite mysql mariadb redis kafka
    rabbitmq docker kubernetes k8s helm aws gcp azure linux ubuntu debian windows macos ios android
    react vue angular svelte nextjs next.js node nodejs node.js deno django flask fastapi spring
    pytorch tensorflow pandas numpy spark hadoop airflow litellm github gitlab bitbucket git slack
    jira confluence notion trello asana linear figma terraform ansible nginx apache graphql rest
    grpc mongodb elasticsearch opensearch cassandra dynamodb snowflake bigquery redshift clickhouse
    duckdb grafana prometheus datadog sentry pagerduty jenkins circleci travisci firebase supabase
    heroku vercel netlify cloudflare auth0 okta matlab excel vscode xcode intellij pycharm webpack
    vite npm pip conda s3 ec2 lambda cloudrun bedrock sagemaker openshift vagrant podman
    """.split()  # noqa: SIM905
)
# Well-known companies (compared the same way).
ORGS = frozenset(
    """
    openai anthropic google alphabet microsoft apple amazon meta facebook ibm oracle intel amd
    nvidia samsung sony tesla netflix spotify uber airbnb stripe shopify salesforce adobe sap
    siemens bosch deloitte accenture mckinsey pwc kpmg walmart target costco ikea nike adidas paypal
    visa mastercard twitter linkedin tiktok bytedance alibaba tencent huawei xiaomi dropbox
    atlassian hubspot zendesk twilio mozilla wikipedia reddit
    """.split()  # noqa: SIM905
)
_ORG_SUFFIX = re.compile(
    r"\b(Inc|Corp|Corporation|Ltd|LLC|GmbH|AG|SA|Labs|University|Institute|Bank|Foundation|Company|Co|"
    r"Group|Agency|Clinic|Hospital|Health|Capital|Partners|Systems|Technologies|Solutions|"
    r"Industries|Airlines|Holdings|Ventures|Studios|Media|Council|Ministry|School|College)\.?$"
)
_PROJECT_WORD = re.compile(r"\b(project|initiative|program|programme)\b", re.I)
_PROJECT_AFTER = re.compile(
    r"^\s+(?:project|initiative|launch|release|migration|rollout|roadmap|beta|kickoff|sprint|"
    r"milestone|rewrite|epic|api|app|service|dashboard|repo|backend|frontend)\b",
    re.I,
)
_PERSON_BEFORE = re.compile(
    r"(?:\b(?:Mr|Mrs|Ms|Miss|Dr|Prof|Sir|Dame|Grandma|Grandpa|Aunt|Uncle|sister|brother|wife|husband|"
    r"son|daughter|mom|mum|dad|mother|father|friend|colleague|boss|manager|cousin|partner)\.?"
    r"|\b(?:remind|ask|asked|tell|told|email|emailed|call|called|ping|pinged|message|thank|thanked|meet|"
    r"met|invite|invited|cc|hired|introduce|introduced)"
    r"|\b(?:sign-?off|approval|feedback|input|question|message|email|note|call|word)\s+from"
    r"|\b(?:sent|send|sending|gave|give|forwarded|forward|handed|introduced|emailed|wrote)\b[^.;:]*\bto)\s+$",
    re.I,
)
_PERSON_AFTER = re.compile(
    r"^(?:['’]s\s+(?:wife|husband|team|manager|birthday|sister|brother|mother|father)\b"
    r"|\s+(?:and|&)\s+(?:I|me)\b|\s+from\s+(?:the\s+)?[A-Z]"
    r"|\s+(?:(?:both|also|still|never|always|really|just|often)\s+)?(?:said|says|asked|asks|mentioned|"
    r"wants|wanted|prefers|prefer|preferred|thinks|thought|told|agreed|decided|works|worked|lives|"
    r"lived|leads|led|manages|owns|joined|recommended|approved|reported|needs|likes|like|loves|love|"
    r"hates|suggested|confirmed|promised|called|emailed|wrote|visits|is allergic|was born)\b)",
    re.I,
)
_PERSON_WEAK_BEFORE = re.compile(r"\bwith\s+$", re.I)
_NAME_WORD = re.compile(r"^[A-Z][a-z]+(?:['’-][A-Z]?[a-z]+)?$")
_ORG_BEFORE = re.compile(
    r"(?:\b(?:works?|worked|working)\s+(?:at|for|with)|\b(?:joined|team at)"
    r"|\b(?:customer|client|vendor|supplier|competitor|employer|startup|company|agency),?)\s+$",
    re.I,
)
_PLACE_BEFORE = re.compile(
    r"\b(?:in|near|lives in|based in|moved to|flew to|fly to|travel(?:ling|ed)? to|visit(?:ed|ing)?|"
    r"relocat\w+ to|trip to)\s+$",
    re.I,
)
_PLACE_AFTER = re.compile(r"^\s+(?:office|offices|lab|labs|headquarters|hq|branch|campus|airport)\b", re.I)
# Countries, continents and large cities: a place wherever they appear.
PLACES = frozenset(
    """
    europe asia africa america northamerica southamerica australia antarctica usa us uk eu canada
    mexico brazil argentina chile colombia peru germany france spain portugal italy netherlands
    belgium switzerland austria poland sweden norway denmark finland ireland scotland england greece
    turkey russia ukraine israel egypt nigeria kenya southafrica india pakistan china japan korea
    southkorea singapore indonesia vietnam thailand philippines newzealand london paris berlin
    munich frankfurt hamburg madrid barcelona lisbon rome milan amsterdam brussels zurich geneva
    vienna prague warsaw stockholm oslo copenhagen helsinki dublin edinburgh athens istanbul moscow
    kyiv cairo lagos nairobi dubai mumbai delhi bangalore beijing shanghai shenzhen hongkong tokyo
    osaka seoul sydney melbourne auckland toronto vancouver montreal newyork nyc boston chicago
    seattle sanfrancisco losangeles austin denver miami atlanta washington saopaulo buenosaires
    mexicocity bogota lima
    """.split()  # noqa: SIM905
)
_COORD = re.compile(r"^(?:\s*,\s*(?:and\s+|or\s+)?|\s+(?:and|or|&)\s+)$")
_EVIDENCE_AFTER = re.compile(
    r"^(?:\s+(?:and|or|&)\s+[A-Z]|\s*,\s*[A-Z][\w'’-]*(?:\s+[A-Z][\w'’-]*)*\s*(?:,|\s+(?:and|or)\s))"
)


@dataclass(frozen=True)
class Mention:
    name: str
    start: int  # offset in the sentence
    end: int


def _compact(name: str) -> str:
    return re.sub(r"[\s_-]+", "", name.lower())


def is_known(name: str) -> bool:
    key = _compact(name)
    return key in TECH or key in ORGS


def _generic(word: str) -> bool:
    """A generic acronym (API, VPN, CTO; plural APIs) or a quarter (Q3, FY2026)."""
    bare = word[:-1] if word.endswith("s") and word[:-1].isupper() else word
    return (bare.isupper() and bare in GENERIC_ACRONYMS) or bool(_QUARTER.match(word))


def _marked(word: str) -> bool:
    """Capitals or digits after the first character: a name by its spelling (OpenAI, gRPC)."""
    return any(c.isupper() or c.isdigit() for c in word[1:]) and not _generic(word)


def sentence_starts(sentence: str) -> set[int]:
    """Offsets where a sentence (or a clause after a colon) begins, past a speaker prefix."""
    starts: set[int] = set()
    for m in _STARTS.finditer(sentence):
        pos = m.end()
        if m.group(0).startswith(".") and _ABBREV_END.search(sentence[: m.start() + 1]):
            continue  # "Mr. Lee": not a new sentence
        speaker = _SPEAKER.match(sentence[pos:])
        starts.add(pos + (speaker.end() if speaker else 0))
    return starts


def mentions(sentence: str, context: str = "") -> list[Mention]:
    """Entity names in one sentence, in order (see the module docstring). ``context`` is the
    whole text, where a sentence-initial word may be seen capitalised mid-sentence."""
    starts = sentence_starts(sentence)
    out: list[Mention] = []
    for match in _CAP_RUN.finditer(sentence):
        tokens = [(t.group(0), match.start() + t.start()) for t in re.finditer(r"\S+", match.group(0))]
        if _position_word_before_the(tokens, starts, sentence, context):
            tokens = tokens[2:]  # "Noted the Project Atlas" is "Project Atlas"
        while tokens and (tokens[0][0] in NOT_ENTITIES or tokens[0][0].lower() in _GLUE):
            tokens = tokens[1:]
        while tokens and (tokens[-1][0].lower() in _GLUE or tokens[-1][0].rstrip(".,;:!?") in _TRAIL):
            tokens = tokens[:-1]
        if not tokens:
            continue
        start = tokens[0][1]
        last, last_pos = tokens[-1]
        possessive = bool(_POSSESSIVE.search(last))
        end = last_pos + len(last)
        name = sentence[start:end]
        if possessive:
            name = _POSSESSIVE.sub("", name)
        name = name.strip(".,;:!?\"'()[]{}")
        words = name.split()
        if not words or len(name) < 2 or (len(name) < 3 and not _marked(name)):
            continue
        if name in NOT_ENTITIES or "REDACTED" in name or any(w in JARGON for w in words):
            continue
        if (len(words) == 1 and _generic(name)) or all(len(w) == 1 for w in words):
            continue  # "API"; "B C" (letters of a list, not a name)
        if len(words) == 1 and start in starts and not possessive:
            after = sentence[end:]
            if not (
                _marked(name)
                or is_known(name)
                or _EVIDENCE_AFTER.match(after)
                or _PERSON_AFTER.match(after)
                or _seen_mid_sentence(name, context or sentence)
            ):
                continue  # "Understood.", "Honestly,", "Internal tooling": capitalised by position
        out.append(Mention(name, start, start + len(name)))
    return out


def _position_word_before_the(
    tokens: list[tuple[str, int]], starts: set[int], sentence: str, context: str
) -> bool:
    """A run that starts a sentence with a word capitalised only by its position, then "the",
    then a name ("Noted the Project Atlas"; not "Alexander the Great", where nothing after
    "the" is a name on its own)."""
    if len(tokens) < 3 or tokens[0][1] not in starts or tokens[1][0] != "the":
        return False
    word = tokens[0][0]
    if _marked(word) or is_known(word) or _seen_mid_sentence(word, context or sentence):
        return False
    return any(t not in NOT_ENTITIES for t, _pos in tokens[2:])


def _seen_mid_sentence(word: str, text: str) -> bool:
    for m in re.finditer(rf"(?<![\w'’]){re.escape(word)}(?![\w'’])", text):
        before = text[: m.start()].rstrip()
        if before and before[-1] not in ".!?:" and not before.endswith(("User", "Assistant")):
            return True
    return False


def guess_type(name: str, sentence: str, start: int = -1) -> str:
    """person | organization | project | place | technology | concept (module docstring);
    the strongest evidence first, the words around the name next, weak hints last."""
    if start < 0:
        start = sentence.find(name)
    before = sentence[:start] if start >= 0 else ""
    after = sentence[start + len(name) :] if start >= 0 else ""
    words = name.split()
    key = _compact(name)
    if key in ORGS:
        return "organization"
    if key in TECH or any(_compact(w) in TECH for w in words):
        return "technology"
    if key in PLACES:
        return "place"
    if _ORG_SUFFIX.search(name):
        return "organization"
    if _PROJECT_WORD.search(name) or re.search(r"\bproject\s+$", before, re.I) or _PROJECT_AFTER.match(after):
        return "project"
    if _PERSON_BEFORE.search(before) or _PERSON_AFTER.match(after):
        return "person"
    if _ORG_BEFORE.search(before):
        return "organization"
    if _PLACE_BEFORE.search(before) or _PLACE_AFTER.match(after):
        return "place"
    if _PERSON_WEAK_BEFORE.search(before) or (
        2 <= len(words) <= 3 and all(_NAME_WORD.match(w) for w in words)
    ):
        return "person"  # "with Nina"; "Sophie Martin": in conversations, mostly people
    return "concept"


def typed_mentions(sentence: str, context: str = "") -> list[tuple[Mention, str]]:
    """Mentions with their types; a coordination ("A, B and C") shares a type its members do
    not contradict, so "Elena and Marco" are both people when one is known to be."""
    found = mentions(sentence, context)
    types = [guess_type(m.name, sentence, m.start) for m in found]
    groups: list[list[int]] = []
    for i, m in enumerate(found):
        if i and _COORD.match(sentence[found[i - 1].end : m.start]):
            groups[-1].append(i)
        else:
            groups.append([i])
    for group in groups:
        known = {types[i] for i in group} - {"concept"}
        if len(group) > 1 and len(known) == 1:
            shared = known.pop()
            for i in group:
                types[i] = shared
    return list(zip(found, types, strict=True))


def normalize_name(name: str) -> str:
    """The entity key: lower case, accents folded, punctuation dropped, spaces collapsed."""
    folded = unicodedata.normalize("NFKD", name)
    folded = "".join(c for c in folded if not unicodedata.combining(c)).lower()
    folded = re.sub(r"[^\w\s]+", " ", folded)
    return " ".join(folded.split())


def entity_names(text: str, limit: int = MAX_NAMES) -> list[str]:
    """Candidate entity names by the rules above,
    deduplicated case-insensitively, at most ``limit``."""
    seen: set[str] = set()
    out: list[str] = []
    for sentence in sentences(text):
        for m in mentions(sentence, text):
            key = m.name.lower()
            if key in seen:
                continue
            seen.add(key)
            out.append(m.name)
            if len(out) >= limit:
                return out
    return out
