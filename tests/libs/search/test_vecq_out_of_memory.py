"""``_vec.c`` ``fuse_scan`` out of memory at each of its allocations in turn (CPython's
``_testcapi.set_nomemory``): it raises MemoryError, and makes no other allocation once one
failed. It used to make the result's four lists in one initializer: when the first failed
(MemoryError set) it went on making the other three, calling the C API with an exception set.

What an allocation failure stops is measured with tracemalloc: the same call is made with that
allocation alone failing and with every allocation from it on failing. The two may differ only
by what raising the error costs (a few hundred bytes) when nothing is allocated after the
failure; carrying on made whole lists (tens of kilobytes here). Run in a child process: the
failing allocator is the whole process's, and ``fuse_scan`` lets other threads run."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from goclaw_search import vecq

CHILD = textwrap.dedent(
    """
    import tracemalloc

    import _testcapi
    import numpy as np

    from goclaw_search import vecq

    c = vecq.compiled
    rng = np.random.default_rng(3)
    n, d, limit = 600, 16, 300
    m = rng.standard_normal((n, d)).astype(np.float32)
    m /= np.linalg.norm(m, axis=1, keepdims=True)
    mu = vecq.centre(m)
    q8 = np.empty((n, d), np.int8)
    s, e, nrm = (np.empty(n, np.float32) for _ in range(3))
    c.quantize(m, mu, q8, s, e, nrm)
    q = vecq.unit(rng.standard_normal(d), d)
    lex = (rng.random(n) + 0.1).astype(np.float32)
    want = c.fuse_scan(q8, s, e, nrm, mu, m, q, lex, None, None, 0.3, 0.7, limit, 1e-6)
    assert want is not None and len(want[0]) == limit and want[2] is not None
    tracemalloc.start()


    def call(start, stop):
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        _testcapi.set_nomemory(start, stop)
        try:
            got = c.fuse_scan(q8, s, e, nrm, mu, m, q, lex, None, None, 0.3, 0.7, limit, 1e-6)
        except MemoryError:
            got = None
        finally:
            _testcapi.remove_mem_hooks()
        return got, tracemalloc.get_traced_memory()[1] - base


    k, worst = 0, 0
    while True:
        one, alone = call(k, k + 1)  # allocation k fails, the others succeed
        if one is not None:  # past its last allocation
            assert one == want
            break
        rest, onward = call(k, 0)  # allocation k and every later one fail
        assert rest is None
        worst = max(worst, alone - onward)
        k += 1
    print(k, worst)
    """
)


@pytest.mark.skipif(vecq.compiled is None, reason="no C kernels")
def test_fuse_scan_stops_at_its_first_failed_allocation() -> None:
    try:
        import _testcapi  # noqa: F401
    except ImportError:
        pytest.skip("no _testcapi in this Python")
    out = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    allocations, worst = map(int, out.stdout.split())
    assert allocations > 2 * 300  # every one of the lists' items failed once
    assert worst < 2048, f"{worst} bytes allocated after an allocation failed"
