"""One object per owner (an engine): made on first use, shared by threads, dropped when the
owner closes (its ``on_close`` callbacks) or is garbage-collected. The memory tiers keep their
searchers this way: a searcher's indexes outlive a search, and a searcher holding its engine
must not keep a closed engine alive through the registry."""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
from typing import Any, Generic, TypeVar

__all__ = ["PerOwner"]

T = TypeVar("T")


class PerOwner(Generic[T]):
    """``registry.get(owner, make)``: ``owner``'s object, ``make(owner)`` the first time. The
    owner is held weakly; if it has ``on_close(callback)``, its object goes when it closes."""

    def __init__(self) -> None:
        self._values: weakref.WeakKeyDictionary[Any, T] = weakref.WeakKeyDictionary()
        self._lock = threading.Lock()

    def get(self, owner: Any, make: Callable[[Any], T]) -> T:
        with self._lock:
            found = self._values.get(owner)
            if found is None:
                found = self._values[owner] = make(owner)
                on_close = getattr(owner, "on_close", None)
                if on_close is not None:
                    on_close(lambda: self._drop(owner))
            return found

    def _drop(self, owner: Any) -> None:
        with self._lock:
            self._values.pop(owner, None)
