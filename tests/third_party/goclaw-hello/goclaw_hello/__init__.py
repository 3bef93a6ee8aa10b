"""An example third-party goclaw plugin, installed through the ``goclaw`` entry-point group.

It adds a prompt section, two CLI commands (``goclaw hello``, declared lazily, and ``goclaw
wave``, registered eagerly), a settings table (``[plugins.hello] greeting = ...``) and a toy
embedding provider named ``hello``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import click
from pydantic import BaseModel

from goclaw import hookimpl
from goclaw.contracts.commands import CommandSpec


class HelloSettings(BaseModel):
    greeting: str = "Hello from a plugin"


@dataclass
class HelloSection:
    name: str = "hello"
    order: float = 14.5
    modes: frozenset[str] = frozenset({"full", "minimal"})

    def render(self, ctx: Any) -> str:
        settings = ctx.engine.plugin_settings("hello")
        return f"## Hello\n{settings.greeting}, {ctx.agent.name}."


class HelloEmbedder:
    provider = "hello"
    model = "letters-26"
    dim = 26

    def embed(self, texts: list[str]) -> Any:
        import numpy as np

        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            for ch in text.lower():
                if "a" <= ch <= "z":
                    out[i, ord(ch) - 97] += 1
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.where(norms == 0, 1, norms)


@hookimpl
def goclaw_settings_model() -> type[BaseModel]:
    return HelloSettings


@hookimpl
def goclaw_prompt_sections() -> list[Any]:
    return [HelloSection()]


@hookimpl
def goclaw_embedding_providers() -> dict[str, Any]:
    return {"hello": lambda engine: HelloEmbedder()}


@hookimpl
def goclaw_cli_commands() -> list[CommandSpec]:
    # Declared, not imported: goclaw_hello.cli loads only when `goclaw hello` runs.
    return [CommandSpec("hello", "Say hello (from the goclaw-hello plugin).", "goclaw_hello.cli:hello")]


@hookimpl
def goclaw_register_commands(cli: click.Group) -> None:
    # The eager form, kept for compatibility: defined (and imported) on every goclaw run.
    @cli.command("wave")
    def wave() -> None:
        """Wave (an eagerly registered command)."""
        click.echo("*waves*")
