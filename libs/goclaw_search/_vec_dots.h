/* The int8 dot products of the vector scan (libs/goclaw_search/_vec.pyx includes this file):
 * goclaw_dots(q8, d, qhat, from, count, out) writes the exact int32 dot of rows from..from+count
 * of q8 (n x d, int8) with qhat (d, int8) into out. Plain C, no Python API.
 *
 * Chosen once, by what the CPU has: AVX-VNNI or AVX512-VNNI (vpdpbusd) or AVX2 (vpmaddubsw +
 * vpmaddwd) on x86-64 with GCC or clang, four rows in flight (four accumulators, qhat's vectors
 * loaded once for the four) and the rows PF_ROWS ahead prefetched; elsewhere a portable loop
 * the compiler vectorises. int8 x int8 as unsigned x signed: |qhat| is the unsigned operand, the
 * row with qhat's sign the signed one (both within [-127, 127]: a pair's sum, at most
 * 2 x 127 x 127, never saturates). Every variant computes the exact int32 dot: the same bits. */
#ifndef GOCLAW_VEC_DOTS_H
#define GOCLAW_VEC_DOTS_H

#include <stddef.h>
#include <stdint.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && !defined(GOCLAW_VEC_PORTABLE)
#define GOCLAW_X86 1
#include <immintrin.h>
#else
#define GOCLAW_X86 0
#endif
/* AVX-VNNI / AVX512-VNNI: GCC 11 and later (intrinsics and __builtin_cpu_supports("avxvnni"));
 * a clang build uses AVX2 (the same bits). */
#if GOCLAW_X86 && !defined(__clang__) && __GNUC__ >= 11
#define GOCLAW_VNNI 1
#else
#define GOCLAW_VNNI 0
#endif

static int32_t
goclaw_dot_i8(const int8_t *a, const int8_t *b, ptrdiff_t d)
{
    int32_t acc = 0;
    for (ptrdiff_t j = 0; j < d; j++)
        acc += (int32_t)a[j] * (int32_t)b[j];
    return acc;
}

typedef void (*goclaw_dots_fn)(const int8_t *q8, ptrdiff_t d, const int8_t *qhat, ptrdiff_t from, ptrdiff_t count,
                               int32_t *out);

static void
goclaw_dots_portable(const int8_t *q8, ptrdiff_t d, const int8_t *qhat, ptrdiff_t from, ptrdiff_t count,
                     int32_t *out)
{
    for (ptrdiff_t i = 0; i < count; i++)
        out[i] = goclaw_dot_i8(q8 + (size_t)(from + i) * (size_t)d, qhat, d);
}

#if GOCLAW_X86
#define GOCLAW_PF_ROWS 16
#define GOCLAW_AVX2_MUL(acc, u, s) _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), ones))
#define GOCLAW_DEFINE_DOTS(NAME, ATTR, MUL)                                                                  \
    ATTR static void NAME(const int8_t *q8, ptrdiff_t d, const int8_t *qhat, ptrdiff_t from, ptrdiff_t count, \
                          int32_t *out)                                                                      \
    {                                                                                                        \
        const ptrdiff_t full = d - d % 32;                                                                   \
        const __m256i ones = _mm256_set1_epi16(1);                                                           \
        (void)ones;                                                                                          \
        ptrdiff_t i = 0;                                                                                     \
        for (; i + 4 <= count; i += 4) {                                                                     \
            const int8_t *r0 = q8 + (size_t)(from + i) * (size_t)d, *r1 = r0 + d, *r2 = r1 + d, *r3 = r2 + d; \
            __m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0;                                  \
            if (i + GOCLAW_PF_ROWS + 4 <= count)                                                             \
                for (size_t at = 0; at < 4 * (size_t)d; at += 64)                                            \
                    _mm_prefetch((const char *)(r0 + (size_t)GOCLAW_PF_ROWS * (size_t)d + at), _MM_HINT_T0); \
            for (ptrdiff_t j = 0; j < full; j += 32) {                                                       \
                __m256i q = _mm256_loadu_si256((const __m256i *)(qhat + j));                                 \
                __m256i u = _mm256_sign_epi8(q, q);                                                          \
                a0 = MUL(a0, u, _mm256_sign_epi8(_mm256_loadu_si256((const __m256i *)(r0 + j)), q));         \
                a1 = MUL(a1, u, _mm256_sign_epi8(_mm256_loadu_si256((const __m256i *)(r1 + j)), q));         \
                a2 = MUL(a2, u, _mm256_sign_epi8(_mm256_loadu_si256((const __m256i *)(r2 + j)), q));         \
                a3 = MUL(a3, u, _mm256_sign_epi8(_mm256_loadu_si256((const __m256i *)(r3 + j)), q));         \
            }                                                                                                \
            __m256i s = _mm256_hadd_epi32(_mm256_hadd_epi32(a0, a1), _mm256_hadd_epi32(a2, a3));              \
            __m128i x = _mm_add_epi32(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));             \
            int32_t part[4];                                                                                 \
            _mm_storeu_si128((__m128i *)part, x);                                                            \
            out[i] = part[0] + goclaw_dot_i8(r0 + full, qhat + full, d - full);                              \
            out[i + 1] = part[1] + goclaw_dot_i8(r1 + full, qhat + full, d - full);                          \
            out[i + 2] = part[2] + goclaw_dot_i8(r2 + full, qhat + full, d - full);                          \
            out[i + 3] = part[3] + goclaw_dot_i8(r3 + full, qhat + full, d - full);                          \
        }                                                                                                    \
        for (; i < count; i++)                                                                               \
            out[i] = goclaw_dot_i8(q8 + (size_t)(from + i) * (size_t)d, qhat, d);                            \
    }

GOCLAW_DEFINE_DOTS(goclaw_dots_avx2, __attribute__((target("avx2"))), GOCLAW_AVX2_MUL)
#if GOCLAW_VNNI
GOCLAW_DEFINE_DOTS(goclaw_dots_avxvnni, __attribute__((target("avx2,avxvnni"))), _mm256_dpbusd_avx_epi32)
GOCLAW_DEFINE_DOTS(goclaw_dots_avx512vnni, __attribute__((target("avx2,avx512vnni,avx512vl"))), _mm256_dpbusd_epi32)
#endif
#endif

/* The kernel for this CPU ("portable" forces the portable loop: the tests compare them). */
static goclaw_dots_fn
goclaw_dots_for(int portable, const char **name)
{
#if GOCLAW_X86
    if (!portable) {
        __builtin_cpu_init();
#if GOCLAW_VNNI
        if (__builtin_cpu_supports("avxvnni")) {
            *name = "avxvnni";
            return goclaw_dots_avxvnni;
        }
        if (__builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("avx512vl")) {
            *name = "avx512vnni";
            return goclaw_dots_avx512vnni;
        }
#endif
        if (__builtin_cpu_supports("avx2")) {
            *name = "avx2";
            return goclaw_dots_avx2;
        }
    }
#else
    (void)portable;
#endif
    *name = "portable";
    return goclaw_dots_portable;
}

#endif
