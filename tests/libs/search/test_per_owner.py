"""PerOwner: one object per owner, made once, gone when the owner closes or is collected."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Callable
from typing import Any

from goclaw_search.per_owner import PerOwner


class Owner:
    def __init__(self) -> None:
        self.callbacks: list[Callable[[], Any]] = []

    def on_close(self, callback: Callable[[], Any]) -> None:
        self.callbacks.append(callback)

    def close(self) -> None:
        for callback in self.callbacks:
            callback()


def test_one_object_per_owner_made_once() -> None:
    registry: PerOwner[list[Any]] = PerOwner()
    made: list[Any] = []

    def make(owner: Any) -> list[Any]:
        made.append(owner)
        return [owner]

    a, b = Owner(), Owner()
    assert registry.get(a, make) is registry.get(a, make)
    assert registry.get(b, make) is not registry.get(a, make)
    assert made == [a, b]


def test_the_object_goes_when_its_owner_closes_or_is_collected() -> None:
    registry: PerOwner[object] = PerOwner()
    a = Owner()
    first = registry.get(a, lambda _o: object())
    a.close()
    assert registry.get(a, lambda _o: object()) is not first  # made again after the close
    b = Owner()
    registry.get(b, lambda _o: object())
    gone = weakref.ref(b)
    del b
    gc.collect()
    assert gone() is None  # the registry does not keep its owner alive
