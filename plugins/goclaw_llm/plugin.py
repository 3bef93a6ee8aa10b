"""Plugin ``goclaw.llm``: chat completions through litellm.

Configure with ``[plugins.llm] model = "gpt-4o-mini"`` (any litellm model string). With no
model, ``engine.llm()`` is ``None`` and every LLM-dependent step uses its deterministic
fallback. litellm is imported only when a model is actually called (it takes seconds).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, Field

from goclaw import hookimpl
from goclaw.contracts.providers import ChatMessage, ToolCall
from goclaw.errors import GoclawError


class LLMSettings(BaseModel):
    """``[plugins.llm]``"""

    provider: str = Field(default="litellm", description="LLM provider name, or 'none'")
    model: str | None = Field(default=None, description="litellm model string; unset = no LLM")
    timeout: float = Field(default=60.0, gt=0, description="seconds per call")
    temperature: float | None = Field(default=None, ge=0, le=2)
    api_base: str | None = Field(default=None, description="custom endpoint (Ollama, vLLM, proxies)")
    max_retries: int = Field(default=2, ge=0, le=10)
    options: dict[str, Any] = Field(default_factory=dict, description="extra litellm.completion kwargs")


class LLMCallError(GoclawError):
    """The model call failed (network, auth, timeout, bad response)."""


def import_litellm() -> Any:
    """Import litellm offline-safe: never fetch the model-cost map from the network."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    litellm.telemetry = False
    litellm.suppress_debug_info = True
    return litellm


class LiteLLMProvider:
    """A :class:`~goclaw.contracts.providers.ToolCallingLLMProvider` backed by ``litellm.completion``."""

    name = "litellm"

    def __init__(self, settings: LLMSettings) -> None:
        if not settings.model:
            raise ValueError("a model is required")
        self.settings = settings
        self.model = settings.model

    def _message(
        self, messages: Sequence[Mapping[str, Any]], timeout: float | None, options: dict[str, Any]
    ) -> Any:
        litellm = import_litellm()
        kwargs: dict[str, Any] = {**self.settings.options, **options}
        if self.settings.temperature is not None:
            kwargs.setdefault("temperature", self.settings.temperature)
        if self.settings.api_base:
            kwargs.setdefault("api_base", self.settings.api_base)
        try:
            response = litellm.completion(
                model=self.model,
                messages=[dict(m) for m in messages],
                timeout=timeout or self.settings.timeout,
                num_retries=self.settings.max_retries,
                **kwargs,
            )
        except Exception as exc:
            raise LLMCallError(f"LLM call to {self.model} failed: {type(exc).__name__}: {exc}") from exc
        try:
            return response.choices[0].message
        except (AttributeError, IndexError, KeyError) as exc:
            raise LLMCallError(f"LLM {self.model} returned no message") from exc

    def complete(
        self, messages: Sequence[Mapping[str, Any]], *, timeout: float | None = None, **options: Any
    ) -> str:
        return str(self._message(messages, timeout, options).content or "")

    def chat(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        tools: Sequence[Mapping[str, Any]] = (),
        timeout: float | None = None,
        **options: Any,
    ) -> ChatMessage:
        """One assistant turn with tool calling (the ``ToolCallingLLMProvider`` contract)."""
        if tools:
            options = {**options, "tools": [dict(t) for t in tools]}
        msg = self._message(messages, timeout, options)
        calls = tuple(
            ToolCall(str(c.id), str(c.function.name), str(c.function.arguments or "{}"))
            for c in (getattr(msg, "tool_calls", None) or [])
        )
        return ChatMessage("assistant", str(getattr(msg, "content", None) or ""), calls)


@hookimpl
def goclaw_settings_model() -> type[BaseModel]:
    return LLMSettings


def _litellm_factory(engine: Any) -> LiteLLMProvider | None:
    settings: LLMSettings = engine.plugin_settings("llm")
    if not settings.model:
        return None
    return LiteLLMProvider(settings)


@hookimpl
def goclaw_llm_providers() -> dict[str, Any]:
    return {"litellm": _litellm_factory}
