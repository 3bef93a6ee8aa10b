"""Bearer tokens for ``goclaw serve``: scoped to agents and users, stored hashed.

Tokens live in ``<workspace>/.goclaw/api_tokens.json`` (mode 0600): per token its name, the
SHA-256 of the secret (tokens are 256-bit random, so a fast hash is enough; the secret itself
is shown once, at creation), and its scope:

* ``agents``: agent names, or ``["*"]`` for every agent;
* ``users``: user ids the token may act for, or ``["*"]`` for any user *and* the agent level.
  A token limited to users acts for one of them on every request (no ``user`` → refused): it
  reads what that user's chat sees (agent-level memory shared by the agent's users included)
  and writes only that user's data.

Endpoints without an agent (listing agents, running workers) need ``agents = users = ["*"]``.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
import threading
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from goclaw.contracts.fsutil import atomic_write_text
from goclaw.contracts.tools import check_user_id
from goclaw.errors import ConfigError, NotFoundError, PermissionDeniedError, ValidationError

TOKEN_PREFIX = "gck_"
RELATIVE_PATH = ".goclaw/api_tokens.json"
ANY = "*"
_LOCK = threading.Lock()


class TokenFileError(ConfigError):
    """The workspace's token file cannot be read as one (edited by hand, truncated)."""


@dataclass
class TokenRecord:
    name: str
    sha256: str
    agents: list[str] = field(default_factory=lambda: [ANY])
    users: list[str] = field(default_factory=lambda: [ANY])
    created_at: str = ""

    @property
    def admin(self) -> bool:
        return self.agents == [ANY] and self.users == [ANY]

    def public(self) -> dict[str, Any]:
        return {"name": self.name, "agents": self.agents, "users": self.users, "created_at": self.created_at}

    def check(self, agent: str | None, user: str | None) -> None:
        """Refuse a request outside this token's scope (:class:`PermissionDeniedError`)."""
        if agent is None:
            if not self.admin:
                raise PermissionDeniedError(
                    f"token {self.name!r} is scoped; this operation needs an admin token"
                )
            return
        if user:
            check_user_id(user)  # a look-alike (" ann", "ann\n") is refused, not matched
        if self.agents != [ANY] and agent not in self.agents:
            raise PermissionDeniedError(f"token {self.name!r} may not access agent {agent!r}")
        if self.users == [ANY]:
            return
        if not user:
            raise PermissionDeniedError(f"token {self.name!r} is scoped to users; name one (user=...)")
        if user not in self.users:
            raise PermissionDeniedError(f"token {self.name!r} may not act for user {user!r}")


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


class TokenStore:
    """The token file of a workspace."""

    def __init__(self, workspace: Path) -> None:
        self.path = workspace / RELATIVE_PATH

    def _load(self) -> list[TokenRecord]:
        if not self.path.exists():
            return []
        try:
            raw = json.loads(self.path.read_text(encoding="utf-8"))
            return [TokenRecord(**item) for item in raw.get("tokens", [])]
        except (ValueError, TypeError) as exc:
            # Named relative to the workspace: the message reaches HTTP clients too.
            raise TokenFileError(f"{RELATIVE_PATH} is not a valid token file ({exc})") from None

    def _save(self, records: list[TokenRecord]) -> None:
        body = json.dumps({"tokens": [asdict(r) for r in records]}, indent=2)
        atomic_write_text(self.path, body, mode=0o600)  # secrets: owner only

    def records(self) -> list[TokenRecord]:
        return self._load()

    def create(self, name: str, agents: list[str] | None = None, users: list[str] | None = None) -> str:
        """A new token; returns the secret (shown once, only its hash is stored)."""
        if not name or len(name) > 100 or not name.isprintable() or name != name.strip():
            raise ValidationError(
                f"invalid token name {name!r}: use 1-100 printable characters, no surrounding spaces"
            )
        for user in users or []:
            if user != ANY:
                check_user_id(user)
        with _LOCK:
            records = self._load()
            if any(r.name == name for r in records):
                raise ValidationError(f"a token named {name!r} exists; revoke it first")
            secret = TOKEN_PREFIX + secrets.token_urlsafe(32)
            records.append(
                TokenRecord(
                    name=name,
                    sha256=_digest(secret),
                    agents=sorted(set(agents)) if agents else [ANY],
                    users=sorted(set(users)) if users else [ANY],
                    created_at=datetime.now(UTC).replace(microsecond=0).isoformat(),
                )
            )
            self._save(records)
        return secret

    def revoke(self, name: str) -> None:
        with _LOCK:
            records = self._load()
            kept = [r for r in records if r.name != name]
            if len(kept) == len(records):
                raise NotFoundError(f"no token named {name!r}")
            self._save(kept)

    def verify(self, secret: str) -> TokenRecord | None:
        digest = _digest(secret)
        found = None
        for record in self._load():
            if hmac.compare_digest(record.sha256, digest):
                found = record
        return found
