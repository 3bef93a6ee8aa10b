"""placeholder"""

from __future__ import annotations

from typing import Any


class SessionService:
    def __init__(self, engine: Any) -> None:
        self.engine = engine
