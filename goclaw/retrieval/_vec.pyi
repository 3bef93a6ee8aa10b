"""Types of the optional C vector-channel kernels (``_vec.c``); see goclaw/retrieval/vecq.py."""

from typing import Any

ABI: int

def quantize(vec: Any, q8: Any, scale: Any, err: Any) -> None:
    """Each row of ``vec`` (float32, n x d) as int8 into ``q8`` (n x d), its scale and error bound
    into ``scale`` and ``err`` (float32, n)."""
    ...

def scan(
    q8: Any, scale: Any, err: Any, qhat: Any, lo: Any, hi: Any, t: float, eq: float, m: float, slack: float
) -> None:
    """Each row's lower and upper cosine bound into ``lo`` and ``hi`` (float32, n)."""
    ...

def exact(vec: Any, q: Any, slots: Any | None, out: Any) -> None:
    """The exact cosines of the rows ``slots`` (int64; ``None``: every row) into ``out``."""
    ...

def simd() -> str: ...
def set_simd(on: bool) -> bool: ...
