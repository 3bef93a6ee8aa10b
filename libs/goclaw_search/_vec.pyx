# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The vector channel's int8 kernels (see goclaw_search.vecq, which defines what each computes
and holds the numpy versions: the same results, bit for bit; tests/libs/search/test_vec_kernels.py
compares them).

* quantize: each row's int8 copy about the centre, its scale, error and norm (the squared sums
  in 8 lanes, j mod 8, added in lane order);
* scan: each row's bounds on its exact cosine from one int8 dot product (the dots by
  _vec_dots.h: AVX-VNNI, AVX512-VNNI or AVX2 where the CPU has them, else a portable loop;
  the same exact int32 dots);
* exact: the exact cosine of some rows (16 float64 lanes, j mod 16, added as a fixed tree);
* fuse_cut: the scan with the weighted fusion's cut in the same pass (the candidates to rescore);
* split, short_ids, gather, number_pieces (_pieces.pxi, included at the end): the term table's
  pieces of a batch's ASCII texts, their piece ids, the batch's term ids and stored forms and the terms of
  the pieces new to the table (goclaw_search.term_table; the same results as its numpy
  versions, tests/libs/search/test_term_table.py compares them);
* first_seen, postings (_pieces.pxi): a bulk load's new term ids in order of first occurrence
  and its postings by a counting sort (goclaw_search.index_build, whose numpy/scipy versions
  give the same arrays).
* passage_pieces, passage_piece_slots, piece_tokens, passage_norms: the passage sketches' pieces
  numbered (a hash table of their UTF-8 bytes), their token ids by segment and passage norms
  (goclaw_embeddings.static_passages, whose numpy versions give the same arrays, bit for bit;
  tests/plugins/embeddings/test_static_passages.py compares them).
* scatter_add, top_positive (_dense.pxi, included at the end): scores in a dense array, one slot
  per chunk, and its best slots (goclaw_search.dense: the postgresql memory backend's exact BM25
  of every matching chunk).
* lex_positions (_lexpos.pxi, included at the end): the query terms' positions among a stored
  term string's words (goclaw_search.rerank, whose Python version gives the same lists).

The indexing loops share the module because one compiled module is simpler to build and ship
than two; at 100,000 chunks they take tokenizing from ~2.3 to ~1.7 s of CPU and the index build
from 0.79 to 0.57 s (benchmarks/results/2026-12-05-indexing-guard.md).

Arrays arrive as typed memoryviews (type, dimensions and C-contiguity checked on entry); the
loops run without the GIL. Built by setuptools from this file (Cython) when a C compiler is
there; without it goclaw_search.vecq runs the numpy versions.
"""

from libc.math cimport fabs, fabsf, sqrt, nextafterf, INFINITY, isfinite
from libc.stddef cimport ptrdiff_t
from libc.stdint cimport int8_t, int32_t, int64_t, uint8_t, uint64_t
from libc.stdlib cimport malloc, free

import numpy as np

cdef double MAGIC = 6755399441055744.0  # 1.5 x 2^52: (x + MAGIC) - MAGIC rounds to an integer, halves to even

cdef double TWO_M20 = 1.0 / 1048576.0  # 2^-20

cdef enum:
    QLANES = 8  # quantize's squared sums: lane j mod 8
    LANES = 16  # exact's float64 accumulators: lane j mod 16
    BLOCK = 256  # rows whose bounds fuse_cut computes at once
    MAX_DIM = 65536  # an int32 dot of int8 rows cannot overflow below 133,000


cdef inline double rint(double x) noexcept nogil:
    return (x + MAGIC) - MAGIC


cdef inline float round_up(double x) noexcept nogil:
    cdef float f = <float>x
    if <double>f < x:
        f = nextafterf(f, INFINITY)
    return f


cdef inline double up(double x) noexcept nogil:
    return x * (1.0 + 1e-12) + 1e-300


# ------------------------------------------------------------------ quantize


cdef void quantize_rows(const float *vec, const float *mu, Py_ssize_t n, Py_ssize_t d, int8_t *q8,
                        float *scale, float *err, float *norm) noexcept nogil:
    cdef Py_ssize_t i, j, lane
    cdef const float *v
    cdef int8_t *out
    cdef float top, a, s
    cdef double topd, c, ds, x, r, diff, se, sn
    cdef int finite
    cdef double e2[QLANES]
    cdef double n2[QLANES]
    for i in range(n):
        v = vec + i * d
        out = q8 + i * d
        top = 0.0
        topd = 0.0
        finite = 1
        for j in range(d):
            a = fabsf(v[j])
            c = fabs(<double>v[j] - <double>mu[j])
            finite &= (a <= <float>3.402823466e38) & (c <= 1e300)  # false for NaN and inf
            top = a if a > top else top
            topd = c if c > topd else topd
        for j in range(d):
            out[j] = 0
        if not finite:  # a row the bounds cannot describe: always rescored
            scale[i] = 0.0
            err[i] = INFINITY
            norm[i] = INFINITY
            continue
        if top == 0.0:  # a zero row (no vector): its cosine is exactly 0
            scale[i] = 0.0
            err[i] = 0.0
            norm[i] = 0.0
            continue
        s = <float>(topd / 127.0)
        ds = <double>s if s > 0.0 else INFINITY  # x / inf = 0
        for lane in range(QLANES):
            e2[lane] = 0.0
            n2[lane] = 0.0
        for j in range(d):
            x = <double>v[j] - <double>mu[j]
            r = rint(x / ds)
            r = 127.0 if r > 127.0 else (-127.0 if r < -127.0 else r)
            out[j] = <int8_t>r
            diff = x - <double>s * r  # s r is exact
            e2[j % QLANES] += diff * diff
            n2[j % QLANES] += x * x
        se = 0.0
        sn = 0.0
        for lane in range(QLANES):
            se += e2[lane]
            sn += n2[lane]
        scale[i] = s
        err[i] = round_up(sqrt(se) * (1.0 + TWO_M20) + 1e-9)
        norm[i] = round_up(sqrt(sn) * (1.0 + TWO_M20) + 1e-9)


def quantize(const float[:, ::1] vec, const float[::1] mu, int8_t[:, ::1] q8, float[::1] scale,
             float[::1] err, float[::1] norm):
    """Each row of ``vec`` less ``mu`` as int8 into ``q8``, its scale, error and norm."""
    cdef Py_ssize_t n = vec.shape[0], d = vec.shape[1]
    if mu.shape[0] != d or q8.shape[0] != n or q8.shape[1] != d or scale.shape[0] != n or \
            err.shape[0] != n or norm.shape[0] != n:
        raise ValueError("quantize: mu needs one item per column, q8 vec's shape, scale, err and norm one per row")
    if n == 0 or d == 0:
        for i in range(n):
            scale[i] = 0.0
            err[i] = 0.0
            norm[i] = 0.0
        return
    with nogil:
        quantize_rows(&vec[0, 0], &mu[0], n, d, &q8[0, 0], &scale[0], &err[0], &norm[0])


# ------------------------------------------------------------------ scan


cdef extern from "_vec_dots.h" nogil:
    ctypedef void (*goclaw_dots_fn)(const int8_t *, ptrdiff_t, const int8_t *, ptrdiff_t, ptrdiff_t,
                                    int32_t *) noexcept nogil
    goclaw_dots_fn goclaw_dots_for(int portable, const char **name)


cdef const char *KERNEL = NULL
cdef goclaw_dots_fn DOTS = goclaw_dots_for(0, &KERNEL)


def kernel():
    """The int8 dot kernel in use: "avxvnni", "avx512vnni", "avx2" or "portable"."""
    return KERNEL.decode("ascii")


def use_portable(bint portable):
    """The portable dot loop (True) or the best the CPU has (False); the tests compare them."""
    global DOTS
    DOTS = goclaw_dots_for(portable, &KERNEL)


cdef void bounds(const int8_t *q8, const int8_t *qhat, const float *scale, const float *err,
                 const float *norm, Py_ssize_t from_, Py_ssize_t count, Py_ssize_t d, double t,
                 double eq, double m, double mq, double slack, float *lo, float *hi) noexcept nogil:
    """Rows from_..from_+count's bounds (a zero row, scale and err both 0: exactly 0)."""
    cdef Py_ssize_t i, r
    cdef double a, rr
    cdef int32_t dots[BLOCK]
    DOTS(q8, d, qhat, from_, count, dots)
    for i in range(count):
        r = from_ + i
        a = mq + (<double>scale[r] * t) * <double>dots[i]
        rr = (eq * <double>norm[r] + m * <double>err[r]) + slack
        if scale[r] == 0.0 and err[r] == 0.0:
            lo[i] = 0.0
            hi[i] = 0.0
        else:
            lo[i] = <float>(a - rr)
            hi[i] = <float>(a + rr)


def scan(const int8_t[:, ::1] q8, const float[::1] scale, const float[::1] err, const float[::1] norm,
         const int8_t[::1] qhat, float[::1] lo, float[::1] hi, double t, double eq, double m, double mq,
         double slack):
    """Each row's lower and upper cosine bound into ``lo`` and ``hi``."""
    cdef Py_ssize_t n = q8.shape[0], d = q8.shape[1]
    if scale.shape[0] != n or err.shape[0] != n or norm.shape[0] != n or lo.shape[0] != n or \
            hi.shape[0] != n or qhat.shape[0] != d:
        raise ValueError("scan: scale, err, norm, lo and hi need one item per row, qhat one per column")
    if d > MAX_DIM:
        raise ValueError("scan: more than 65536 dimensions")
    if n == 0:
        return
    cdef const int8_t *rows = &q8[0, 0] if d else NULL
    cdef const int8_t *qh = &qhat[0] if d else NULL
    cdef Py_ssize_t from_ = 0
    with nogil:
        while from_ < n:
            bounds(rows, qh, &scale[0], &err[0], &norm[0], from_, min(BLOCK, n - from_), d, t, eq, m, mq, slack,
                   &lo[from_], &hi[from_])
            from_ += BLOCK


# ------------------------------------------------------------------ exact


cdef void exact_rows(const float *vec, Py_ssize_t d, const double *q, const int64_t *slots, Py_ssize_t k,
                     float *out) noexcept nogil:
    cdef Py_ssize_t i, j, l, w
    cdef Py_ssize_t full = d - d % LANES
    cdef const float *v
    cdef double acc[LANES]
    for i in range(k):
        v = vec + (slots[i] if slots != NULL else i) * d
        for l in range(LANES):
            acc[l] = 0.0
        j = 0
        while j < full:
            for l in range(LANES):
                acc[l] += <double>v[j + l] * q[j + l]
            j += LANES
        for j in range(full, d):
            acc[j - full] += <double>v[j] * q[j]
        w = LANES // 2
        while w >= 1:
            for l in range(w):
                acc[l] = acc[l] + acc[l + w]
            w //= 2
        out[i] = <float>acc[0]


def exact(const float[:, ::1] vec, const float[::1] q, slots, float[::1] out):
    """The exact cosines of the rows ``slots`` (int64; ``None``: every row) into ``out``."""
    cdef Py_ssize_t n = vec.shape[0], d = vec.shape[1], k, i, j
    cdef const int64_t[::1] at
    cdef const int64_t *sp = NULL
    if slots is not None:
        at = slots
        k = at.shape[0]
        for i in range(k):
            if at[i] < 0 or at[i] >= n:
                raise IndexError("exact: a slot outside vec")
        if k:
            sp = &at[0]
    else:
        k = n
    if q.shape[0] != d or out.shape[0] != k:
        raise ValueError("exact: q needs one item per column, out one per row asked")
    if k == 0:
        return
    if d == 0:
        for i in range(k):
            out[i] = 0.0
        return
    cdef double *q64 = <double *>malloc(sizeof(double) * d)
    if q64 == NULL:
        raise MemoryError()
    for j in range(d):
        q64[j] = <double>q[j]
    with nogil:
        exact_rows(&vec[0, 0], d, q64, sp, k, &out[0])
    free(q64)


# ------------------------------------------------------------------ the scan with the fusion's cut


cdef inline void heap_push(float *heap, Py_ssize_t cnt, float x) noexcept nogil:
    cdef Py_ssize_t i = cnt, p
    while i > 0:
        p = (i - 1) // 2
        if not (heap[p] > x):
            break
        heap[i] = heap[p]
        i = p
    heap[i] = x


cdef inline void heap_replace_top(float *heap, Py_ssize_t k, float x) noexcept nogil:
    cdef Py_ssize_t i = 0, c
    while True:
        c = 2 * i + 1
        if c >= k:
            break
        if c + 1 < k and heap[c + 1] < heap[c]:
            c += 1
        if not (heap[c] < x):
            break
        heap[i] = heap[c]
        i = c
    heap[i] = x


cdef Py_ssize_t fuse_rows(const int8_t *q8, const float *scale, const float *err, const float *norm,
                          const int8_t *qhat, Py_ssize_t n, Py_ssize_t d, double t, double eq, double m,
                          double mq, double slack, const float *lex, const uint8_t *mask,
                          const float *boost, float tw, float vw, Py_ssize_t k, int64_t *cand,
                          float *high_of, float *heap, float *best_lo) noexcept nogil:
    """The scan with the weighted fusion's cut (fusion.py _weighted_bounded): each row in scope
    gets bounds low <= fused score <= high; the k-th best low (a min-heap) is the cut; the rows
    whose high reaches it (or is positive, when fewer than k rows are in scope) go to ``cand``
    in row order. Returns how many, or -1 for a value the bounds cannot order (lo > hi, NaN, a
    negative or infinite boost). ``best_lo``: the best lower cosine bound in scope (-inf: none)."""
    cdef float lo[BLOCK]
    cdef float hi[BLOCK]
    cdef float low, high, a, b, w, p
    cdef Py_ssize_t from_, count, r, row, cnt = 0, got = 0, out = 0, c
    cdef float cut = -INFINITY, final
    cdef float best = -INFINITY
    cdef int any_in_scope = 0
    from_ = 0
    while from_ < n:
        count = n - from_ if n - from_ < BLOCK else BLOCK
        bounds(q8, qhat, scale, err, norm, from_, count, d, t, eq, m, mq, slack, lo, hi)
        for r in range(count):
            row = from_ + r
            if not (lo[r] <= hi[r]):
                return -1
            a = lo[r] if lo[r] > 0.0 else 0.0
            b = hi[r] if hi[r] > 0.0 else 0.0
            low = a * vw
            high = b * vw
            if lex != NULL:
                p = lex[row] * tw
                low = p + low
                high = p + high
            if boost != NULL:
                w = boost[row]
                if not (w >= 0.0) or not (w <= <float>3.4028235e38):
                    return -1
                low = low * w
                high = high * w
            if low != low or high != high:
                return -1
            if mask != NULL and not mask[row]:
                continue
            if not any_in_scope or lo[r] > best:
                best = lo[r]
                any_in_scope = 1
            # low <= high (lo <= hi, weights and boosts >= 0, float rounding monotonic): a row
            # whose high is below the cut can neither enter the heap nor be a candidate
            if not (high >= cut):
                continue
            if cnt < k:
                heap_push(heap, cnt, low)
                cnt += 1
                if cnt == k:
                    cut = heap[0]
            elif low > cut:
                heap_replace_top(heap, k, low)
                cut = heap[0]
            if high > 0.0 and high >= cut:  # the cut only grows: a superset
                cand[got] = row
                high_of[got] = high
                got += 1
        from_ += BLOCK
    # _reaching: the k-th best low in scope when k rows are in scope, else none (-inf)
    final = cut if cnt == k else -INFINITY
    for c in range(got):
        if (high_of[c] >= final) if final > 0.0 else (high_of[c] > 0.0):
            cand[out] = cand[c]
            out += 1
    best_lo[0] = best
    return out


def fuse_cut(const int8_t[:, ::1] q8, const float[::1] scale, const float[::1] err, const float[::1] norm,
             const float[::1] mu, const float[::1] q, lexical, mask, boost, double text_weight,
             double vector_weight, Py_ssize_t limit, double slack):
    """The candidates of the weighted fusion from one pass over the int8 rows: ``(cand int64,
    best_lo, best_lex)`` (best_lex: the best lexical score in scope, 0 when none is positive),
    or ``None`` when the pass cannot decide (a value that is not finite, or no lower bound in
    scope above 0: whether the vector channel counts is open)."""
    cdef Py_ssize_t n = q8.shape[0], d = q8.shape[1], j, i
    cdef const float[::1] lex_v
    cdef const uint8_t[::1] mask_v
    cdef const float[::1] boost_v
    cdef const float *lex = NULL
    cdef const uint8_t *inscope = NULL
    cdef const float *bst = NULL
    if scale.shape[0] != n or err.shape[0] != n or norm.shape[0] != n or mu.shape[0] != d or q.shape[0] != d:
        raise ValueError("fuse_cut: scale, err and norm need one item per row of q8, mu and q one per column")
    if d > MAX_DIM:
        raise ValueError("fuse_cut: more than 65536 dimensions")
    if limit < 1 or limit > n:
        raise ValueError("fuse_cut: limit must be between 1 and the number of rows")
    if d == 0:
        return None
    if lexical is not None:
        lex_v = lexical
        if lex_v.shape[0] != n:
            raise ValueError("fuse_cut: lexical needs one item per row")
        lex = &lex_v[0]
    if mask is not None:
        mask_v = mask.view("u1")
        if mask_v.shape[0] != n:
            raise ValueError("fuse_cut: mask needs one item per row")
        inscope = &mask_v[0]
    if boost is not None:
        boost_v = boost
        if boost_v.shape[0] != n:
            raise ValueError("fuse_cut: boost needs one item per row")
        bst = &boost_v[0]
    # The best lexical score in scope (0 if none is positive); a value that is not finite: undecided.
    cdef float best_lex = 0.0, x
    if lex != NULL:
        for i in range(n):
            x = lex[i]
            if not isfinite(x):
                return None
            if (inscope == NULL or inscope[i]) and x > best_lex:
                best_lex = x
    if not (text_weight >= 0.0) or not (vector_weight >= 0.0) or not (text_weight <= 3.4e38) or \
            not (vector_weight <= 3.4e38):
        return None
    # The unit query quantized as vecq.prepare does (the same qhat and t; eq and m valid upper
    # bounds) and mq = mu . q.
    cdef double top = 0.0, aq, tq, e2 = 0.0, m2 = 0.0, mq = 0.0, xq, rq, trq, eqv, mv
    for j in range(d):
        aq = fabs(<double>q[j])
        if not (aq <= 3.5e38):
            return None
        top = aq if aq > top else top
    tq = top / 127.0 if top > 0.0 else 1.0
    import numpy as np
    qhat_a = np.empty(d, dtype=np.int8)
    cdef int8_t[::1] qhat = qhat_a
    for j in range(d):
        xq = <double>q[j]
        rq = rint(xq / tq)
        rq = 127.0 if rq > 127.0 else (-127.0 if rq < -127.0 else rq)
        qhat[j] = <int8_t>rq
        trq = tq * rq
        e2 += (xq - trq) * (xq - trq)
        m2 += trq * trq
        mq += <double>mu[j] * xq
    if not isfinite(mq):
        return None
    eqv = up(sqrt(e2))
    mv = up(sqrt(m2))
    cdef int has_lex = best_lex > 0.0
    cdef float tw = <float>(text_weight / <double>best_lex) if has_lex else 0.0
    cdef float vw = <float>(vector_weight if has_lex else 1.0)
    if not has_lex:
        lex = NULL
    cand_a = np.empty(n, dtype=np.int64)
    cdef int64_t[::1] cand = cand_a
    cdef float *high_of = <float *>malloc(sizeof(float) * (n + limit))
    if high_of == NULL:
        raise MemoryError()
    cdef Py_ssize_t found
    cdef float best_lo = -INFINITY
    with nogil:
        found = fuse_rows(&q8[0, 0], &scale[0], &err[0], &norm[0], &qhat[0], n, d, tq, eqv, mv, mq, slack,
                          lex, inscope, bst, tw, vw, limit, &cand[0], high_of, high_of + n, &best_lo)
    free(high_of)
    if found < 0 or not (best_lo > 0.0):
        return None
    return cand_a[:found], float(best_lo), float(best_lex)


include "_pieces.pxi"
include "_dense.pxi"
include "_lexpos.pxi"


# ------------------------------------------------------------------ passage sketches

from libc.string cimport memcmp


def piece_tokens(const int64_t[::1] which, const int64_t[::1] first, const int64_t[::1] count,
                 const int32_t[::1] ids, Py_ssize_t n_seg):
    """(tokens, seg_tokens): the token ids of the pieces ``which`` numbers, side by side (piece
    k's: ``ids[first[k] : first[k] + count[k]]``), and how many of them each of the ``n_seg``
    segments has; a number < 0 ends a segment."""
    cdef Py_ssize_t n = which.shape[0], n_pieces = first.shape[0], n_ids = ids.shape[0]
    cdef Py_ssize_t i, j, seg = 0, at = 0, total = 0
    cdef int64_t w, c, f
    cdef int bad = 0
    if count.shape[0] != n_pieces or n_seg < 0:
        raise ValueError("piece_tokens: first and count differ in length")
    with nogil:
        for i in range(n):
            w = which[i]
            if w < 0:
                seg += 1
            elif w >= n_pieces or count[w] < 0 or first[w] < 0 or first[w] + count[w] > n_ids:
                bad = 1
                break
            else:
                total += count[w]
    if bad or (n and seg >= n_seg) or (not n and n_seg > 1):
        raise ValueError("piece_tokens: a piece number or segment count out of range")
    tokens_arr = np.empty(total, dtype=np.int64)
    seg_arr = np.zeros(n_seg, dtype=np.int64)
    cdef int64_t[::1] tokens = tokens_arr, seg_tokens = seg_arr
    seg = 0
    with nogil:
        for i in range(n):
            w = which[i]
            if w < 0:
                seg += 1
                continue
            c = count[w]
            f = first[w]
            for j in range(c):
                tokens[at + j] = ids[f + j]
            at += c
            seg_tokens[seg] += c
    return tokens_arr, seg_arr


def passage_norms(const float[:, ::1] matrix, const int64_t[::1] tokens, const int64_t[::1] seg_tokens,
                  const int64_t[::1] ref_seg, const int64_t[::1] nref, double top):
    """``||sum_t E_t||`` of each passage (float32): its rows added one after the other in
    float64 (its segments' tokens in order), the sums rounded to float32, their squares added
    column after column. ``top`` >= 0: every row value is a float16 value of magnitude at most
    ``top``; a passage of k tokens with k * top < 2**29 then adds its segments' sums (each
    computed once), the same sums exactly (multiples of 2**-24 below 2**29)."""
    cdef Py_ssize_t rows = matrix.shape[0], d = matrix.shape[1], n_tok = tokens.shape[0]
    cdef Py_ssize_t n_seg = seg_tokens.shape[0], n_ref = ref_seg.shape[0], n = nref.shape[0]
    cdef Py_ssize_t i, j, k, r, s, t, ref = 0
    cdef int64_t per
    cdef double acc_sq, f
    cdef const float *row
    cdef double *acc
    cdef double *sums
    cdef double *src
    cdef double *dst
    first_arr = np.zeros(n_seg + 1, dtype=np.int64)
    cdef int64_t[::1] first = first_arr
    for s in range(n_seg):
        if seg_tokens[s] < 0:
            raise ValueError("passage_norms: a negative token count")
        first[s + 1] = first[s] + seg_tokens[s]
    if first[n_seg] != n_tok:
        raise ValueError("passage_norms: seg_tokens do not add up to the tokens")
    for t in range(n_tok):
        if tokens[t] < 0 or tokens[t] >= rows:
            raise ValueError("passage_norms: a token id out of range")
    for i in range(n):
        if nref[i] < 0:
            raise ValueError("passage_norms: a negative reference count")
        ref += nref[i]
    if ref != n_ref:
        raise ValueError("passage_norms: nref does not add up to the references")
    for r in range(n_ref):
        if ref_seg[r] < 0 or ref_seg[r] >= n_seg:
            raise ValueError("passage_norms: a reference out of range")
    out_arr = np.zeros(n, dtype=np.float32)
    cdef float[::1] out = out_arr
    seg_sums_arr = np.zeros((n_seg if top >= 0 else 0, d), dtype=np.float64)
    cdef double[:, ::1] seg_sums = seg_sums_arr
    acc_arr = np.zeros(d, dtype=np.float64)
    cdef double[::1] acc_view = acc_arr
    acc = &acc_view[0] if d else NULL
    with nogil:
        if top >= 0:
            for s in range(n_seg):
                dst = &seg_sums[s, 0]
                for t in range(first[s], first[s + 1]):
                    row = &matrix[tokens[t], 0]
                    for j in range(d):
                        dst[j] += <double>row[j]
        ref = 0
        for i in range(n):
            for j in range(d):
                acc[j] = 0.0
            per = 0
            for r in range(ref, ref + nref[i]):
                per += seg_tokens[ref_seg[r]]
            if top >= 0 and <double>per * top < 536870912.0:  # 2**29
                for r in range(ref, ref + nref[i]):
                    src = &seg_sums[ref_seg[r], 0]
                    for j in range(d):
                        acc[j] += src[j]
            else:
                for r in range(ref, ref + nref[i]):
                    s = ref_seg[r]
                    for t in range(first[s], first[s + 1]):
                        row = &matrix[tokens[t], 0]
                        for j in range(d):
                            acc[j] += <double>row[j]
            ref += nref[i]
            acc_sq = 0.0
            for j in range(d):
                f = <double><float>acc[j]
                acc_sq = acc_sq + f * f
            out[i] = <float>sqrt(acc_sq)
    return out_arr


cdef inline Py_ssize_t space_at(const uint8_t *s, Py_ssize_t i, Py_ssize_t n) noexcept nogil:
    """The bytes of the whitespace character (str.isspace) that starts at s[i] in UTF-8, else 0."""
    cdef uint8_t b = s[i], b1, b2
    if b < 0x80:
        return 1 if (b == 32 or 9 <= b <= 13 or 28 <= b <= 31) else 0
    if b == 0xC2:
        return 2 if i + 1 < n and (s[i + 1] == 0x85 or s[i + 1] == 0xA0) else 0
    if b < 0xE1 or b > 0xE3 or i + 2 >= n:
        return 0
    b1 = s[i + 1]
    b2 = s[i + 2]
    if b == 0xE1:
        return 3 if b1 == 0x9A and b2 == 0x80 else 0
    if b == 0xE3:
        return 3 if b1 == 0x80 and b2 == 0x80 else 0
    if b1 == 0x80 and (b2 <= 0x8A or b2 == 0xA8 or b2 == 0xA9 or b2 == 0xAF):  # U+2000-200A, 2028/9, 202F
        return 3
    return 3 if b1 == 0x81 and b2 == 0x9F else 0  # U+205F


cdef inline uint64_t piece_hash(const uint8_t *p, Py_ssize_t n) noexcept nogil:
    cdef uint64_t h = 14695981039346656037ULL  # FNV-1a
    cdef Py_ssize_t i
    for i in range(n):
        h = (h ^ p[i]) * 1099511628211ULL
    return h ^ (h >> 29)


def passage_piece_slots(const uint8_t[::1] arena, const int64_t[::1] p_start, const int64_t[::1] p_len,
                int64_t n_pieces, int64_t[::1] slots):
    """Put pieces 0..n_pieces-1 (``arena[p_start[k] : p_start[k] + p_len[k]]``, distinct) in
    ``slots``, an empty table (every slot -1, a power of two of them, more than n_pieces)."""
    cdef Py_ssize_t mask = slots.shape[0] - 1, k
    cdef uint64_t at
    if slots.shape[0] & mask or n_pieces >= slots.shape[0] or n_pieces > p_start.shape[0] \
            or n_pieces > p_len.shape[0]:
        raise ValueError("passage_piece_slots: a table too small or not a power of two")
    for k in range(n_pieces):
        if p_start[k] < 0 or p_len[k] < 0 or p_start[k] + p_len[k] > arena.shape[0]:
            raise ValueError("passage_piece_slots: a piece out of the arena")
    with nogil:
        for k in range(n_pieces):
            at = piece_hash(&arena[0] + p_start[k], p_len[k]) & mask
            while slots[at] >= 0:
                at = (at + 1) & mask
            slots[at] = k


def passage_pieces(const uint8_t[::1] data, const int64_t[::1] seg_end, int64_t[::1] slots,
                  uint8_t[::1] arena, int64_t[::1] p_start, int64_t[::1] p_len, int64_t n_pieces,
                  int64_t used):
    """(which, n_pieces, used): the numbers of the pieces of ``data`` (UTF-8; a piece is a run
    of characters other than whitespace, as str.split finds them), segment after segment
    (segment s ends at character ``seg_end[s]``), -1 after each segment but the last. A piece not in
    the table (``slots``: open addressing, linear probing, each slot a piece number or -1) is
    numbered next and copied to ``arena`` at ``used``, followed by a space. The caller leaves
    room for every piece of ``data`` to be new, the table at most half full."""
    cdef Py_ssize_t n = data.shape[0], n_seg = seg_end.shape[0], mask = slots.shape[0] - 1
    cdef Py_ssize_t most = (n + 1) // 2, i = 0, j, w, k = 0, seg = 0, size, c = 0  # c: characters before i
    cdef uint64_t at
    cdef int64_t num
    cdef const uint8_t *s = &data[0] if n else NULL
    cdef uint8_t *dst
    if slots.shape[0] & mask or 2 * (n_pieces + most) > slots.shape[0] \
            or n_pieces + most > p_start.shape[0] or n_pieces + most > p_len.shape[0] \
            or used < 0 or used + n + most > arena.shape[0]:
        raise ValueError("passage_pieces: too little room for the new pieces")
    for j in range(n_seg):
        if seg_end[j] < 0 or seg_end[j] > n or (j and seg_end[j] < seg_end[j - 1]):
            raise ValueError("passage_pieces: segment ends out of order")
    which_arr = np.empty(most + max(n_seg - 1, 0), dtype=np.int64)
    cdef int64_t[::1] which = which_arr
    with nogil:
        while i < n:
            w = space_at(s, i, n)
            if w:
                i += w
                c += 1
                continue
            while seg + 1 < n_seg and seg_end[seg] <= c:
                which[k] = -1
                k += 1
                seg += 1
            j = i + 1
            c += 1
            while j < n and not space_at(s, j, n):
                c += (s[j] & 0xC0) != 0x80  # a continuation byte is no new character
                j += 1
            size = j - i
            at = piece_hash(s + i, size) & mask
            while True:
                num = slots[at]
                if num < 0:
                    num = n_pieces
                    n_pieces += 1
                    p_start[num] = used
                    p_len[num] = size
                    dst = &arena[0] + used
                    memcpy(dst, s + i, size)
                    dst[size] = 32
                    used += size + 1
                    slots[at] = num
                    break
                if p_len[num] == size and memcmp(&arena[0] + p_start[num], s + i, size) == 0:
                    break
                at = (at + 1) & mask
            which[k] = num
            k += 1
            i = j
        while seg + 1 < n_seg:
            which[k] = -1
            k += 1
            seg += 1
    return which_arr[:k].copy(), n_pieces, used
