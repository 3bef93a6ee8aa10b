/* goclaw's reranker accelerator (issue 11: query speed; docs/memory.md "Diversity, recency and
 * reranking").
 *
 * The memory search's default reranker reads, for its 60 candidates, the overlap features of
 * the query terms (distinct terms matched, shortest window holding them) from the forward
 * index, and for its best 20 the passage sketches kept beside the vectors. Each function here
 * does one of those steps for all candidates in one call, with the same results as the numpy
 * code it replaces (libs/goclaw_search/forward.py, passage_sketches.py, rerank.py; checked
 * against it on random data by tests/test_rerank_accel.py):
 *
 *   overlap_features(terms, ptr, slots, qids) -> (matched, window)     lists of int
 *   sketch_select(tokens, layout, counts, has, ptr, slots) -> 7 bytes  a SketchBatch's arrays
 *   sketch_best(seg_len, refs, nref, norms, n_pass, scores) -> bytes   best passage cosines
 *   token_dots(matrix, q, ids) -> bytes                                E_t . q per token id
 *   sketch_scores(tokens, layout, counts, has, ptr, slots, matrix, q)  the three at once
 *
 * Every buffer's type and size is checked, and every index read from one (pointers, counts,
 * references, token ids) is checked against the buffer it indexes before it is used: a damaged
 * or hostile array raises ValueError / IndexError, never reads outside its memory.
 * A built module must match goclaw's RERANK_ABI (libs/goclaw_search/rerank.py) to be used.
 */
#define PY_SSIZE_T_CLEAN
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("O3", "fp-contract=off") /* token_dots vectorised, never fused or fast-math */
#elif defined(__clang__)
#pragma STDC FP_CONTRACT OFF /* clang contracts a * b + c into a multiply-add on aarch64 otherwise */
#endif
#include <Python.h>
#include <stdint.h>
#include <string.h>

#define RERANK_ABI 2 /* 2: sketch_scores */

/* A search reads its candidates' few hundred bytes each right after its cosine pass has swept
   every vector through the caches: each of them a cache miss. Asking for all of them first lets
   the memory fetch them side by side instead of one after the other (2-3x faster in a search). */
#if defined(__GNUC__) || defined(__clang__)
#define PREFETCH(p) __builtin_prefetch((const void *)(p), 0, 3)
#else
#define PREFETCH(p) ((void)0)
#endif

static void prefetch_range(const void *start, size_t bytes)
{
    const char *p = (const char *)start;
    for (size_t off = 0; off < bytes; off += 64)
        PREFETCH(p + off);
    if (bytes)
        PREFETCH(p + bytes - 1);
}

/* A buffer of items of exactly `itemsize` bytes and one of the format characters `kinds`
   (a leading byte-order mark '<', '=' or '@' is accepted). */
static int get_buffer(PyObject *obj, Py_buffer *view, Py_ssize_t itemsize, const char *kinds, const char *what)
{
    if (PyObject_GetBuffer(obj, view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0)
        return -1;
    const char *f = view->format ? view->format : "B";
    if (*f == '<' || *f == '=' || *f == '@')
        f++;
    if (view->itemsize != itemsize || f[0] == '\0' || f[1] != '\0' || strchr(kinds, f[0]) == NULL) {
        PyErr_Format(PyExc_ValueError, "%s: expected items of %zd bytes (%s)", what, itemsize, kinds);
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

/* acc += v, refused (MemoryError) before a total could overflow a byte size (the same slot may
   be selected any number of times, so totals are not bounded by the store's size). */
static int add_total(Py_ssize_t *acc, Py_ssize_t v)
{
    if (v < 0 || *acc > PY_SSIZE_T_MAX / 16 - v) {
        PyErr_NoMemory();
        return -1;
    }
    *acc += v;
    return 0;
}

#define I32 "il"
#define I64 "qlL" /* int64 (numpy's 'l' / 'q' on 64-bit Linux; 'L' is never negative here) */
#define U16 "H"
#define F32 "f"

/* ------------------------------------------------------------------ overlap features */

/* A small open-addressing map from a query term id to its index among the query terms. */
typedef struct {
    int64_t *keys;
    Py_ssize_t *vals;
    size_t mask;
} IdMap;

static size_t id_hash(int64_t k) { return (size_t)((uint64_t)k * 0x9E3779B97F4A7C15ULL >> 17); }

static Py_ssize_t idmap_get(const IdMap *m, int64_t k)
{
    size_t i = id_hash(k) & m->mask;
    for (;;) {
        if (m->vals[i] < 0)
            return -1;
        if (m->keys[i] == k)
            return m->vals[i];
        i = (i + 1) & m->mask;
    }
}

/* overlap_features(terms: int32 buffer, ptr: int64 buffer, slots: int64 buffer, qids: int64
   buffer of distinct ids) -> (matched: list[int], window: list[int]): for each slot s (its terms
   terms[ptr[s]:ptr[s + 1]]), how many of the query terms it holds and the length of the
   shortest run of its terms holding all of those (0 when it holds none, 1 for one). */
static PyObject *overlap_features(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "overlap_features(terms, ptr, slots, qids)");
        return NULL;
    }
    Py_buffer tb, pb, sb, qb;
    if (get_buffer(args[0], &tb, 4, I32, "overlap_features: terms") < 0)
        return NULL;
    if (get_buffer(args[1], &pb, 8, I64, "overlap_features: ptr") < 0) {
        PyBuffer_Release(&tb);
        return NULL;
    }
    if (get_buffer(args[2], &sb, 8, I64, "overlap_features: slots") < 0) {
        PyBuffer_Release(&tb);
        PyBuffer_Release(&pb);
        return NULL;
    }
    if (get_buffer(args[3], &qb, 8, I64, "overlap_features: qids") < 0) {
        PyBuffer_Release(&tb);
        PyBuffer_Release(&pb);
        PyBuffer_Release(&sb);
        return NULL;
    }
    PyObject *res = NULL, *matched = NULL, *window = NULL;
    IdMap map = {NULL, NULL, 0};
    Py_ssize_t *last = NULL;
    char *present = NULL;
    const int32_t *terms = (const int32_t *)tb.buf;
    const int64_t *ptr = (const int64_t *)pb.buf, *slots = (const int64_t *)sb.buf;
    const int64_t *qids = (const int64_t *)qb.buf;
    Py_ssize_t n_terms = tb.len / 4, n_slots = pb.len / 8 - 1, n = sb.len / 8, k = qb.len / 8;
    if (n_slots < 0) {
        PyErr_SetString(PyExc_ValueError, "overlap_features: ptr is empty");
        goto done;
    }
    if (k > PY_SSIZE_T_MAX / 64) {
        PyErr_NoMemory();
        goto done;
    }
    size_t cap = 4;
    while (cap < 2 * (size_t)k + 2)
        cap *= 2;
    map.keys = PyMem_Malloc(cap * sizeof(int64_t));
    map.vals = PyMem_Malloc(cap * sizeof(Py_ssize_t));
    last = PyMem_Malloc(((size_t)k + 1) * sizeof(Py_ssize_t));
    present = PyMem_Malloc((size_t)k + 1);
    if (!map.keys || !map.vals || !last || !present) {
        PyErr_NoMemory();
        goto done;
    }
    map.mask = cap - 1;
    for (size_t i = 0; i < cap; i++)
        map.vals[i] = -1;
    for (Py_ssize_t c = 0; c < k; c++) {
        size_t i = id_hash(qids[c]) & map.mask;
        while (map.vals[i] >= 0 && map.keys[i] != qids[c])
            i = (i + 1) & map.mask;
        if (map.vals[i] >= 0) {
            PyErr_SetString(PyExc_ValueError, "overlap_features: qids must be distinct");
            goto done;
        }
        map.keys[i] = qids[c];
        map.vals[i] = c;
    }
    matched = PyList_New(n);
    window = PyList_New(n);
    if (!matched || !window)
        goto done;
    for (Py_ssize_t j = 0; j < n; j++)
        if (slots[j] >= 0 && slots[j] < n_slots)
            PREFETCH(ptr + slots[j]);
    for (Py_ssize_t j = 0; j < n; j++) {
        int64_t s = slots[j];
        if (s >= 0 && s < n_slots && ptr[s] >= 0 && ptr[s + 1] >= ptr[s] && ptr[s + 1] <= n_terms)
            prefetch_range(terms + ptr[s], (size_t)(ptr[s + 1] - ptr[s]) * 4);
    }
    for (Py_ssize_t j = 0; j < n; j++) {
        int64_t s = slots[j];
        if (s < 0 || s >= n_slots) {
            PyErr_Format(PyExc_IndexError, "overlap_features: slot %lld outside the index", (long long)s);
            goto done;
        }
        int64_t a = ptr[s], b = ptr[s + 1];
        if (a < 0 || b < a || b > n_terms) {
            PyErr_Format(PyExc_ValueError, "overlap_features: damaged pointers at slot %lld", (long long)s);
            goto done;
        }
        memset(present, 0, (size_t)k + 1);
        Py_ssize_t m = 0;
        for (int64_t i = a; i < b; i++) { /* pass 1: which query terms the slot holds */
            Py_ssize_t c = idmap_get(&map, terms[i]);
            if (c >= 0 && !present[c]) {
                present[c] = 1;
                m++;
            }
        }
        Py_ssize_t best = m ? 1 : 0;
        if (m > 1) { /* pass 2: each occurrence as a window's right end */
            for (Py_ssize_t c = 0; c < k; c++)
                last[c] = -1;
            Py_ssize_t seen = 0;
            best = PY_SSIZE_T_MAX;
            for (int64_t i = a; i < b; i++) {
                Py_ssize_t c = idmap_get(&map, terms[i]);
                if (c < 0)
                    continue;
                if (last[c] < 0)
                    seen++;
                last[c] = (Py_ssize_t)(i - a);
                if (seen < m)
                    continue;
                Py_ssize_t left = last[c];
                for (Py_ssize_t d = 0; d < k; d++)
                    if (present[d] && last[d] < left)
                        left = last[d];
                Py_ssize_t width = (Py_ssize_t)(i - a) - left + 1;
                if (width < best)
                    best = width;
            }
        }
        PyObject *x = PyLong_FromSsize_t(m), *y = PyLong_FromSsize_t(best);
        if (!x || !y) {
            Py_XDECREF(x);
            Py_XDECREF(y);
            goto done;
        }
        PyList_SET_ITEM(matched, j, x);
        PyList_SET_ITEM(window, j, y);
    }
    res = PyTuple_Pack(2, matched, window);
done:
    Py_XDECREF(matched);
    Py_XDECREF(window);
    PyMem_Free(map.keys);
    PyMem_Free(map.vals);
    PyMem_Free(last);
    PyMem_Free(present);
    PyBuffer_Release(&tb);
    PyBuffer_Release(&pb);
    PyBuffer_Release(&sb);
    PyBuffer_Release(&qb);
    return res;
}

/* ------------------------------------------------------------------ passage sketches */

static PyObject *new_bytes(Py_ssize_t size, char **out)
{
    PyObject *b = PyBytes_FromStringAndSize(NULL, size);
    if (b != NULL)
        *out = PyBytes_AS_STRING(b);
    return b;
}

/* One selected slot's place in the store, checked (tok0 < 0: the slot has no sketch). */
typedef struct {
    int64_t tok0, tok1, word0;
    Py_ssize_t segs, refs, pass;
} Slot;

/* A PassageSketches store's arrays (see libs/goclaw_search/passage_sketches.py). */
typedef struct {
    const uint16_t *tokens, *layout, *counts;
    const uint8_t *has;
    const int64_t *ptr;
    Py_ssize_t n_tok, n_words, n_store;
} Store;

static int store_of(Py_buffer *bufs, Store *st, const char *who)
{
    st->tokens = bufs[0].buf;
    st->layout = bufs[1].buf;
    st->counts = bufs[2].buf;
    st->has = bufs[3].buf;
    st->ptr = bufs[4].buf;
    st->n_tok = bufs[0].len / 2;
    st->n_words = bufs[1].len / 2;
    st->n_store = bufs[3].len;
    if (bufs[2].len / 2 != 3 * st->n_store || bufs[4].len / 8 != 2 * (st->n_store + 1)) {
        PyErr_Format(PyExc_ValueError, "%s: counts, has and ptr disagree on the slots", who);
        return -1;
    }
    return 0;
}

/* Ask for every selected slot's counts and pointers, then its tokens and layout words. */
static void store_prefetch(const Store *st, const int64_t *slots, Py_ssize_t n)
{
    for (Py_ssize_t j = 0; j < n; j++) {
        int64_t s = slots[j];
        if (s >= 0 && s < st->n_store) {
            PREFETCH(st->has + s);
            PREFETCH(st->counts + 3 * s);
            PREFETCH(st->ptr + 2 * s);
            PREFETCH(st->ptr + 2 * s + 3);
        }
    }
    for (Py_ssize_t j = 0; j < n; j++) {
        int64_t s = slots[j];
        if (s < 0 || s >= st->n_store || !st->has[s])
            continue;
        const int64_t *p = st->ptr + 2 * s;
        if (p[0] >= 0 && p[2] >= p[0] && p[2] <= st->n_tok && p[1] >= 0 && p[3] >= p[1] && p[3] <= st->n_words) {
            prefetch_range(st->tokens + p[0], (size_t)(p[2] - p[0]) * 2);
            prefetch_range(st->layout + p[1], (size_t)(p[3] - p[1]) * 2);
        }
    }
}

/* Slot s's place, every pointer, count and reference checked against the arrays: 0 and
   out->tok0 = -1 when s is outside the store or has no sketch, -1 with ValueError when damaged. */
static int store_slot(const Store *st, int64_t s, Slot *out, const char *who)
{
    out->tok0 = -1;
    if (s < 0 || s >= st->n_store || !st->has[s])
        return 0;
    const int64_t *p = st->ptr + 2 * s;
    int64_t t0 = p[0], t1 = p[2], w0 = p[1], w1 = p[3];
    Py_ssize_t segs = st->counts[3 * s], refs = st->counts[3 * s + 1], pass = st->counts[3 * s + 2];
    int bad = t0 < 0 || t1 < t0 || t1 > st->n_tok || w0 < 0 || w1 < w0 || w1 > st->n_words ||
              w1 - w0 != segs + refs + 3 * pass;
    if (!bad) {
        const uint16_t *w = st->layout + w0;
        int64_t sum = 0, nrefs = 0;
        for (Py_ssize_t i = 0; i < segs; i++)
            sum += w[i];
        for (Py_ssize_t i = 0; i < pass; i++)
            nrefs += w[segs + refs + i];
        bad = sum != t1 - t0 || nrefs != refs;
        for (Py_ssize_t i = 0; i < refs && !bad; i++)
            bad = w[segs + i] >= segs;
    }
    if (bad) {
        PyErr_Format(PyExc_ValueError, "%s: damaged sketch at slot %lld", who, (long long)s);
        return -1;
    }
    *out = (Slot){t0, t1, w0, segs, refs, pass};
    return 0;
}

/* sketch_select(tokens: uint16 buffer, layout: uint16 buffer, counts: uint16 buffer (3 per slot),
   has: uint8 buffer (1 per slot), ptr: int64 buffer (2 per slot, plus 2), slots: int64 buffer)
   -> (tokens, seg_len, refs, nref, norms, n_pass, has) as bytes of uint16, uint16, int64,
   uint16, float32, int64 and bool: PassageSketches.select's SketchBatch (see
   libs/goclaw_search/passage_sketches.py for the layout). A slot outside the store or without a
   sketch has none. */
static PyObject *sketch_select(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 6) {
        PyErr_SetString(PyExc_TypeError, "sketch_select(tokens, layout, counts, has, ptr, slots)");
        return NULL;
    }
    Py_buffer bufs[6];
    static const Py_ssize_t sizes[6] = {2, 2, 2, 1, 8, 8};
    static const char *kinds[6] = {U16, U16, U16, "?Bb", I64, I64};
    static const char *names[6] = {"sketch_select: tokens", "sketch_select: layout", "sketch_select: counts",
                                   "sketch_select: has",    "sketch_select: ptr",    "sketch_select: slots"};
    int got = 0;
    for (; got < 6; got++)
        if (get_buffer(args[got], &bufs[got], sizes[got], kinds[got], names[got]) < 0)
            break;
    PyObject *res = NULL, *out[7] = {NULL, NULL, NULL, NULL, NULL, NULL, NULL};
    char *o[7] = {NULL, NULL, NULL, NULL, NULL, NULL, NULL};
    Slot *sel = NULL;
    if (got < 6)
        goto done;
    Store st;
    if (store_of(bufs, &st, "sketch_select") < 0)
        goto done;
    const uint16_t *tokens = st.tokens, *layout = st.layout;
    const int64_t *slots = bufs[5].buf;
    Py_ssize_t n = bufs[5].len / 8;
    sel = PyMem_Calloc((size_t)(n ? n : 1), sizeof(Slot));
    if (!sel) {
        PyErr_NoMemory();
        goto done;
    }
    store_prefetch(&st, slots, n);
    Py_ssize_t tot_tok = 0, tot_seg = 0, tot_ref = 0, tot_pass = 0;
    for (Py_ssize_t j = 0; j < n; j++) {
        if (store_slot(&st, slots[j], &sel[j], "sketch_select") < 0)
            goto done;
        if (sel[j].tok0 < 0)
            continue;
        if (add_total(&tot_tok, (Py_ssize_t)(sel[j].tok1 - sel[j].tok0)) < 0 ||
            add_total(&tot_seg, sel[j].segs) < 0 || add_total(&tot_ref, sel[j].refs) < 0 ||
            add_total(&tot_pass, sel[j].pass) < 0)
            goto done;
    }
    out[0] = new_bytes(2 * tot_tok, &o[0]);
    out[1] = new_bytes(2 * tot_seg, &o[1]);
    out[2] = new_bytes(8 * tot_ref, &o[2]);
    out[3] = new_bytes(2 * tot_pass, &o[3]);
    out[4] = new_bytes(4 * tot_pass, &o[4]);
    out[5] = new_bytes(8 * n, &o[5]);
    out[6] = new_bytes(n, &o[6]);
    for (int i = 0; i < 7; i++)
        if (!out[i])
            goto done;
    uint16_t *seg_len = (uint16_t *)o[1], *nref = (uint16_t *)o[3];
    int64_t *ref = (int64_t *)o[2], *n_pass = (int64_t *)o[5];
    char *tok = o[0], *norm = o[4];
    Py_ssize_t seg_base = 0;
    for (Py_ssize_t j = 0; j < n; j++) {
        Slot *x = &sel[j];
        o[6][j] = x->tok0 >= 0;
        n_pass[j] = x->tok0 >= 0 ? x->pass : 0;
        if (x->tok0 < 0)
            continue;
        const uint16_t *w = layout + x->word0;
        size_t nt = (size_t)(x->tok1 - x->tok0);
        memcpy(tok, tokens + x->tok0, 2 * nt);
        tok += 2 * nt;
        memcpy(seg_len, w, 2 * (size_t)x->segs);
        seg_len += x->segs;
        for (Py_ssize_t i = 0; i < x->refs; i++)
            *ref++ = seg_base + w[x->segs + i];
        memcpy(nref, w + x->segs + x->refs, 2 * (size_t)x->pass);
        nref += x->pass;
        memcpy(norm, w + x->segs + x->refs + x->pass, 4 * (size_t)x->pass); /* little-endian words */
        norm += 4 * (size_t)x->pass;
        seg_base += x->segs;
    }
    res = PyTuple_New(7);
    if (res)
        for (int i = 0; i < 7; i++) {
            PyTuple_SET_ITEM(res, i, out[i]);
            out[i] = NULL;
        }
done:
    for (int i = 0; i < 7; i++)
        Py_XDECREF(out[i]);
    PyMem_Free(sel);
    for (int i = 0; i < got; i++)
        PyBuffer_Release(&bufs[i]);
    return res;
}

/* sketch_best(seg_len: uint16, refs: int64, nref: uint16, norms: float32, n_pass: int64, scores:
   float32 (one per token)) -> bytes of float32, one per text: sketch_cosines' figure, the best
   passage's cosine (0 when none is positive). The token scores are added per segment and the
   segment sums per passage in float64, in order, as numpy's reduceat does; each passage's sum is
   divided by its norm and the best kept, rounded to float32. */
static PyObject *sketch_best(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 6) {
        PyErr_SetString(PyExc_TypeError, "sketch_best(seg_len, refs, nref, norms, n_pass, scores)");
        return NULL;
    }
    Py_buffer bufs[6];
    static const Py_ssize_t sizes[6] = {2, 8, 2, 4, 8, 4};
    static const char *kinds[6] = {U16, I64, U16, F32, I64, F32};
    static const char *names[6] = {"sketch_best: seg_len", "sketch_best: refs",   "sketch_best: nref",
                                   "sketch_best: norms",   "sketch_best: n_pass", "sketch_best: scores"};
    int got = 0;
    for (; got < 6; got++)
        if (get_buffer(args[got], &bufs[got], sizes[got], kinds[got], names[got]) < 0)
            break;
    PyObject *res = NULL;
    double *seg_dot = NULL;
    if (got < 6)
        goto done;
    const uint16_t *seg_len = bufs[0].buf, *nref = bufs[2].buf;
    const int64_t *refs = bufs[1].buf, *n_pass = bufs[4].buf;
    const float *norms = bufs[3].buf, *scores = bufs[5].buf;
    Py_ssize_t n_seg = bufs[0].len / 2, n_ref = bufs[1].len / 8, n_p = bufs[2].len / 2;
    Py_ssize_t n = bufs[4].len / 8, n_tok = bufs[5].len / 4;
    int64_t sum = 0;
    for (Py_ssize_t i = 0; i < n_seg; i++)
        sum += seg_len[i];
    int bad = sum != n_tok || bufs[3].len / 4 != n_p;
    sum = 0;
    for (Py_ssize_t i = 0; i < n_p && !bad; i++)
        sum += nref[i];
    bad = bad || sum != n_ref;
    sum = 0;
    for (Py_ssize_t i = 0; i < n && !bad; i++) {
        bad = n_pass[i] < 0 || n_pass[i] > n_p - sum;
        sum += n_pass[i];
    }
    bad = bad || sum != n_p;
    for (Py_ssize_t i = 0; i < n_ref && !bad; i++)
        bad = refs[i] < 0 || refs[i] >= n_seg;
    if (bad) {
        PyErr_SetString(PyExc_ValueError, "sketch_best: the batch's arrays do not add up");
        goto done;
    }
    seg_dot = PyMem_Malloc((size_t)(n_seg ? n_seg : 1) * sizeof(double));
    if (!seg_dot) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0, t = 0; i < n_seg; i++) {
        double acc = 0.0;
        for (Py_ssize_t e = t + seg_len[i]; t < e; t++)
            acc += (double)scores[t];
        seg_dot[i] = acc;
    }
    char *o;
    res = new_bytes(4 * n, &o);
    if (!res)
        goto done;
    float *best = (float *)o;
    for (Py_ssize_t i = 0, p = 0, r = 0; i < n; i++) {
        double top = 0.0;
        int any = 0;
        for (int64_t e = p + n_pass[i]; p < e; p++) {
            double acc = 0.0;
            for (Py_ssize_t f = r + nref[p]; r < f; r++)
                acc += seg_dot[refs[r]];
            acc /= (double)norms[p];
            if (!any || acc > top) /* numpy's maximum: a NaN wins */
                top = acc;
            if (acc != acc)
                top = acc;
            any = 1;
        }
        float b = (float)top;
        best[i] = b > 0.0f ? b : (b != b ? b : 0.0f);
    }
done:
    PyMem_Free(seg_dot);
    for (int i = 0; i < got; i++)
        PyBuffer_Release(&bufs[i]);
    return res;
}

/* ------------------------------------------------------------------ token scores */

#define AHEAD 4 /* rows fetched ahead of the one being read */
#define LANES 16

/* row . q over LANES float32 lanes (lane l sums the products of the columns l, l + LANES, ...,
   each product rounded, then added: no fused multiply-add, so every build and instruction set
   gives the same bits), the lanes then added in float64. Compiled twice on x86-64: for AVX2
   (chosen at run time) and for the baseline. */
#define DEFINE_DOT(name, attr)                                                                   \
    attr static double name(const float *row, const float *q, Py_ssize_t dim)                   \
    {                                                                                            \
        float lane[LANES] = {0};                                                                 \
        Py_ssize_t d = 0;                                                                        \
        for (; d + LANES <= dim; d += LANES)                                                     \
            for (int l = 0; l < LANES; l++) {                                                    \
                float p = row[d + l] * q[d + l];                                                 \
                lane[l] += p;                                                                    \
            }                                                                                    \
        for (int l = 0; d < dim; d++, l++)                                                       \
            lane[l] += row[d] * q[d];                                                            \
        double acc = 0.0;                                                                        \
        for (int l = 0; l < LANES; l++)                                                          \
            acc += (double)lane[l];                                                              \
        return acc;                                                                              \
    }

DEFINE_DOT(dot_portable, )
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define HAVE_X86 1
DEFINE_DOT(dot_avx2, __attribute__((target("avx2"))))
#else
#define HAVE_X86 0
#endif

typedef double (*DotFn)(const float *, const float *, Py_ssize_t);

static DotFn pick_dot(void)
{
#if HAVE_X86
    if (__builtin_cpu_supports("avx2"))
        return dot_avx2;
#endif
    return dot_portable;
}

/* token_dots(matrix: float32 buffer (rows x dim), q: float32 buffer (dim), ids: uint16 or int64
   buffer) -> bytes of float32: each id's row dot q (see DEFINE_DOT), each distinct row read
   once, the rows fetched a few ahead. */
static PyObject *token_dots(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "token_dots(matrix, q, ids)");
        return NULL;
    }
    Py_buffer mb, qb, ib;
    if (get_buffer(args[0], &mb, 4, F32, "token_dots: matrix") < 0)
        return NULL;
    if (get_buffer(args[1], &qb, 4, F32, "token_dots: q") < 0) {
        PyBuffer_Release(&mb);
        return NULL;
    }
    if (PyObject_GetBuffer(args[2], &ib, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) {
        PyBuffer_Release(&mb);
        PyBuffer_Release(&qb);
        return NULL;
    }
    PyObject *res = NULL;
    float *table = NULL;
    uint8_t *done_rows = NULL;
    int64_t *distinct = NULL;
    const char *f = ib.format ? ib.format : "B";
    if (*f == '<' || *f == '=' || *f == '@')
        f++;
    int wide = ib.itemsize == 8 && f[0] && !f[1] && strchr(I64, f[0]);
    if (!wide && !(ib.itemsize == 2 && f[0] == 'H' && !f[1])) {
        PyErr_SetString(PyExc_ValueError, "token_dots: ids must be uint16 or int64");
        goto done;
    }
    Py_ssize_t dim = qb.len / 4, n = ib.len / ib.itemsize;
    if (dim == 0 || mb.len % (4 * dim) != 0) {
        PyErr_SetString(PyExc_ValueError, "token_dots: the matrix is not rows of len(q)");
        goto done;
    }
    Py_ssize_t rows = mb.len / (4 * dim);
    table = PyMem_Malloc((size_t)(rows ? rows : 1) * sizeof(float));
    done_rows = PyMem_Calloc((size_t)(rows ? rows : 1), 1);
    if (!table || !done_rows) {
        PyErr_NoMemory();
        goto done;
    }
    char *o;
    res = new_bytes(4 * n, &o);
    if (!res)
        goto done;
    float *out = (float *)o;
    const float *M = mb.buf, *q = qb.buf;
    /* The distinct ids first (in order of first sight), so each row can be fetched ahead. */
    distinct = PyMem_Malloc((size_t)(n ? n : 1) * sizeof(int64_t));
    if (!distinct) {
        PyErr_NoMemory();
        Py_CLEAR(res);
        goto done;
    }
    Py_ssize_t nd = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        int64_t id = wide ? ((const int64_t *)ib.buf)[i] : ((const uint16_t *)ib.buf)[i];
        if (id < 0 || id >= rows) {
            PyErr_Format(PyExc_IndexError, "token_dots: token id %lld outside the matrix", (long long)id);
            Py_CLEAR(res);
            goto done;
        }
        if (!done_rows[id]) {
            done_rows[id] = 1;
            distinct[nd++] = id;
        }
    }
    size_t row_bytes = (size_t)dim * sizeof(float);
    DotFn dot = pick_dot();
    for (Py_ssize_t i = 0; i < nd && i < AHEAD; i++)
        prefetch_range(M + (size_t)distinct[i] * (size_t)dim, row_bytes);
    for (Py_ssize_t j = 0; j < nd; j++) {
        if (j + AHEAD < nd)
            prefetch_range(M + (size_t)distinct[j + AHEAD] * (size_t)dim, row_bytes);
        int64_t id = distinct[j];
        {
            const float *row = M + (size_t)id * (size_t)dim;
            double acc = dot(row, q, dim);
            table[id] = (float)acc;
        }
    }
    for (Py_ssize_t i = 0; i < n; i++)
        out[i] = table[wide ? ((const int64_t *)ib.buf)[i] : ((const uint16_t *)ib.buf)[i]];
done:
    PyMem_Free(distinct);
    PyMem_Free(table);
    PyMem_Free(done_rows);
    PyBuffer_Release(&mb);
    PyBuffer_Release(&qb);
    PyBuffer_Release(&ib);
    return res;
}

/* Each of the distinct token ids' (nd of them) row dot q into table[id], rows fetched ahead. */
static void dots_of(const float *M, const float *q, Py_ssize_t dim, const int64_t *distinct, Py_ssize_t nd,
                    float *table)
{
    size_t row_bytes = (size_t)dim * sizeof(float);
    DotFn dot = pick_dot();
    for (Py_ssize_t i = 0; i < nd && i < AHEAD; i++)
        prefetch_range(M + (size_t)distinct[i] * (size_t)dim, row_bytes);
    for (Py_ssize_t j = 0; j < nd; j++) {
        if (j + AHEAD < nd)
            prefetch_range(M + (size_t)distinct[j + AHEAD] * (size_t)dim, row_bytes);
        table[distinct[j]] = (float)dot(M + (size_t)distinct[j] * (size_t)dim, q, dim);
    }
}

/* sketch_scores(tokens, layout, counts, has, ptr, slots, matrix, q) -> (best, has): bytes of
   float32 and bool, one per slot: what sketch_select, token_dots and sketch_best give one
   after the other (the same bits), in one call and without the batch's arrays: each selected
   slot's best passage cosine (0 when none is positive or the slot has no sketch) and whether it
   has a sketch. matrix: float32 rows x len(q); every token id must be a row. */
static PyObject *sketch_scores(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 8) {
        PyErr_SetString(PyExc_TypeError, "sketch_scores(tokens, layout, counts, has, ptr, slots, matrix, q)");
        return NULL;
    }
    Py_buffer bufs[8];
    static const Py_ssize_t sizes[8] = {2, 2, 2, 1, 8, 8, 4, 4};
    static const char *kinds[8] = {U16, U16, U16, "?Bb", I64, I64, F32, F32};
    static const char *names[8] = {"sketch_scores: tokens", "sketch_scores: layout", "sketch_scores: counts",
                                   "sketch_scores: has",    "sketch_scores: ptr",    "sketch_scores: slots",
                                   "sketch_scores: matrix", "sketch_scores: q"};
    int got = 0;
    for (; got < 8; got++)
        if (get_buffer(args[got], &bufs[got], sizes[got], kinds[got], names[got]) < 0)
            break;
    PyObject *res = NULL, *best_b = NULL, *has_b = NULL;
    Slot *sel = NULL;
    float *table = NULL;
    uint8_t *seen = NULL;
    int64_t *distinct = NULL;
    double *seg_dot = NULL;
    if (got < 8)
        goto done;
    Store st;
    if (store_of(bufs, &st, "sketch_scores") < 0)
        goto done;
    const int64_t *slots = bufs[5].buf;
    const float *M = bufs[6].buf, *q = bufs[7].buf;
    Py_ssize_t n = bufs[5].len / 8, dim = bufs[7].len / 4;
    if (dim == 0 || bufs[6].len % (4 * dim) != 0) {
        PyErr_SetString(PyExc_ValueError, "sketch_scores: the matrix is not rows of len(q)");
        goto done;
    }
    Py_ssize_t rows = bufs[6].len / (4 * dim);
    sel = PyMem_Calloc((size_t)(n ? n : 1), sizeof(Slot));
    if (!sel) {
        PyErr_NoMemory();
        goto done;
    }
    store_prefetch(&st, slots, n);
    Py_ssize_t tot_tok = 0, max_segs = 1;
    for (Py_ssize_t j = 0; j < n; j++) {
        if (store_slot(&st, slots[j], &sel[j], "sketch_scores") < 0)
            goto done;
        if (sel[j].tok0 < 0)
            continue;
        if (add_total(&tot_tok, (Py_ssize_t)(sel[j].tok1 - sel[j].tok0)) < 0)
            goto done;
        if (sel[j].segs > max_segs)
            max_segs = sel[j].segs;
    }
    table = PyMem_Malloc((size_t)(rows ? rows : 1) * sizeof(float));
    seen = PyMem_Calloc((size_t)(rows ? rows : 1), 1);
    distinct = PyMem_Malloc((size_t)(tot_tok ? tot_tok : 1) * sizeof(int64_t));
    seg_dot = PyMem_Malloc((size_t)max_segs * sizeof(double));
    if (!table || !seen || !distinct || !seg_dot) {
        PyErr_NoMemory();
        goto done;
    }
    Py_ssize_t nd = 0;
    for (Py_ssize_t j = 0; j < n; j++) {
        for (int64_t t = sel[j].tok0; sel[j].tok0 >= 0 && t < sel[j].tok1; t++) {
            uint16_t id = st.tokens[t];
            if (id >= rows) {
                PyErr_Format(PyExc_IndexError, "sketch_scores: token id %d outside the matrix", (int)id);
                goto done;
            }
            if (!seen[id]) {
                seen[id] = 1;
                distinct[nd++] = id;
            }
        }
    }
    dots_of(M, q, dim, distinct, nd, table);
    char *ob, *oh;
    best_b = new_bytes(4 * n, &ob);
    has_b = new_bytes(n, &oh);
    if (!best_b || !has_b)
        goto done;
    float *best = (float *)ob;
    for (Py_ssize_t j = 0; j < n; j++) {
        const Slot *x = &sel[j];
        oh[j] = x->tok0 >= 0;
        best[j] = 0.0f;
        if (x->tok0 < 0)
            continue;
        const uint16_t *tok = st.tokens + x->tok0, *w = st.layout + x->word0;
        const uint16_t *refs = w + x->segs, *nref = refs + x->refs, *words = nref + x->pass;
        for (Py_ssize_t i = 0, t = 0; i < x->segs; i++) { /* the lengths add up: store_slot */
            double acc = 0.0;
            for (Py_ssize_t e = t + w[i]; t < e; t++)
                acc += (double)table[tok[t]];
            seg_dot[i] = acc;
        }
        double top = 0.0;
        for (Py_ssize_t p = 0, r = 0; p < x->pass; p++) {
            double acc = 0.0;
            for (Py_ssize_t f = r + nref[p]; r < f; r++)
                acc += seg_dot[refs[r]];
            float norm;
            memcpy(&norm, words + 2 * p, 4); /* little-endian words, as the store writes them */
            acc /= (double)norm;
            if (p == 0 || acc > top || acc != acc)
                top = acc;
        }
        float b = (float)top;
        best[j] = b > 0.0f ? b : (b != b ? b : 0.0f);
    }
    res = PyTuple_Pack(2, best_b, has_b);
done:
    Py_XDECREF(best_b);
    Py_XDECREF(has_b);
    PyMem_Free(sel);
    PyMem_Free(table);
    PyMem_Free(seen);
    PyMem_Free(distinct);
    PyMem_Free(seg_dot);
    for (int i = 0; i < got; i++)
        PyBuffer_Release(&bufs[i]);
    return res;
}

static PyMethodDef methods[] = {
    {"overlap_features", (PyCFunction)(void (*)(void))overlap_features, METH_FASTCALL,
     "(matched, window) of the query terms in each slot of a forward index."},
    {"sketch_select", (PyCFunction)(void (*)(void))sketch_select, METH_FASTCALL,
     "The passage sketches of some slots side by side (a SketchBatch's arrays)."},
    {"sketch_best", (PyCFunction)(void (*)(void))sketch_best, METH_FASTCALL,
     "Each text's best passage cosine from a sketch batch and its token scores."},
    {"token_dots", (PyCFunction)(void (*)(void))token_dots, METH_FASTCALL,
     "Each token id's matrix row dot a query vector."},
    {"sketch_scores", (PyCFunction)(void (*)(void))sketch_scores, METH_FASTCALL,
     "Each slot's best passage cosine from its sketch and the token rows, in one call."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_rerank", NULL, -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__rerank(void)
{
    /* ABI: what libs/goclaw_search/rerank.py expects (RERANK_ABI). Bump both whenever a
       function's arguments or results change, so a module built from an older checkout is
       ignored, not called. */
    PyObject *m = PyModule_Create(&module);
    if (m == NULL)
        return NULL;
    if (PyModule_AddIntConstant(m, "ABI", RERANK_ABI) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
