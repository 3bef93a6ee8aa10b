"""User-facing errors.

Everything a user can cause (bad config, unknown agent, malformed input, unreachable
database) raises a :class:`GoclawError` subclass. The CLI prints ``error: <message>`` on one
line and exits non-zero; it never shows a traceback for these.
"""

from __future__ import annotations


class GoclawError(Exception):
    """Base class for errors a user can act on. ``str(err)`` is a one-line message."""

    exit_code = 1

    def __str__(self) -> str:
        text = super().__str__()
        # One line, always: collapse whatever a wrapped exception produced.
        return " ".join(text.split())


class ConfigError(GoclawError):
    """Invalid ``goclaw.toml``, environment variable or plugin settings."""

    exit_code = 2


class PluginError(GoclawError):
    """A plugin could not be loaded, is unknown, or may not be disabled."""

    exit_code = 2


class NotFoundError(GoclawError):
    """An agent, user, file, skill or document that does not exist."""

    exit_code = 3


class ValidationError(GoclawError):
    """Input that breaks a rule: a bad file name, an oversized file, a bad slug."""

    exit_code = 2


class PermissionDeniedError(GoclawError):
    """A write the rules refuse (e.g. a chat write to a predefined agent's file)."""

    exit_code = 4


class StoreError(GoclawError):
    """The database is unreachable, locked beyond retries, too new, or the disk refused."""

    exit_code = 5


class FeatureUnavailableError(GoclawError):
    """A feature whose plugin is disabled, or which is not built yet."""

    exit_code = 6
