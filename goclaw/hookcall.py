"""Per-plugin failure isolation and attribution inside pluggy's own call loop.

Every hook is called through ``pm.hook.<name>(...)``, so pluggy's wrappers (``wrapper=True`` and
old-style ``hookwrapper=True``), ``add_hookcall_monitoring`` and tracing see every call. Two
things pluggy does not do are added by instrumenting each hook implementation when its plugin is
registered (:func:`instrument`):

* **isolation**: a third-party implementation that raises is reported
  (:meth:`~goclaw.plugins.GoclawPluginManager.report_failure`: the plugin is marked ``failed``)
  and contributes nothing, instead of aborting the call for everyone; under ``plugins.strict``
  the report re-raises. A third-party wrapper that raises before or after its ``yield`` is
  reported and skipped the same way (the call goes on as if it were absent). A built-in's
  exception propagates: it is our bug, not the user's.
* **attribution**: each implementation records which plugin returned which result, so the facade
  (:class:`goclaw.hooks.Hooks`) can name both plugins of a duplicate, own each contribution
  (which is whom a contribution's failure blames), and key settings models by plugin, even
  when a wrapper rearranged or rebuilt the result lists.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Generator, Iterator
from contextlib import contextmanager
from itertools import groupby
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import pluggy
    from pluggy import HookImpl

_MARK = "__goclaw_instrumented__"


class CallRecorder:
    """Which plugin returned which result during one facade call (thread-local stack of frames)."""

    def __init__(self) -> None:
        self._local = threading.local()

    def _stack(self) -> list[tuple[str, list[tuple[str, object]]]]:
        stack: list[tuple[str, list[tuple[str, object]]]] | None = getattr(self._local, "stack", None)
        if stack is None:
            stack = []
            self._local.stack = stack
        return stack

    @contextmanager
    def frame(self, hook: str) -> Iterator[list[tuple[str, object]]]:
        """Record the results of ``hook``'s implementations while the block runs."""
        stack = self._stack()
        recorded: list[tuple[str, object]] = []
        stack.append((hook, recorded))
        try:
            yield recorded
        finally:
            stack.pop()

    def record(self, hook: str, plugin: str, result: object) -> None:
        stack = self._stack()
        if stack and stack[-1][0] == hook:
            stack[-1][1].append((plugin, result))


def attribute(
    results: list[Any], recorded: list[tuple[str, object]], wrapper: str | None = None
) -> list[tuple[str | None, Any]]:
    """Pair each result pluggy returned with the plugin that produced it, by identity. A list or
    dict a wrapper rebuilt is split into runs of one owner, found by its items' (its values')
    identity, so a wrapper is transparent; what a wrapper made up itself is ``wrapper``'s."""
    whole: dict[int, str] = {}
    parts: dict[int, str] = {}
    for plugin, value in recorded:
        whole.setdefault(id(value), plugin)
        for item in value.values() if isinstance(value, dict) else value if isinstance(value, list) else ():
            parts.setdefault(id(item), plugin)
    out: list[tuple[str | None, Any]] = []
    for result in results:
        if id(result) in whole or not isinstance(result, list | dict):
            out.append((whole.get(id(result), wrapper), result))
            continue
        pairs = list(result.items()) if isinstance(result, dict) else [(None, item) for item in result]
        for owner, run in groupby(pairs, lambda pair: parts.get(id(pair[1]), wrapper)):
            run_items = list(run)
            out.append((owner, dict(run_items) if isinstance(result, dict) else [v for _, v in run_items]))
    return out


class _Manager(Protocol):
    """What the guards use of :class:`goclaw.plugins.GoclawPluginManager` (which imports this
    module, so it is described here rather than imported)."""

    @property
    def pm(self) -> pluggy.PluginManager: ...

    @property
    def recorder(self) -> CallRecorder: ...

    def is_builtin(self, name: str) -> bool: ...

    def report_failure(self, name: str, hook: str, exc: BaseException) -> None: ...


def instrument(manager: _Manager, plugin: object) -> None:
    """Wrap every hook implementation of the registered ``plugin`` (see the module docstring)."""
    for caller in manager.pm.get_hookcallers(plugin) or []:
        for impl in caller.get_hookimpls():
            if impl.plugin is not plugin or getattr(impl.function, _MARK, False):
                continue
            isolate = not manager.is_builtin(impl.plugin_name)
            if impl.wrapper or impl.hookwrapper:
                if not isolate:
                    continue
                guarded = _guard_wrapper(manager, impl, caller.name)
            else:
                guarded = _guard_plain(manager, impl, caller.name, isolate)
            setattr(guarded, _MARK, True)
            # HookImpl.function is declared Final for type checkers only; pluggy calls it with the
            # positional argnames it computed from the original function at registration.
            setattr(impl, "function", guarded)  # noqa: B010


def _guard_plain(manager: _Manager, impl: HookImpl, hook: str, isolate: bool) -> Callable[..., Any]:
    fn = impl.function
    plugin = impl.plugin_name

    @functools.wraps(fn)
    def guarded(*args: Any, **kwargs: Any) -> Any:
        try:
            result = fn(*args, **kwargs)
        except Exception as exc:
            if not isolate:
                raise
            manager.report_failure(plugin, hook, exc)
            return None
        if result is not None:
            manager.recorder.record(hook, plugin, result)
        return result

    return guarded


def _guard_wrapper(manager: _Manager, impl: HookImpl, hook: str) -> Callable[..., Any]:
    """A generator standing in for a third-party wrapper: it forwards pluggy's ``send``/``throw``
    to the plugin's generator and turns the plugin's own failures into a report and a no-op."""
    fn = impl.function
    plugin = impl.plugin_name
    where = f"{hook} (wrapper)"

    def guarded(*args: Any, **kwargs: Any) -> Generator[None, Any, Any]:
        try:
            gen: Generator[None, Any, Any] = fn(*args, **kwargs)  # type: ignore[assignment]
            next(gen)
        except StopIteration:
            manager.report_failure(plugin, where, RuntimeError("the wrapper did not yield"))
            return (yield)
        except Exception as exc:
            manager.report_failure(plugin, where, exc)
            return (yield)
        try:
            outcome = yield
        except BaseException as inner:
            try:
                gen.throw(inner)
            except StopIteration as stop:
                return stop.value
            except BaseException as exc:
                if exc is inner or not isinstance(exc, Exception):
                    raise
                manager.report_failure(plugin, where, exc)
                raise inner from None
            manager.report_failure(plugin, where, RuntimeError("the wrapper yielded twice"))
            raise
        try:
            gen.send(outcome)
        except StopIteration as stop:
            return stop.value
        except Exception as exc:
            manager.report_failure(plugin, where, exc)
            return outcome
        gen.close()
        manager.report_failure(plugin, where, RuntimeError("the wrapper yielded twice"))
        return outcome

    functools.update_wrapper(guarded, fn)
    return guarded
