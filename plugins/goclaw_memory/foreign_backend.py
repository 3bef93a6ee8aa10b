"""A search backend another plugin registered, its failures named after that plugin.

The memory service calls its backend deep inside every index and search. When a third-party
backend raises, the error that reaches the user names the backend and its plugin, as a
:class:`~goclaw.errors.PluginError` (the CLI's one-line error, the HTTP API's 500, an MCP tool
error), instead of an anonymous internal error; the original exception stays its ``__cause__``
and the traceback goes to the debug log. The built-in backends are used as they are.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from goclaw.errors import GoclawError, PluginError

if TYPE_CHECKING:
    from goclaw.contracts.host import Host

log = logging.getLogger(__name__)


def backend_owner(host: Host, name: str) -> str | None:
    """The plugin that registered search backend ``name`` (None: a hook wrapper or nobody)."""
    for plugin, registered in host.hooks.call("goclaw_search_backends"):
        if name in registered:
            return plugin
    return None


def open_backend(host: Host, name: str, factory: Callable[[Host], Any], open_with: Any) -> Any:
    """``factory(host)``, opened on ``open_with``; a third party's wrapped in :class:`ForeignBackend`."""
    plugin = backend_owner(host, name)
    if plugin is None or host.hooks.manager.is_builtin(plugin):
        backend = factory(host)
        backend.open(open_with)
        return backend
    inner = _named(name, plugin, "its factory", factory)(host)
    backend = _wrapper_class(type(inner))(inner, name, plugin)
    backend.open(open_with)
    return backend


class ForeignBackend:
    """Every public method of ``inner``, an exception that is not a goclaw error re-raised as a
    :class:`PluginError` naming the backend and its plugin; attributes pass through."""

    def __init__(self, inner: Any, name: str, plugin: str) -> None:
        self.inner = inner
        self._name = name
        self._plugin = plugin

    def __getattr__(self, attr: str) -> Any:
        value = getattr(self.inner, attr)
        if attr.startswith("_") or not callable(value):
            return value
        return _named(self._name, self._plugin, f"{attr}()", value)


_WRAPPERS: dict[type, type[ForeignBackend]] = {}


def _wrapper_class(cls: type) -> type[ForeignBackend]:
    """A :class:`ForeignBackend` subclass per backend class, named and placed like it: code that
    tells backends apart by class (a per-class cache, a check of the module) still can."""
    wrapper = _WRAPPERS.get(cls)
    if wrapper is None:
        namespace = {"__module__": cls.__module__, "__qualname__": cls.__qualname__}
        wrapper = _WRAPPERS[cls] = type(cls.__name__, (ForeignBackend,), namespace)
    return wrapper


def _named(name: str, plugin: str, where: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    def call(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except GoclawError:
            raise
        except Exception as exc:
            log.debug("search backend %r of plugin %s failed in %s", name, plugin, where, exc_info=True)
            raise PluginError(
                f"search backend {name!r} of plugin {plugin!r} failed in {where}: "
                f"{type(exc).__name__}: {' '.join(str(exc).split())} (a bug in that plugin: "
                "report it to its authors, or select another backend with [plugins.memory] backend)"
            ) from exc

    return call
