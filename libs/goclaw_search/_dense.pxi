# Included by _vec.pyx: scores kept in a dense array, one slot per chunk
# (goclaw_search.dense, which defines what each computes and holds the numpy versions: the same
# results, bit for bit; tests/libs/search/test_dense.py compares them).
#
# * scatter_add: out[ords[i]] += w * factor[i], in posting order;
# * top_positive: the indexes of the m best positive entries, best first, ties by the lower
#   index: one pass with a bounded heap instead of a partition of every nonzero entry.


def scatter_add(double[::1] out, const int32_t[::1] ords, const double[::1] factor, double w):
    """Add ``w * factor[i]`` to ``out[ords[i]]`` for every i (IndexError on an ordinal outside
    ``out``, checked before anything is added)."""
    cdef Py_ssize_t i, n = ords.shape[0], size = out.shape[0]
    cdef int32_t o
    cdef bint bad = False
    if factor.shape[0] != n:
        raise ValueError("ords and factor differ in length")
    with nogil:
        for i in range(n):
            o = ords[i]
            if o < 0 or o >= size:
                bad = True
                break
        if not bad:
            for i in range(n):
                out[ords[i]] += w * factor[i]
    if bad:
        raise IndexError("an ordinal lies outside the score array")


cdef inline bint _worse(const double* s, int64_t a, int64_t b) noexcept nogil:
    """Slot a ranks below slot b: a lower score, or the same score and a higher index."""
    return s[a] < s[b] or (s[a] == s[b] and a > b)


cdef void _sift_down(const double* s, int64_t* h, Py_ssize_t size, Py_ssize_t at) noexcept nogil:
    cdef Py_ssize_t child
    cdef int64_t item = h[at]
    while True:
        child = 2 * at + 1
        if child >= size:
            break
        if child + 1 < size and _worse(s, h[child + 1], h[child]):
            child += 1
        if not _worse(s, h[child], item):
            break
        h[at] = h[child]
        at = child
    h[at] = item


def top_positive(const double[::1] score, Py_ssize_t m):
    """The indexes (int64) of the ``m`` best entries above zero, best first, ties by the lower
    index."""
    cdef Py_ssize_t n = score.shape[0], size = 0, i, at, parent
    if m <= 0 or n == 0:
        return np.zeros(0, dtype=np.int64)
    heap = np.empty(min(m, n), dtype=np.int64)
    cdef int64_t[::1] hv = heap
    cdef int64_t* h = &hv[0]
    cdef const double* sc = &score[0]
    cdef Py_ssize_t cap = hv.shape[0]
    cdef double floor = 0.0  # what an entry must beat: zero, then (heap full) the worst kept
    with nogil:
        for i in range(n):
            if not sc[i] > floor:  # one well-predicted test for most entries
                continue
            if size < cap:  # sift up: the worst stays at the root
                at = size
                size += 1
                while at > 0:
                    parent = (at - 1) // 2
                    if not _worse(sc, i, h[parent]):
                        break
                    h[at] = h[parent]
                    at = parent
                h[at] = i
                if size == cap:
                    floor = sc[h[0]]
            else:  # better than the root (an equal score has a higher index: not better)
                h[0] = i
                _sift_down(sc, h, size, 0)
                floor = sc[h[0]]
    found = heap[:size]
    return found[np.lexsort((found, -np.asarray(score)[found]))]
