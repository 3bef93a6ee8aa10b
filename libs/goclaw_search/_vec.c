/* goclaw's vector-channel kernels (issue 11: query speed; docs/memory.md "The vector channel").
 *
 * The search index keeps its float32 matrix (unit rows) as the source of truth and, beside it, an
 * int8 copy of each row with its scale and an error bound (libs/goclaw_search/vecq.py). A query
 * scans the int8 copy (4x less memory to read than the float32 rows), which gives every slot a
 * lower and an upper bound on its cosine; the fusion then rescores exactly the few slots whose
 * bounds reach the cut, so the result is the one the exact cosines give.
 *
 *   quantize(vec, mu, q8, scale, err, norm)   each row v, centred (x = v - mu, mu the index's
 *       centre): scale s = max|x| / 127, q8 = round(x / s) in [-127, 127] (halves to even),
 *       err = ||x - s q8||, norm = ||x||, rounded up; a zero row (no vector) gets scale, err and
 *       norm 0, and the scan gives it the exact bounds [0, 0].
 *   scan(q8, scale, err, norm, qhat, lo, hi, t, eq, m, mq, slack)   for each row: a = mq +
 *       s t (q8 . qhat) (an int32 dot; mq = mu . q), r = eq norm + m err + slack, lo = a - r,
 *       hi = a + r.
 *   exact(vec, q, slots, out)   the exact cosine of the given rows (all rows when slots is None):
 *       each product in float64 (exact for float32 factors), summed in 16 lanes (lane l: the
 *       elements j = l mod 16, in order), the lanes added as a fixed tree, rounded to float32.
 *       Every build (AVX2, the portable loop, vecq.py's numpy fallback) gives the same bits, so
 *       a result never depends on which one ran, nor on the BLAS or its thread count.
 *
 * Runtime dispatch: on x86-64 with GCC or clang the AVX2 variants are used when the CPU has
 * AVX2 (and FMA); elsewhere portable loops written for the compiler to vectorise. Every array is
 * checked (type, dimensions, contiguity, lengths, slots in range) before the GIL is released.
 * A built module must match goclaw's VEC_ABI (vecq.py) to be used. */
#define PY_SSIZE_T_CLEAN
/* The portable loops vectorised (clang does at -O2); never fast-math, and no multiply-add
 * contracted where the float32 / float64 arithmetic must round as numpy's separate operations do
 * (aarch64 and any FMA target would contract by default). */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("O3", "fp-contract=off")
#elif defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

/* 2: rows quantized about a centre (quantize's mu, scan's norm and mq); 3: fuse_scan; 4: fuse_scan
 * ranks the result */
#define VEC_ABI 4
#define LANES 16         /* exact(): float64 accumulators, one per j mod 16 */
#define MAX_DIM 65536    /* an int32 dot of int8 rows cannot overflow below 133,000 */

/* GOCLAW_VEC_PORTABLE: build the portable loops only (how aarch64 and other compilers build it). */
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && !defined(GOCLAW_VEC_PORTABLE)
#define HAVE_X86 1
#include <immintrin.h>
#else
#define HAVE_X86 0
#endif
/* AVX-VNNI / AVX512-VNNI: GCC 11 (intrinsics and __builtin_cpu_supports("avxvnni")). Not with
 * clang: clang 14 has the intrinsics but refuses "avxvnni" in __builtin_cpu_supports (the
 * build failed), and Apple's version numbers differ; a clang build uses AVX2 (the same bits). */
#if HAVE_X86 && !defined(__clang__) && __GNUC__ >= 11
#define HAVE_VNNI 1
#else
#define HAVE_VNNI 0
#endif

enum { SIMD_PORTABLE, SIMD_AVX2, SIMD_AVXVNNI, SIMD_AVX512VNNI };
static const char *simd_names[] = {"portable", "avx2", "avxvnni", "avx512vnni"};
static int simd_level = SIMD_PORTABLE; /* the kernels in use; AVX2 or above: the AVX2 loops */

/* ------------------------------------------------------------------ buffers */

/* Get ``obj``'s buffer as a C-contiguous array of ``ndim`` dimensions whose items are of
 * ``kind`` ('f' float32, 'b' int8, 'q' int64, '?' bool), writable if asked; else a ValueError naming
 * ``what``. */
static int
get_array(PyObject *obj, Py_buffer *view, char kind, int ndim, int writable, const char *what)
{
    int flags = PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0);
    if (PyObject_GetBuffer(obj, view, flags) < 0)
        return -1;
    const char *f = view->format ? view->format : "B";
    if (*f == '@' || *f == '=')
        f++;
#if PY_LITTLE_ENDIAN
    else if (*f == '<')
        f++;
#endif
    Py_ssize_t size = kind == 'f' ? 4 : kind == 'q' ? 8 : 1;
    int same = f[0] == kind || (kind == 'q' && f[0] == 'l' && sizeof(long) == 8);
    if (!same || f[1] != '\0' || view->itemsize != size || view->ndim != ndim) {
        const char *type = kind == 'f' ? "float32" : kind == 'b' ? "int8" : kind == '?' ? "bool" : "int64";
        PyErr_Format(PyExc_ValueError, "%s must be a C-contiguous %d-d %s array", what, ndim, type);
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

static void
release(Py_buffer *views, int n)
{
    for (int i = 0; i < n; i++)
        PyBuffer_Release(&views[i]);
}

/* ------------------------------------------------------------------ quantize */

static float
round_up(double x)
{
    float f = (float)x;
    if ((double)f < x)
        f = nextafterf(f, INFINITY);
    return f;
}

/* round(x) to the nearest integer, halves to even (as numpy.rint), for |x| < 2^51: adding and
 * subtracting 1.5 x 2^52 leaves no fraction bit (no libm call; vectorisable). */
#define RINT(x) (((x) + 6755399441055744.0) - 6755399441055744.0)
#define QLANES 8 /* the squared sums in 8 lanes, so the compiler can vectorise them */

/* One row's int8 copy (its elements lo..hi, the squared residuals and values summed into the
 * lanes j mod QLANES). */
static inline void
quantize_part(const float *v, const float *mu, int8_t *out, Py_ssize_t lo, Py_ssize_t hi, float s, double ds,
              double *e2, double *n2)
{
    for (Py_ssize_t j = lo; j < hi; j++) {
        double x = (double)v[j] - (double)mu[j], r = RINT(x / ds);
        r = r > 127.0 ? 127.0 : r < -127.0 ? -127.0 : r;
        out[j] = (int8_t)r;
        double diff = x - (double)s * r; /* s r is exact */
        e2[j - lo] += diff * diff;
        n2[j - lo] += x * x;
    }
}

#define DEFINE_QUANTIZE(NAME, ATTR)                                                                \
    ATTR static void NAME(const float *vec, const float *mu, Py_ssize_t n, Py_ssize_t d, int8_t *q8, \
                          float *scale, float *err, float *norm)                                  \
    {                                                                                             \
        const Py_ssize_t full = d - d % QLANES;                                                   \
        for (Py_ssize_t i = 0; i < n; i++) {                                                      \
            const float *v = vec + (size_t)i * (size_t)d;                                         \
            int8_t *out = q8 + (size_t)i * (size_t)d;                                             \
            float top = 0.0f;                                                                     \
            double topd = 0.0;                                                                    \
            int finite = 1;                                                                       \
            for (Py_ssize_t j = 0; j < d; j++) {                                                  \
                float a = fabsf(v[j]);                                                            \
                double c = fabs((double)v[j] - (double)mu[j]);                                    \
                finite &= a <= 3.402823466e38f && c <= 1e300; /* false for NaN and inf */        \
                top = a > top ? a : top;                                                          \
                topd = c > topd ? c : topd;                                                       \
            }                                                                                     \
            memset(out, 0, (size_t)d);                                                            \
            if (!finite) { /* a row the bounds cannot describe: always rescored */                \
                scale[i] = 0.0f;                                                                  \
                err[i] = norm[i] = INFINITY;                                                      \
                continue;                                                                         \
            }                                                                                     \
            if (top == 0.0f) { /* a zero row (no vector): its cosine is exactly 0 */              \
                scale[i] = err[i] = norm[i] = 0.0f;                                               \
                continue;                                                                         \
            }                                                                                     \
            float s = (float)(topd / 127.0);                                                      \
            double ds = s > 0.0f ? (double)s : INFINITY; /* x / inf = 0 */                        \
            double e2[QLANES] = {0}, n2[QLANES] = {0};                                            \
            for (Py_ssize_t j = 0; j < full; j += QLANES)                                         \
                quantize_part(v, mu, out, j, j + QLANES, s, ds, e2, n2);                          \
            quantize_part(v, mu, out, full, d, s, ds, e2, n2);                                    \
            double se = 0.0, sn = 0.0;                                                            \
            for (int l = 0; l < QLANES; l++) {                                                    \
                se += e2[l];                                                                      \
                sn += n2[l];                                                                      \
            }                                                                                     \
            scale[i] = s;                                                                         \
            err[i] = round_up(sqrt(se) * (1.0 + 0x1p-20) + 1e-9);                                 \
            norm[i] = round_up(sqrt(sn) * (1.0 + 0x1p-20) + 1e-9);                                \
        }                                                                                         \
    }

/* The rounding of x / s must not be fused with the addition in RINT: no FMA clone here (a
 * contracted multiply-add is exact for s r, but x / s + 1.5 x 2^52 is a division, never fused). */
DEFINE_QUANTIZE(quantize_plain, )
#if HAVE_X86
DEFINE_QUANTIZE(quantize_avx2, __attribute__((target("avx2"))))
#endif

/* quantize(vec, mu, q8, scale, err, norm) -> None */
static PyObject *
quantize(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 6) {
        PyErr_SetString(PyExc_TypeError, "quantize(vec, mu, q8, scale, err, norm)");
        return NULL;
    }
    static const char kinds[6] = {'f', 'f', 'b', 'f', 'f', 'f'};
    static const int dims[6] = {2, 1, 2, 1, 1, 1};
    static const char *names[6] = {"vec", "mu", "q8", "scale", "err", "norm"};
    Py_buffer b[6];
    int got = 0;
    for (; got < 6; got++)
        if (get_array(args[got], &b[got], kinds[got], dims[got], got >= 2, names[got]) < 0)
            goto fail;
    Py_ssize_t n = b[0].shape[0], d = b[0].shape[1];
    if (b[1].shape[0] != d || b[2].shape[0] != n || b[2].shape[1] != d || b[3].shape[0] != n ||
        b[4].shape[0] != n || b[5].shape[0] != n) {
        PyErr_SetString(PyExc_ValueError,
                        "quantize: mu needs one item per column, q8 vec's shape, scale, err and norm one per row");
        goto fail;
    }
    Py_BEGIN_ALLOW_THREADS
#if HAVE_X86
    if (simd_level >= SIMD_AVX2)
        quantize_avx2(b[0].buf, b[1].buf, n, d, b[2].buf, b[3].buf, b[4].buf, b[5].buf);
    else
#endif
        quantize_plain(b[0].buf, b[1].buf, n, d, b[2].buf, b[3].buf, b[4].buf, b[5].buf);
    Py_END_ALLOW_THREADS
    release(b, got);
    Py_RETURN_NONE;
fail:
    release(b, got);
    return NULL;
}

/* ------------------------------------------------------------------ scan */

#define BLOCK 256 /* rows whose int8 dots are computed before their bounds */

static int32_t
dot_i8(const int8_t *a, const int8_t *b, Py_ssize_t d)
{
    int32_t acc = 0;
    for (Py_ssize_t j = 0; j < d; j++)
        acc += (int32_t)a[j] * (int32_t)b[j];
    return acc;
}

/* The int32 dots of ``count`` rows from row ``from`` with qhat, into out. */
typedef void (*DotsFn)(const int8_t *q8, Py_ssize_t d, const int8_t *qhat, Py_ssize_t from, Py_ssize_t count,
                       int32_t *out);

static void
dots_plain(const int8_t *q8, Py_ssize_t d, const int8_t *qhat, Py_ssize_t from, Py_ssize_t count, int32_t *out)
{
    for (Py_ssize_t i = 0; i < count; i++)
        out[i] = dot_i8(q8 + (size_t)(from + i) * (size_t)d, qhat, d);
}

#if HAVE_X86
/* int8 x int8 as unsigned x signed: |qhat| as the unsigned operand, the row with qhat's sign as
 * the signed one (both within [-127, 127]). AVX2: vpmaddubsw (a pair's sum, at most
 * 2 x 127 x 127, never saturates) then vpmaddwd; VNNI: vpdpbusd (four products summed into the
 * int32 lane, no saturation). Every variant gives the exact int32 dot, so the same bits. Four
 * rows in flight: four independent accumulators, qhat's vectors loaded once for the four. */
#ifndef PF_ROWS
#define PF_ROWS 16
#endif
#define AVX2_MUL(acc, u, s) _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), ones))
#define DEFINE_DOTS(NAME, ATTR, MUL)                                                               \
    ATTR static void NAME(const int8_t *q8, Py_ssize_t d, const int8_t *qhat, Py_ssize_t from,     \
                          Py_ssize_t count, int32_t *out)                                         \
    {                                                                                             \
        const Py_ssize_t full = d - d % 32;                                                       \
        const __m256i ones = _mm256_set1_epi16(1);                                                \
        (void)ones;                                                                               \
        Py_ssize_t i = 0;                                                                         \
        for (; i + 4 <= count; i += 4) {                                                          \
            const int8_t *r0 = q8 + (size_t)(from + i) * (size_t)d, *r1 = r0 + d, *r2 = r1 + d,   \
                         *r3 = r2 + d;                                                            \
            __m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0;                       \
            if (i + PF_ROWS + 4 <= count) /* the rows PF_ROWS ahead, asked for now */              \
                for (size_t at = 0; at < 4 * (size_t)d; at += 64)                                 \
                    _mm_prefetch((const char *)(r0 + (size_t)PF_ROWS * (size_t)d + at), _MM_HINT_T0); \
            for (Py_ssize_t j = 0; j < full; j += 32) {                                           \
                __m256i q = _mm256_loadu_si256((const __m256i *)(qhat + j));                      \
                __m256i u = _mm256_sign_epi8(q, q);                                               \
                a0 = MUL(a0, u, _mm256_sign_epi8(_mm256_loadu_si256((const __m256i *)(r0 + j)), q)); \
                a1 = MUL(a1, u, _mm256_sign_epi8(_mm256_loadu_si256((const __m256i *)(r1 + j)), q)); \
                a2 = MUL(a2, u, _mm256_sign_epi8(_mm256_loadu_si256((const __m256i *)(r2 + j)), q)); \
                a3 = MUL(a3, u, _mm256_sign_epi8(_mm256_loadu_si256((const __m256i *)(r3 + j)), q)); \
            }                                                                                     \
            /* lane l of the 128-bit sum: row l's total */                                        \
            __m256i s = _mm256_hadd_epi32(_mm256_hadd_epi32(a0, a1), _mm256_hadd_epi32(a2, a3));   \
            __m128i x = _mm_add_epi32(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));  \
            int32_t part[4];                                                                      \
            _mm_storeu_si128((__m128i *)part, x);                                                 \
            out[i] = part[0] + dot_i8(r0 + full, qhat + full, d - full);                          \
            out[i + 1] = part[1] + dot_i8(r1 + full, qhat + full, d - full);                      \
            out[i + 2] = part[2] + dot_i8(r2 + full, qhat + full, d - full);                      \
            out[i + 3] = part[3] + dot_i8(r3 + full, qhat + full, d - full);                      \
        }                                                                                         \
        for (; i < count; i++) {                                                                  \
            const int8_t *r = q8 + (size_t)(from + i) * (size_t)d;                                \
            __m256i acc = _mm256_setzero_si256();                                                 \
            for (Py_ssize_t j = 0; j < full; j += 32) {                                           \
                __m256i q = _mm256_loadu_si256((const __m256i *)(qhat + j));                      \
                acc = MUL(acc, _mm256_sign_epi8(q, q),                                            \
                          _mm256_sign_epi8(_mm256_loadu_si256((const __m256i *)(r + j)), q));      \
            }                                                                                     \
            __m128i x = _mm_add_epi32(_mm256_castsi256_si128(acc), _mm256_extracti128_si256(acc, 1)); \
            x = _mm_hadd_epi32(x, x);                                                             \
            x = _mm_hadd_epi32(x, x);                                                             \
            out[i] = _mm_cvtsi128_si32(x) + dot_i8(r + full, qhat + full, d - full);              \
        }                                                                                         \
    }

DEFINE_DOTS(dots_avx2, __attribute__((target("avx2"))), AVX2_MUL)
#if HAVE_VNNI
DEFINE_DOTS(dots_avxvnni, __attribute__((target("avx2,avxvnni"))), _mm256_dpbusd_avx_epi32)
DEFINE_DOTS(dots_avx512vnni, __attribute__((target("avx2,avx512vnni,avx512vl"))), _mm256_dpbusd_epi32)
#endif
#endif

static DotsFn
dots_fn(void)
{
#if HAVE_X86
#if HAVE_VNNI
    if (simd_level == SIMD_AVXVNNI)
        return dots_avxvnni;
    if (simd_level == SIMD_AVX512VNNI)
        return dots_avx512vnni;
#endif
    if (simd_level >= SIMD_AVX2)
        return dots_avx2;
#endif
    return dots_plain;
}

typedef struct {
    const int8_t *q8, *qhat;
    const float *scale, *err, *norm;
    Py_ssize_t n, d;
    double t, eq, m, mq, slack;
} Scan;

/* Rows from..from+count's bounds from their dots (no fused multiply-add: the AVX2 clone has no
 * FMA, so both clones round as written and give the same bits). A zero row: the exact cosine 0. */
#define DEFINE_BOUNDS(NAME, ATTR)                                                                  \
    ATTR static void NAME(const Scan *s, Py_ssize_t from, Py_ssize_t count, const int32_t *dots,   \
                          float *lo, float *hi)                                                   \
    {                                                                                             \
        const float *scale = s->scale + from, *err = s->err + from, *norm = s->norm + from;       \
        const double t = s->t, eq = s->eq, m = s->m, mq = s->mq, slack = s->slack;                \
        for (Py_ssize_t i = 0; i < count; i++) {                                                  \
            double a = mq + (double)scale[i] * t * (double)dots[i];                               \
            double r = eq * (double)norm[i] + m * (double)err[i] + slack;                         \
            float l = (float)(a - r), h = (float)(a + r);                                         \
            /* zero row (scale and err +-0): +0; as bits, so the loop vectorises */               \
            int32_t sb, eb, lb, hb;                                                               \
            memcpy(&sb, &scale[i], 4);                                                            \
            memcpy(&eb, &err[i], 4);                                                              \
            memcpy(&lb, &l, 4);                                                                   \
            memcpy(&hb, &h, 4);                                                                   \
            int32_t keep = -(int32_t)(((sb | eb) & 0x7fffffff) != 0);                             \
            lb &= keep;                                                                           \
            hb &= keep;                                                                           \
            memcpy(&lo[i], &lb, 4);                                                               \
            memcpy(&hi[i], &hb, 4);                                                               \
        }                                                                                         \
    }

DEFINE_BOUNDS(bounds_plain, )
#if HAVE_X86
DEFINE_BOUNDS(bounds_avx2, __attribute__((target("avx2"))))
#endif

static void
block_bounds(const Scan *s, Py_ssize_t from, Py_ssize_t count, const int32_t *dots, float *lo, float *hi)
{
#if HAVE_X86
    if (simd_level >= SIMD_AVX2) {
        bounds_avx2(s, from, count, dots, lo, hi);
        return;
    }
#endif
    bounds_plain(s, from, count, dots, lo, hi);
}

static void
scan_rows(const Scan *s, float *lo, float *hi)
{
    int32_t dots[BLOCK];
    DotsFn fn = dots_fn();
    for (Py_ssize_t from = 0; from < s->n; from += BLOCK) {
        Py_ssize_t count = s->n - from < BLOCK ? s->n - from : BLOCK;
        fn(s->q8, s->d, s->qhat, from, count, dots);
        block_bounds(s, from, count, dots, lo + from, hi + from);
    }
}

static double
get_double(PyObject *o, int *bad)
{
    double x = PyFloat_AsDouble(o);
    if (x == -1.0 && PyErr_Occurred())
        *bad = 1;
    return x;
}

/* scan(q8, scale, err, norm, qhat, lo, hi, t, eq, m, mq, slack) -> None */
static PyObject *
scan(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 12) {
        PyErr_SetString(PyExc_TypeError, "scan(q8, scale, err, norm, qhat, lo, hi, t, eq, m, mq, slack)");
        return NULL;
    }
    Scan s;
    int bad = 0;
    s.t = get_double(args[7], &bad);
    s.eq = get_double(args[8], &bad);
    s.m = get_double(args[9], &bad);
    s.mq = get_double(args[10], &bad);
    s.slack = get_double(args[11], &bad);
    if (bad)
        return NULL;
    static const char kinds[7] = {'b', 'f', 'f', 'f', 'b', 'f', 'f'};
    static const int dims[7] = {2, 1, 1, 1, 1, 1, 1};
    static const char *names[7] = {"q8", "scale", "err", "norm", "qhat", "lo", "hi"};
    Py_buffer b[7];
    int got = 0;
    for (; got < 7; got++)
        if (get_array(args[got], &b[got], kinds[got], dims[got], got >= 5, names[got]) < 0)
            goto fail;
    s.n = b[0].shape[0];
    s.d = b[0].shape[1];
    if (b[1].shape[0] != s.n || b[2].shape[0] != s.n || b[3].shape[0] != s.n || b[5].shape[0] != s.n ||
        b[6].shape[0] != s.n || b[4].shape[0] != s.d) {
        PyErr_SetString(PyExc_ValueError,
                        "scan: scale, err, norm, lo and hi need one item per row, qhat one per column");
        goto fail;
    }
    if (s.d > MAX_DIM) {
        PyErr_SetString(PyExc_ValueError, "scan: more than 65536 dimensions");
        goto fail;
    }
    s.q8 = b[0].buf;
    s.scale = b[1].buf;
    s.err = b[2].buf;
    s.norm = b[3].buf;
    s.qhat = b[4].buf;
    Py_BEGIN_ALLOW_THREADS
    scan_rows(&s, b[5].buf, b[6].buf);
    Py_END_ALLOW_THREADS
    release(b, got);
    Py_RETURN_NONE;
fail:
    release(b, got);
    return NULL;
}

/* ------------------------------------------------------------------ scan + weighted fusion */

/* The lower bounds' k-th best so far: a min-heap of k floats (heap[0] the smallest). */
static void
heap_push(float *heap, Py_ssize_t cnt, float x)
{
    Py_ssize_t i = cnt;
    while (i > 0) {
        Py_ssize_t p = (i - 1) / 2;
        if (!(heap[p] > x))
            break;
        heap[i] = heap[p];
        i = p;
    }
    heap[i] = x;
}

static void
heap_replace_top(float *heap, Py_ssize_t k, float x)
{
    Py_ssize_t i = 0;
    for (;;) {
        Py_ssize_t c = 2 * i + 1;
        if (c >= k)
            break;
        if (c + 1 < k && heap[c + 1] < heap[c])
            c++;
        if (!(heap[c] < x))
            break;
        heap[i] = heap[c];
        i = c;
    }
    heap[i] = x;
}

typedef struct {
    Scan s;
    const float *q, *mu, *lex, *boost;
    const uint8_t *mask;
    int64_t *cand;
    float *high, *heap;
    int8_t *qhat;
    Py_ssize_t limit;
    double text_weight, vector_weight;
    float tw, vw; /* the float32 factors of the lexical scores and the cosines */
    /* results */
    Py_ssize_t found;
    double best_lo, best_lex;
} Fuse;

static double
up(double x)
{
    return x * (1.0 + 1e-12) + 1e-300;
}

/* Quantize the unit query as vecq.prepare does (the same qhat and t; eq and m as valid upper
 * bounds) and mq = mu . q; 0 if the query is not finite. */
static int
prepare_query(Fuse *f)
{
    const Py_ssize_t d = f->s.d;
    double top = 0.0;
    for (Py_ssize_t j = 0; j < d; j++) {
        double a = fabs((double)f->q[j]);
        if (!(a <= 3.5e38))
            return 0;
        top = a > top ? a : top;
    }
    double t = top > 0.0 ? top / 127.0 : 1.0, e2 = 0.0, m2 = 0.0, mq = 0.0;
    for (Py_ssize_t j = 0; j < d; j++) {
        double x = (double)f->q[j], r = RINT(x / t);
        r = r > 127.0 ? 127.0 : r < -127.0 ? -127.0 : r;
        f->qhat[j] = (int8_t)r;
        double tr = t * r, e = x - tr;
        e2 += e * e;
        m2 += tr * tr;
        mq += (double)f->mu[j] * x;
    }
    f->s.t = t;
    f->s.eq = up(sqrt(e2));
    f->s.m = up(sqrt(m2));
    f->s.mq = mq;
    return isfinite(mq);
}

/* The best lexical score in scope (0 if none is positive); -1 if one is not finite. On the
 * bits (a float >= 0 orders as its int32 bits; a negative one, sign bit set, counts as 0), so
 * the loops vectorise. */
#define DEFINE_BEST_LEX(NAME, ATTR)                                                                \
    ATTR static double NAME(const float *lex, const uint8_t *mask, Py_ssize_t n)                   \
    {                                                                                             \
        int32_t best = 0, bad = 0;                                                                \
        if (mask) {                                                                               \
            for (Py_ssize_t i = 0; i < n; i++) {                                                  \
                int32_t b;                                                                        \
                memcpy(&b, &lex[i], 4);                                                           \
                bad |= (b & 0x7f800000) == 0x7f800000;                                            \
                int32_t y = b & -(int32_t)((b >= 0) & (mask[i] != 0));                            \
                best = y > best ? y : best;                                                       \
            }                                                                                     \
        } else {                                                                                  \
            for (Py_ssize_t i = 0; i < n; i++) {                                                  \
                int32_t b;                                                                        \
                memcpy(&b, &lex[i], 4);                                                           \
                bad |= (b & 0x7f800000) == 0x7f800000;                                            \
                int32_t y = b & -(int32_t)(b >= 0);                                               \
                best = y > best ? y : best;                                                       \
            }                                                                                     \
        }                                                                                         \
        float x;                                                                                  \
        memcpy(&x, &best, 4);                                                                     \
        return bad ? -1.0 : (double)x;                                                            \
    }

/* One block's bounds on the fused score, the float32 operations of fusion.py _weighted_bounded:
 * low = (lex * tw + max(lo, 0) * vw) * boost, high likewise from hi; rows out of scope get
 * high -inf; best_lo: the best lower bound in scope so far. Returns nonzero for a value the
 * bounds cannot order (lo > hi, NaN, a negative or infinite boost). */
#define DEFINE_FUSE_BLOCK(NAME, ATTR)                                                              \
    ATTR static int NAME(const Fuse *f, Py_ssize_t from, Py_ssize_t count, const float *lo,       \
                         const float *hi, float *low, float *high, int32_t *best_lo)              \
    {                                                                                             \
        const float tw = f->tw, vw = f->vw;                                                       \
        int bad = 0;                                                                              \
        for (Py_ssize_t i = 0; i < count; i++) {                                                  \
            float a = lo[i] > 0.0f ? lo[i] : 0.0f, b = hi[i] > 0.0f ? hi[i] : 0.0f;               \
            low[i] = a * vw;                                                                      \
            high[i] = b * vw;                                                                     \
            bad |= !(lo[i] <= hi[i]);                                                             \
        }                                                                                         \
        if (f->lex) {                                                                             \
            const float *x = f->lex + from;                                                       \
            for (Py_ssize_t i = 0; i < count; i++) {                                              \
                float p = x[i] * tw;                                                              \
                low[i] = p + low[i];                                                              \
                high[i] = p + high[i];                                                            \
            }                                                                                     \
        }                                                                                         \
        if (f->boost) {                                                                           \
            const float *w = f->boost + from;                                                     \
            for (Py_ssize_t i = 0; i < count; i++) {                                              \
                bad |= !(w[i] >= 0.0f) | !(w[i] <= 3.4028235e38f);                                \
                low[i] = low[i] * w[i];                                                           \
                high[i] = high[i] * w[i];                                                         \
            }                                                                                     \
        }                                                                                         \
        /* the best lo in scope as an ordered int32 key (a float's bits, the negative ones' value  \
         * bits flipped: the int order is the float order), so the loop vectorises */             \
        int32_t best = *best_lo;                                                                  \
        const uint8_t *in = f->mask ? f->mask + from : NULL;                                      \
        for (Py_ssize_t i = 0; i < count; i++) {                                                  \
            bad |= (low[i] != low[i]) | (high[i] != high[i]);                                     \
            int32_t lb, hb;                                                                       \
            memcpy(&lb, &lo[i], 4);                                                               \
            memcpy(&hb, &high[i], 4);                                                             \
            int32_t key = lb ^ ((lb >> 31) & 0x7fffffff);                                         \
            int32_t keep = in ? -(int32_t)(in[i] != 0) : -1;                                      \
            key = (key & keep) | (INT32_MIN & ~keep);                                             \
            best = key > best ? key : best;                                                       \
            hb = (hb & keep) | ((int32_t)0xff800000 & ~keep); /* out of scope: -inf */            \
            memcpy(&high[i], &hb, 4);                                                             \
        }                                                                                         \
        *best_lo = best;                                                                          \
        return bad;                                                                               \
    }

DEFINE_BEST_LEX(best_lex_plain, )
DEFINE_FUSE_BLOCK(fuse_block_plain, )
#if HAVE_X86
DEFINE_BEST_LEX(best_lex_avx2, __attribute__((target("avx2"))))
DEFINE_FUSE_BLOCK(fuse_block_avx2, __attribute__((target("avx2"))))
#endif

/* The scan with the weighted fusion's cut (fusion.py _weighted_bounded) in the same pass: each
 * slot in scope gets bounds low <= fused score <= high (fuse_block); the limit-th best low (a
 * min-heap) is the cut; the slots whose high reaches it (or is positive, when fewer than limit
 * slots are in scope) are written to cand in slot order: the slots _reaching gives. The weights
 * assume the vector channel has a positive cosine in scope, which best_lo > 0 confirms (the
 * caller falls back otherwise). found -1: a value the bounds cannot order. */
static void
fuse_rows(Fuse *f)
{
    const Scan *s = &f->s;
    const Py_ssize_t n = s->n, k = f->limit;
    const int avx2 = HAVE_X86 && simd_level >= SIMD_AVX2;
    f->found = -1;
    double best_lex = 0.0;
    if (f->lex) {
#if HAVE_X86
        best_lex = avx2 ? best_lex_avx2(f->lex, f->mask, n) : best_lex_plain(f->lex, f->mask, n);
#else
        best_lex = best_lex_plain(f->lex, f->mask, n);
#endif
        if (best_lex < 0.0)
            return;
    }
    if (!prepare_query(f) || !(f->text_weight >= 0.0) || !(f->vector_weight >= 0.0) ||
        !(f->text_weight <= 3.4e38) || !(f->vector_weight <= 3.4e38))
        return;
    const int has_lex = best_lex > 0.0;
    f->tw = has_lex ? (float)(f->text_weight / best_lex) : 0.0f;
    f->vw = (float)(has_lex ? f->vector_weight : 1.0);
    if (!has_lex)
        f->lex = NULL;
    int32_t dots[BLOCK];
    float lo[BLOCK], hi[BLOCK], low[BLOCK], high[BLOCK];
    DotsFn fn = dots_fn();
    Py_ssize_t cnt = 0, got = 0;
    float cut = -INFINITY;
    int32_t best_lo = INT32_MIN; /* fuse_block's ordered key; INT32_MIN: nothing in scope */
    for (Py_ssize_t from = 0; from < n; from += BLOCK) {
        Py_ssize_t count = n - from < BLOCK ? n - from : BLOCK;
        fn(s->q8, s->d, s->qhat, from, count, dots);
        block_bounds(s, from, count, dots, lo, hi);
        int bad;
#if HAVE_X86
        if (avx2)
            bad = fuse_block_avx2(f, from, count, lo, hi, low, high, &best_lo);
        else
#endif
            bad = fuse_block_plain(f, from, count, lo, hi, low, high, &best_lo);
        if (bad)
            return;
        /* low <= high (lo <= hi, weights and boosts >= 0, float rounding monotonic): a row whose
         * high is below the cut can neither enter the heap nor be a candidate */
        for (Py_ssize_t r = 0; r < count; r++) {
            if (!(high[r] >= cut))
                continue;
            if (f->mask && !f->mask[from + r])
                continue;
            if (cnt < k) {
                heap_push(f->heap, cnt++, low[r]);
                if (cnt == k)
                    cut = f->heap[0];
            } else if (low[r] > cut) {
                heap_replace_top(f->heap, k, low[r]);
                cut = f->heap[0];
            }
            if (high[r] > 0.0f && high[r] >= cut) { /* the cut only grows: a superset */
                f->cand[got] = from + r;
                f->high[got++] = high[r];
            }
        }
    }
    /* _reaching: the k-th best low in scope when k slots are in scope, else none (-inf) */
    float final = cnt == k ? cut : -INFINITY;
    Py_ssize_t out = 0;
    for (Py_ssize_t c = 0; c < got; c++)
        if (final > 0.0f ? f->high[c] >= final : f->high[c] > 0.0f)
            f->cand[out++] = f->cand[c];
    f->found = out;
    int32_t bits = best_lo ^ ((best_lo >> 31) & 0x7fffffff);
    float best;
    memcpy(&best, &bits, 4);
    f->best_lo = best_lo == INT32_MIN ? -INFINITY : best;
    f->best_lex = best_lex;
}

/* ------------------------------------------------------------------ exact */

/* The rows' exact cosines (see the header); the same source compiled twice, the lane loop
 * vectorised by the compiler (lane-parallel: no reordering of any sum). */
#define DEFINE_EXACT(NAME, ATTR)                                                                   \
    ATTR static void NAME(const float *vec, Py_ssize_t d, const double *q, const int64_t *slots,   \
                          Py_ssize_t k, float *out)                                               \
    {                                                                                             \
        const Py_ssize_t full = d - d % LANES;                                                    \
        for (Py_ssize_t i = 0; i < k; i++) {                                                      \
            const float *v = vec + (size_t)(slots ? slots[i] : i) * (size_t)d;                    \
            double acc[LANES] = {0};                                                              \
            for (Py_ssize_t j = 0; j < full; j += LANES)                                          \
                for (int l = 0; l < LANES; l++)                                                   \
                    acc[l] += (double)v[j + l] * q[j + l];                                        \
            for (Py_ssize_t j = full; j < d; j++)                                                 \
                acc[j - full] += (double)v[j] * q[j];                                             \
            for (int w = LANES / 2; w >= 1; w /= 2)                                               \
                for (int l = 0; l < w; l++)                                                       \
                    acc[l] = acc[l] + acc[l + w];                                                 \
            out[i] = (float)acc[0];                                                               \
        }                                                                                         \
    }

DEFINE_EXACT(exact_plain, )
#if HAVE_X86
DEFINE_EXACT(exact_avx2, __attribute__((target("avx2,fma"))))
#endif

/* exact(vec, q, slots, out) -> None; slots None: every row */
static PyObject *
exact(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "exact(vec, q, slots, out)");
        return NULL;
    }
    Py_buffer b[4];
    int got = 0, has_slots = args[2] != Py_None;
    double *q64 = NULL;
    if (get_array(args[0], &b[got], 'f', 2, 0, "vec") < 0)
        goto fail;
    got++;
    if (get_array(args[1], &b[got], 'f', 1, 0, "q") < 0)
        goto fail;
    got++;
    if (get_array(args[3], &b[got], 'f', 1, 1, "out") < 0)
        goto fail;
    got++;
    if (has_slots) {
        if (get_array(args[2], &b[got], 'q', 1, 0, "slots") < 0)
            goto fail;
        got++;
    }
    Py_ssize_t n = b[0].shape[0], d = b[0].shape[1], k = has_slots ? b[3].shape[0] : n;
    if (b[1].shape[0] != d || b[2].shape[0] != k) {
        PyErr_SetString(PyExc_ValueError, "exact: q needs one item per column, out one per row asked");
        goto fail;
    }
    const int64_t *slots = has_slots ? b[3].buf : NULL;
    for (Py_ssize_t i = 0; slots && i < k; i++)
        if (slots[i] < 0 || slots[i] >= n) {
            PyErr_SetString(PyExc_IndexError, "exact: a slot outside vec");
            goto fail;
        }
    q64 = PyMem_Malloc(sizeof(double) * (size_t)(d ? d : 1));
    if (!q64) {
        PyErr_NoMemory();
        goto fail;
    }
    for (Py_ssize_t j = 0; j < d; j++)
        q64[j] = (double)((const float *)b[1].buf)[j];
    Py_BEGIN_ALLOW_THREADS
#if HAVE_X86
    if (simd_level >= SIMD_AVX2)
        exact_avx2(b[0].buf, d, q64, slots, k, b[2].buf);
    else
#endif
        exact_plain(b[0].buf, d, q64, slots, k, b[2].buf);
    Py_END_ALLOW_THREADS
    PyMem_Free(q64);
    release(b, got);
    Py_RETURN_NONE;
fail:
    PyMem_Free(q64);
    release(b, got);
    return NULL;
}

/* ------------------------------------------------------------------ fuse_scan */

typedef struct {
    float fused, cos;
    int64_t slot;
} Ranked;

static int
by_score(const void *a, const void *b)
{
    const Ranked *x = a, *y = b;
    if (x->fused != y->fused)
        return x->fused > y->fused ? -1 : 1;
    return x->slot < y->slot ? -1 : x->slot > y->slot;
}

/* The end of fusion.py _ranked in C: the candidates' exact cosines (the exact() kernel, the same
 * bits), fused = (max(cos, 0) * vw + lex * tw) * boost in float32 as numpy rounds it, those > 0
 * ranked by score then slot; *out: the best limit of them (PyMem_RawMalloc'd, the caller frees
 * it). Returns how many, or -1 when out of memory. */
static Py_ssize_t
rank_candidates(const Fuse *f, const float *vec, const double *q64, Ranked **out)
{
    const Py_ssize_t k = f->found, d = f->s.d;
    float *cos = PyMem_RawMalloc(sizeof(float) * (size_t)(k ? k : 1));
    Ranked *r = cos ? PyMem_RawMalloc(sizeof(Ranked) * (size_t)(k ? k : 1)) : NULL;
    *out = r;
    if (!cos || !r) {
        PyMem_RawFree(cos);
        return -1;
    }
    /* the candidates' rows are scattered over the float32 matrix: ask for all their cache lines
     * first, so the misses overlap instead of coming one row after another */
    for (Py_ssize_t i = 0; i < k; i++) {
        const char *row = (const char *)(vec + (size_t)f->cand[i] * (size_t)d);
        for (size_t at = 0; at < sizeof(float) * (size_t)d; at += 64)
            __builtin_prefetch(row + at);
    }
#if HAVE_X86
    if (simd_level >= SIMD_AVX2)
        exact_avx2(vec, d, q64, f->cand, k, cos);
    else
#endif
        exact_plain(vec, d, q64, f->cand, k, cos);
    Py_ssize_t m = 0;
    for (Py_ssize_t i = 0; i < k; i++) {
        float c = cos[i], v = c >= 0.0f || c != c ? c : 0.0f; /* np.maximum(cos, 0) */
        float fused = v * f->vw;
        if (f->lex)
            fused = f->lex[f->cand[i]] * f->tw + fused;
        if (f->boost)
            fused = fused * f->boost[f->cand[i]];
        if (fused > 0.0f) {
            r[m].fused = fused;
            r[m].cos = v;
            r[m++].slot = f->cand[i];
        }
    }
    PyMem_RawFree(cos);
    qsort(r, (size_t)m, sizeof(Ranked), by_score);
    return m > f->limit ? f->limit : m;
}

static PyObject *
none_ref(void)
{
    Py_INCREF(Py_None);
    return Py_None;
}

/* [x[i].field for i < m] as a list of Python numbers */
static PyObject *
ranked_list(const Ranked *r, Py_ssize_t m, int what, const float *lex, float best)
{
    PyObject *list = PyList_New(m);
    for (Py_ssize_t i = 0; list && i < m; i++) {
        PyObject *x = what == 0   ? PyLong_FromLongLong(r[i].slot)
                      : what == 1 ? PyFloat_FromDouble(r[i].fused)
                      : what == 2 ? PyFloat_FromDouble(r[i].cos)
                                  : PyFloat_FromDouble(lex[r[i].slot] / best); /* float32 division */
        if (!x) {
            Py_CLEAR(list);
            break;
        }
        PyList_SET_ITEM(list, i, x);
    }
    return list;
}

/* fuse_scan(q8, scale, err, norm, mu, vec, q, lexical, mask, boost, text_weight, vector_weight,
 * limit, slack) -> (slots, scores, lexical, vector, rescored) or None: the weighted fusion of the
 * lexical scores and the exact cosines of every row (fusion.py _weighted_bounded), from one pass
 * over the int8 rows and the exact cosines of the few that can reach the result; the lists of
 * fusion.Fused (lexical None when no lexical score in scope is positive) and how many rows were
 * rescored. lexical, mask and boost may be None. None: undecided (no lower bound in scope above
 * 0, or a value that is not finite): the caller takes the two-pass path. */
static PyObject *
fuse_scan(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    enum { NB = 10 };
    if (nargs != NB + 4) {
        PyErr_SetString(PyExc_TypeError, "fuse_scan(q8, scale, err, norm, mu, vec, q, lexical, mask, boost, "
                                         "text_weight, vector_weight, limit, slack)");
        return NULL;
    }
    Fuse f;
    memset(&f, 0, sizeof f);
    int bad = 0;
    f.text_weight = get_double(args[NB], &bad);
    f.vector_weight = bad ? 0.0 : get_double(args[NB + 1], &bad);
    f.limit = bad ? 0 : PyLong_AsSsize_t(args[NB + 2]);
    if (!bad && f.limit == -1 && PyErr_Occurred())
        bad = 1;
    f.s.slack = bad ? 0.0 : get_double(args[NB + 3], &bad);
    if (bad)
        return NULL;
    static const char kinds[NB] = {'b', 'f', 'f', 'f', 'f', 'f', 'f', 'f', '?', 'f'};
    static const int dims[NB] = {2, 1, 1, 1, 1, 2, 1, 1, 1, 1};
    static const char *names[NB] = {"q8", "scale", "err", "norm", "mu", "vec", "q", "lexical", "mask", "boost"};
    Py_buffer b[NB];
    int held[NB] = {0};
    char *scratch = NULL;
    PyObject *res = NULL;
    for (int i = 0; i < NB; i++) {
        if (i >= 7 && i <= 9 && args[i] == Py_None)
            continue;
        if (get_array(args[i], &b[i], kinds[i], dims[i], 0, names[i]) < 0)
            goto done;
        held[i] = 1;
    }
    Py_ssize_t n = b[0].shape[0], d = b[0].shape[1];
    int ok = b[1].shape[0] == n && b[2].shape[0] == n && b[3].shape[0] == n && b[4].shape[0] == d &&
             b[5].shape[0] == n && b[5].shape[1] == d && b[6].shape[0] == d;
    for (int i = 7; i <= 9; i++)
        ok &= !held[i] || b[i].shape[0] == n;
    if (!ok) {
        PyErr_SetString(PyExc_ValueError, "fuse_scan: scale, err, norm, vec, lexical, mask and boost "
                                          "need one item (vec one row) per row of q8, mu, q and vec's rows one "
                                          "per column");
        goto done;
    }
    if (d > MAX_DIM) {
        PyErr_SetString(PyExc_ValueError, "fuse_scan: more than 65536 dimensions");
        goto done;
    }
    if (f.limit < 1 || f.limit > n) {
        PyErr_SetString(PyExc_ValueError, "fuse_scan: limit must be between 1 and the number of rows");
        goto done;
    }
    /* scratch: q in float64 (d), qhat (d bytes, rounded up to 16), the candidates (n int64), high
     * (n floats), the heap (limit floats); n and limit at most a buffer's item count (n below
     * PY_SSIZE_T_MAX / 32), d at most MAX_DIM: no overflow below. */
    if (n > PY_SSIZE_T_MAX / 32) {
        PyErr_SetString(PyExc_ValueError, "fuse_scan: too many rows");
        goto done;
    }
    size_t qbytes = ((size_t)d + 15) & ~(size_t)15;
    size_t head = sizeof(double) * (size_t)d + qbytes;
    scratch = PyMem_Malloc(head + sizeof(int64_t) * (size_t)n + sizeof(float) * ((size_t)n + (size_t)f.limit));
    if (!scratch) {
        PyErr_NoMemory();
        goto done;
    }
    double *q64 = (double *)scratch;
    f.qhat = (int8_t *)(scratch + sizeof(double) * (size_t)d);
    f.cand = (int64_t *)(scratch + head);
    f.high = (float *)(f.cand + n);
    f.heap = f.high + n;
    f.s.q8 = b[0].buf;
    f.s.qhat = f.qhat;
    f.s.scale = b[1].buf;
    f.s.err = b[2].buf;
    f.s.norm = b[3].buf;
    f.s.n = n;
    f.s.d = d;
    f.mu = b[4].buf;
    f.q = b[6].buf;
    f.lex = held[7] ? b[7].buf : NULL;
    f.mask = held[8] ? b[8].buf : NULL;
    f.boost = held[9] ? b[9].buf : NULL;
    for (Py_ssize_t j = 0; j < d; j++)
        q64[j] = (double)f.q[j];
    Py_ssize_t count = -1;
    Ranked *ranked = NULL;
    Py_BEGIN_ALLOW_THREADS
    fuse_rows(&f);
    if (f.found >= 0 && f.best_lo > 0.0)
        count = rank_candidates(&f, b[5].buf, q64, &ranked);
    Py_END_ALLOW_THREADS
    if (f.found < 0 || !(f.best_lo > 0.0)) {
        Py_INCREF(Py_None);
        res = Py_None;
    } else if (count < 0) {
        PyErr_NoMemory();
    } else {
        const float *lex = held[7] ? b[7].buf : NULL;
        const float best = (float)f.best_lex;
        /* slots, scores, lexical (None without a positive lexical score), vector; made one after
         * another: the first that fails (out of memory, the exception set) ends it */
        static const int what[4] = {0, 1, 3, 2};
        PyObject *lists[4] = {NULL, NULL, NULL, NULL};
        int made = 0;
        for (; made < 4; made++) {
            lists[made] = what[made] == 3 && !(lex && best > 0.0f) ? none_ref()
                                                                   : ranked_list(ranked, count, what[made], lex, best);
            if (!lists[made])
                break;
        }
        if (made == 4)
            res = Py_BuildValue("(OOOOn)", lists[0], lists[1], lists[2], lists[3], f.found);
        for (int i = 0; i < 4; i++)
            Py_XDECREF(lists[i]);
    }
    PyMem_RawFree(ranked);
done:
    PyMem_Free(scratch);
    for (int i = 0; i < NB; i++)
        if (held[i])
            PyBuffer_Release(&b[i]);
    return res;
}

/* simd() -> str: the variant in use ("avx512vnni", "avxvnni", "avx2" or "portable"); set_simd(on):
 * True the best the CPU has, False the portable loops, or a variant's name (the best the CPU has
 * at most that one), for the tests that compare them; returns whether anything but the portable
 * loops is in use. */
static PyObject *
simd(PyObject *self, PyObject *unused)
{
    return PyUnicode_FromString(simd_names[simd_level]);
}

/* Whether the CPU (and this build) has the variant ``level``. */
static int
cpu_has(int level)
{
#if HAVE_X86
    __builtin_cpu_init();
    if (level == SIMD_PORTABLE)
        return 1;
    if (!(__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")))
        return 0;
#if HAVE_VNNI
    if (level == SIMD_AVXVNNI)
        return __builtin_cpu_supports("avxvnni");
    if (level == SIMD_AVX512VNNI)
        return __builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("avx512vl");
#endif
    return level == SIMD_AVX2;
#else
    return level == SIMD_PORTABLE;
#endif
}

/* The best variant the CPU has (AVX-VNNI before AVX512-VNNI: the same instruction, VEX-coded). */
static int
cpu_level(void)
{
    static const int order[4] = {SIMD_AVXVNNI, SIMD_AVX512VNNI, SIMD_AVX2, SIMD_PORTABLE};
    for (int i = 0; i < 4; i++)
        if (cpu_has(order[i]))
            return order[i];
    return SIMD_PORTABLE;
}

static PyObject *
set_simd(PyObject *self, PyObject *on)
{
    int want = SIMD_PORTABLE;
    if (PyUnicode_Check(on)) {
        int i = 0;
        for (; i < 4 && PyUnicode_CompareWithASCIIString(on, simd_names[i]) != 0; i++)
            ;
        if (i == 4) {
            PyErr_SetString(PyExc_ValueError, "set_simd: avx512vnni, avxvnni, avx2, portable, True or False");
            return NULL;
        }
        /* a variant the CPU lacks: the best below it (AVX2 below either VNNI one) */
        want = cpu_has(i) ? i : i >= SIMD_AVX2 && cpu_has(SIMD_AVX2) ? SIMD_AVX2 : SIMD_PORTABLE;
    } else {
        int truth = PyObject_IsTrue(on);
        if (truth < 0)
            return NULL;
        want = truth ? cpu_level() : SIMD_PORTABLE;
    }
    simd_level = want;
    return PyBool_FromLong(simd_level != SIMD_PORTABLE);
}

static PyMethodDef methods[] = {
    {"quantize", (PyCFunction)(void (*)(void))quantize, METH_FASTCALL, "int8 rows, scales and error bounds."},
    {"scan", (PyCFunction)(void (*)(void))scan, METH_FASTCALL, "Each row's cosine bounds from its int8 copy."},
    {"exact", (PyCFunction)(void (*)(void))exact, METH_FASTCALL, "Exact cosines of some rows (or all)."},
    {"fuse_scan", (PyCFunction)(void (*)(void))fuse_scan, METH_FASTCALL,
     "The scan and the weighted fusion's cut in one pass: the slots to rescore."},
    {"simd", simd, METH_NOARGS, "The kernel variant in use."},
    {"set_simd", set_simd, METH_O, "Choose the kernel variant (True: the best the CPU has)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef vec_module = {
    PyModuleDef_HEAD_INIT, "_vec", "goclaw's vector-channel kernels.", -1, methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC
PyInit__vec(void)
{
    simd_level = cpu_level();
    PyObject *m = PyModule_Create(&vec_module);
    if (!m)
        return NULL;
    if (PyModule_AddIntConstant(m, "ABI", VEC_ABI) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
