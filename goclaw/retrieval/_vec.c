/* goclaw's vector-channel kernels (issue 11: query speed; docs/memory.md "The vector channel").
 *
 * The search index keeps its float32 matrix (unit rows) as the source of truth and, beside it, an
 * int8 copy of each row with its scale and an error bound (goclaw/retrieval/vecq.py). A query
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
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("O3") /* the portable loops vectorised (clang does at -O2); never fast-math */
#endif
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#define VEC_ABI 2 /* 2: rows quantized about a centre (quantize's mu, scan's norm and mq) */
#define LANES 16         /* exact(): float64 accumulators, one per j mod 16 */
#define MAX_DIM 65536    /* an int32 dot of int8 rows cannot overflow below 133,000 */

/* GOCLAW_VEC_PORTABLE: build the portable loops only (how aarch64 and other compilers build it). */
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && !defined(GOCLAW_VEC_PORTABLE)
#define HAVE_X86 1
#include <immintrin.h>
#else
#define HAVE_X86 0
#endif

static int use_avx2 = 0;

/* ------------------------------------------------------------------ buffers */

/* Get ``obj``'s buffer as a C-contiguous array of ``ndim`` dimensions whose items are of
 * ``kind`` ('f' float32, 'b' int8, 'q' int64), writable if asked; else a ValueError naming
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
    Py_ssize_t size = kind == 'f' ? 4 : kind == 'b' ? 1 : 8;
    int same = f[0] == kind || (kind == 'q' && f[0] == 'l' && sizeof(long) == 8);
    if (!same || f[1] != '\0' || view->itemsize != size || view->ndim != ndim) {
        const char *type = kind == 'f' ? "float32" : kind == 'b' ? "int8" : "int64";
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
    if (use_avx2)
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

static int32_t
dot_i8(const int8_t *a, const int8_t *b, Py_ssize_t d)
{
    int32_t acc = 0;
    for (Py_ssize_t j = 0; j < d; j++)
        acc += (int32_t)a[j] * (int32_t)b[j];
    return acc;
}

typedef struct {
    const int8_t *q8, *qhat;
    const float *scale, *err, *norm;
    float *lo, *hi;
    Py_ssize_t n, d;
    double t, eq, m, mq, slack;
} Scan;

static inline void
bound(const Scan *s, Py_ssize_t i, int32_t dot)
{
    if (s->scale[i] == 0.0f && s->err[i] == 0.0f) { /* a zero row: the exact cosine 0 */
        s->lo[i] = s->hi[i] = 0.0f;
        return;
    }
    double a = s->mq + (double)s->scale[i] * s->t * (double)dot;
    double r = s->eq * (double)s->norm[i] + s->m * (double)s->err[i] + s->slack;
    s->lo[i] = (float)(a - r);
    s->hi[i] = (float)(a + r);
}

static void
scan_plain(const Scan *s)
{
    for (Py_ssize_t i = 0; i < s->n; i++)
        bound(s, i, dot_i8(s->q8 + (size_t)i * (size_t)s->d, s->qhat, s->d));
}

#if HAVE_X86
/* int8 x int8 with vpmaddubsw: |qhat| as the unsigned operand, the row with qhat's sign as the
 * signed one; both within [-127, 127], so a pair's sum (at most 2 x 127 x 127) never saturates. */
__attribute__((target("avx2"))) static void
scan_avx2(const Scan *s)
{
    const Py_ssize_t d = s->d, full = d - d % 32;
    const __m256i ones = _mm256_set1_epi16(1);
    for (Py_ssize_t i = 0; i < s->n; i++) {
        const int8_t *r = s->q8 + (size_t)i * (size_t)d;
        __m256i acc = _mm256_setzero_si256();
        for (Py_ssize_t j = 0; j < full; j += 32) {
            __m256i b = _mm256_loadu_si256((const __m256i *)(r + j));
            __m256i a = _mm256_loadu_si256((const __m256i *)(s->qhat + j));
            __m256i p = _mm256_maddubs_epi16(_mm256_sign_epi8(a, a), _mm256_sign_epi8(b, a));
            acc = _mm256_add_epi32(acc, _mm256_madd_epi16(p, ones));
        }
        __m128i x = _mm_add_epi32(_mm256_castsi256_si128(acc), _mm256_extracti128_si256(acc, 1));
        x = _mm_hadd_epi32(x, x);
        x = _mm_hadd_epi32(x, x);
        int32_t dot = _mm_cvtsi128_si32(x) + dot_i8(r + full, s->qhat + full, d - full);
        bound(s, i, dot);
    }
}
#endif

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
    s.lo = b[5].buf;
    s.hi = b[6].buf;
    Py_BEGIN_ALLOW_THREADS
#if HAVE_X86
    if (use_avx2)
        scan_avx2(&s);
    else
#endif
        scan_plain(&s);
    Py_END_ALLOW_THREADS
    release(b, got);
    Py_RETURN_NONE;
fail:
    release(b, got);
    return NULL;
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
    if (use_avx2)
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

/* simd() -> str: the variant in use ("avx2" or "portable"); set_simd(bool): use AVX2 when the CPU
 * has it (True) or the portable loops (False), for the tests that compare both. */
static PyObject *
simd(PyObject *self, PyObject *unused)
{
    return PyUnicode_FromString(use_avx2 ? "avx2" : "portable");
}

static int
cpu_avx2(void)
{
#if HAVE_X86
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
    return 0;
#endif
}

static PyObject *
set_simd(PyObject *self, PyObject *on)
{
    int want = PyObject_IsTrue(on);
    if (want < 0)
        return NULL;
    use_avx2 = want && cpu_avx2();
    return PyBool_FromLong(use_avx2);
}

static PyMethodDef methods[] = {
    {"quantize", (PyCFunction)(void (*)(void))quantize, METH_FASTCALL, "int8 rows, scales and error bounds."},
    {"scan", (PyCFunction)(void (*)(void))scan, METH_FASTCALL, "Each row's cosine bounds from its int8 copy."},
    {"exact", (PyCFunction)(void (*)(void))exact, METH_FASTCALL, "Exact cosines of some rows (or all)."},
    {"simd", simd, METH_NOARGS, "The kernel variant in use."},
    {"set_simd", set_simd, METH_O, "Use the AVX2 variants when the CPU has them (True) or not."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef vec_module = {
    PyModuleDef_HEAD_INIT, "_vec", "goclaw's vector-channel kernels.", -1, methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC
PyInit__vec(void)
{
    use_avx2 = cpu_avx2();
    PyObject *m = PyModule_Create(&vec_module);
    if (!m)
        return NULL;
    if (PyModule_AddIntConstant(m, "ABI", VEC_ABI) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
