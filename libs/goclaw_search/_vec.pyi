"""Types of the optional C vector-channel kernels (``_vec.c``); see libs/goclaw_search/vecq.py."""

from typing import Any

ABI: int

def quantize(vec: Any, mu: Any, q8: Any, scale: Any, err: Any, norm: Any) -> None:
    """Each row of ``vec`` (float32, n x d) less ``mu`` (float32, d) as int8 into ``q8`` (n x d),
    its scale, error bound and norm into ``scale``, ``err`` and ``norm`` (float32, n)."""
    ...

def scan(
    q8: Any,
    scale: Any,
    err: Any,
    norm: Any,
    qhat: Any,
    lo: Any,
    hi: Any,
    t: float,
    eq: float,
    m: float,
    mq: float,
    slack: float,
) -> None:
    """Each row's lower and upper cosine bound into ``lo`` and ``hi`` (float32, n)."""
    ...

def exact(vec: Any, q: Any, slots: Any | None, out: Any) -> None:
    """The exact cosines of the rows ``slots`` (int64; ``None``: every row) into ``out``."""
    ...

def fuse_scan(
    q8: Any,
    scale: Any,
    err: Any,
    norm: Any,
    mu: Any,
    vec: Any,
    q: Any,
    lexical: Any | None,
    mask: Any | None,
    boost: Any | None,
    text_weight: float,
    vector_weight: float,
    limit: int,
    slack: float,
) -> tuple[list[int], list[float], list[float] | None, list[float], int] | None:
    """The weighted fusion from the int8 scan in one pass, ranked: ``(slots, scores, lexical,
    vector, rescored)``; ``None`` when undecided."""
    ...

def simd() -> str: ...
def set_simd(on: bool | str) -> bool: ...
