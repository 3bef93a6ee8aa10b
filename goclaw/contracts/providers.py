"""Provider contracts: embeddings and LLMs, including tool calling.

A provider is registered by name (``goclaw_embedding_providers`` / ``goclaw_llm_providers``) and
selected by config. An LLM provider must :meth:`~LLMProvider.complete`; one that can call tools
also implements :meth:`~ToolCallingLLMProvider.chat` (messages + tool schemas in, a
:class:`ChatMessage` with :class:`ToolCall` s out), so a tool loop such as the memory flush runs
through any provider. :func:`chat` gives every provider that shape: a provider without ``chat``
answers with plain text and no tool calls. An embedding provider may also offer
:class:`PassageScoringEmbedder` (the memory reranker's passage step) and, to make that step
nearly free, :class:`PassageSketchingEmbedder`.

Two helpers degrade gracefully, for the features that store what a model made:
:func:`llm_complete` (one model call, or ``None``: use the deterministic fallback) and
:func:`embed_texts` (L2-normalised vectors, or ``None``: store the row without one, search
degrades to full text). They take the :class:`~goclaw.contracts.host.Host`; all they use of
it is ``llm()`` / ``embedder()`` (:class:`LLMSource`, :class:`EmbedderSource`).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from goclaw.errors import GoclawError

log = logging.getLogger(__name__)


@runtime_checkable
class EmbeddingProvider(Protocol):
    """Turns texts into float32 vectors. ``dim`` is known after construction; ``provider``,
    ``model`` and ``dim`` are recorded beside every stored vector, so spaces never mix. An
    optional ``fusion_weights = (text, vector)`` attribute gives the memory search's fusion
    weights with this model, used unless ``[plugins.memory]`` sets either weight."""

    provider: str
    model: str
    dim: int

    def embed(self, texts: Sequence[str]) -> Any:
        """Return a float32 ``numpy.ndarray`` of shape ``(len(texts), dim)``."""
        ...


@runtime_checkable
class PassageScoringEmbedder(Protocol):
    """An embedding provider that can also score passages locally and cheaply (optional).

    The memory reranker's passage step (docs/memory.md, ``rerank_passages``) re-measures its
    best hits' vector share on their best passage (a list item or paragraph with the headings
    above it: :func:`goclaw_search.passages.passages`). It runs only with a provider that
    offers this, because it embeds every passage of up to 20 chunks per search: the bundled
    static model does, in well under a millisecond; a hosted or transformer model should not.
    """

    def passage_similarity(self, query: str, texts: Sequence[str]) -> Any:
        """For each text, the best cosine between ``query`` and one of its passages, each
        embedded as :meth:`EmbeddingProvider.embed` would; 0 when none is positive (a float32
        ``numpy.ndarray`` of ``len(texts)``)."""
        ...


@runtime_checkable
class PassageSketchingEmbedder(Protocol):
    """A passage-scoring provider whose embedding is additive over tokens (optional).

    For a static model (a text embeds to the normalised sum of its tokens' rows ``E_t``) a
    passage's cosine with a unit query ``q`` is ``(Σ_t E_t·q) / ‖Σ_t E_t‖``. Such a provider
    sketches each chunk once when it is indexed (:meth:`passage_sketches`, kept in the memory
    index beside its vector), and a search scores the sketches of its best hits with one
    :meth:`token_similarity` call (:func:`goclaw_search.passage_sketches.sketch_cosines`)
    instead of re-reading their text: the same figures as :meth:`passage_similarity`.
    """

    provider: str
    model: str
    dim: int

    def passage_similarity(self, query: str, texts: Sequence[str]) -> Any:
        """As :meth:`PassageScoringEmbedder.passage_similarity` (for text without a sketch)."""
        ...

    def passage_sketches(self, texts: Sequence[str]) -> list[Any]:
        """Each text's :class:`goclaw_search.passage_sketches.PassageSketch` (its segments'
        token ids, which segments make each passage of
        :func:`goclaw_search.passages.passage_layout`, each passage's norm ``‖Σ_t E_t‖``). A
        provider may also offer ``passage_sketcher()``: a callable like this one for a run of
        calls (a background job's steps) that remembers what it computed across them."""
        ...

    def token_similarity(self, query: str, token_ids: Any) -> Any:
        """For each token id, ``E_t·q`` with ``q`` the query's unit embedding (a float32
        ``numpy.ndarray`` of ``len(token_ids)``; all 0 when the query embeds to nothing). A
        provider with a true ``token_similarity_takes_vectors`` attribute also accepts, as
        ``query``, the query's embedding from :meth:`EmbeddingProvider.embed` (the memory search
        passes the one it computed instead of having it embedded again). A provider may also
        offer ``token_rows()``: the float32 matrix of its rows ``E_t`` (indexed by token id);
        the memory search then scores its hits' sketches against those rows and the query's
        unit embedding itself, in one call (the same figures)."""
        ...


@dataclass(frozen=True)
class ToolCall:
    """One call the model asks for: ``arguments`` is the JSON text the model wrote."""

    id: str
    name: str
    arguments: str = "{}"

    def parsed_arguments(self) -> dict[str, Any]:
        """``arguments`` as a dict (``{}`` when the model wrote something that is not an object)."""
        try:
            value = json.loads(self.arguments or "{}")
        except json.JSONDecodeError:
            return {}
        return value if isinstance(value, dict) else {}


@dataclass(frozen=True)
class ChatMessage:
    """A chat message in the OpenAI shape that litellm and most providers use."""

    role: str
    content: str = ""
    tool_calls: tuple[ToolCall, ...] = field(default_factory=tuple)
    tool_call_id: str | None = None

    def as_dict(self) -> dict[str, Any]:
        """The message as the OpenAI-style dict a provider takes back in the next turn."""
        out: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.tool_calls:
            out["tool_calls"] = [
                {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
                for c in self.tool_calls
            ]
        if self.tool_call_id is not None:
            out["tool_call_id"] = self.tool_call_id
        return out


# A tool schema in the OpenAI function-calling shape:
# {"type": "function", "function": {"name", "description", "parameters": <JSON schema>}}.
ToolSchema = Mapping[str, Any]


@runtime_checkable
class LLMProvider(Protocol):
    """Completes chat messages with text. Every caller has a deterministic fallback."""

    name: str

    def complete(
        self, messages: Sequence[Mapping[str, Any]], *, timeout: float = 60.0, **options: Any
    ) -> str:
        """The assistant's answer to ``messages`` (OpenAI-style dicts) as text."""
        ...


@runtime_checkable
class ToolCallingLLMProvider(LLMProvider, Protocol):
    """An LLM provider that can call tools."""

    def chat(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        tools: Sequence[ToolSchema] = (),
        timeout: float = 60.0,
        **options: Any,
    ) -> ChatMessage:
        """One assistant turn: text, or tool calls to run and answer with ``role="tool"``
        messages (``tool_call_id`` set) in the next call."""
        ...


def chat(
    provider: LLMProvider,
    messages: Sequence[Mapping[str, Any]],
    *,
    tools: Sequence[ToolSchema] = (),
    timeout: float = 60.0,
    **options: Any,
) -> ChatMessage:
    """One assistant turn through any provider: its ``chat`` when it has one, else its text
    answer as a message without tool calls (the caller's loop then simply ends)."""
    if isinstance(provider, ToolCallingLLMProvider):
        return provider.chat(messages, tools=tools, timeout=timeout, **options)
    return ChatMessage("assistant", provider.complete(messages, timeout=timeout, **options))


# --------------------------------------------------------------------------- degrading helpers


class LLMSource(Protocol):
    """What :func:`llm_complete` uses of the host."""

    def llm(self, name: str | None = None) -> LLMProvider | None: ...


class EmbedderSource(Protocol):
    """What :func:`embed_texts` uses of the host."""

    def embedder(self, name: str | None = None) -> EmbeddingProvider | None: ...


def llm_complete(
    host: LLMSource, messages: Sequence[Mapping[str, Any]], *, timeout: float, **options: Any
) -> str | None:
    """One model call, or ``None`` (no model configured, or the call failed): use the fallback.
    Shared by episodic summaries, KG extraction, channel memory and dreaming."""
    try:
        llm = host.llm()
    except GoclawError as exc:
        log.debug("no LLM: %s", exc)
        return None
    if llm is None:
        return None
    try:
        text = llm.complete(messages, timeout=timeout, **options)
    except Exception as exc:
        log.warning("LLM call failed, using the fallback: %s", exc)
        return None
    text = (text or "").strip()
    return text or None


@dataclass
class Embedded:
    """What :func:`embed_texts` returns: the vectors and the space they belong to."""

    vectors: Any  # float32 (n, dim), L2-normalised
    provider: str
    model: str
    dim: int


def embed_texts(host: EmbedderSource, texts: Sequence[str]) -> Embedded | None:
    """Embed ``texts`` with the configured provider for storage; ``None`` when there is none or
    it fails (the caller stores its row without a vector). Used by episodic memory and the
    knowledge graph."""
    if not texts:
        return None
    try:
        provider = host.embedder()
    except GoclawError as exc:
        log.debug("no embedder: %s", exc)
        return None
    if provider is None:
        return None
    try:
        import numpy as np

        vectors = np.asarray(provider.embed(list(texts)), dtype=np.float32)
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        vectors = vectors / norms
    except Exception as exc:  # a provider failing mid-way must not lose the row
        log.warning("embedding failed, storing without vectors: %s", exc)
        return None
    return Embedded(vectors, str(provider.provider), str(provider.model), int(vectors.shape[1]))


__all__ = [
    "ChatMessage",
    "Embedded",
    "EmbedderSource",
    "EmbeddingProvider",
    "LLMProvider",
    "LLMSource",
    "ToolCall",
    "ToolCallingLLMProvider",
    "ToolSchema",
    "chat",
    "embed_texts",
    "llm_complete",
]
