/* goclaw's passage-sketch accelerator (issue 11: indexing speed; docs/memory.md "Passages").
 *
 * Sketcher(matrix, tokenize).batch(texts) computes, for a batch of texts, what
 * plugins/goclaw_embeddings/static_passages.py's pure-Python path computes (the same bytes):
 * the layout of goclaw_search.passages.passage_layout (str.splitlines, the heading / item /
 * fence line rules with Python's \s and \d), each segment's whitespace pieces (str.split),
 * their token ids from a piece cache held here (unseen pieces tokenised with one call of
 * ``tokenize(list_of_str) -> list[list[int]]``), and each passage's norm: its tokens' rows
 * summed in float64 in order, rounded to float32, the squares summed in float64 in order.
 * A built module must match goclaw's SKETCH_ABI (static_passages.py) to be used.
 */
#define PY_SSIZE_T_CLEAN
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("O3") /* the row sums vectorised (clang does at -O2); never fast-math */
#endif
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#define SKETCH_ABI 2 /* 2: Sketcher(vocab=, unk=, drop=, max_chars=, max_tokens=), C WordPiece */
#define CACHE_ENTRIES_MAX 200000
#define CACHE_TOKENS_MAX 2000000
#define CACHE_CHARS_MAX 4000000 /* code points of the cached pieces (4 bytes each) */
#define PENDING ((size_t)-1)

/* A growable array of fixed-size items. */
typedef struct {
    char *d;
    size_t n, cap, item;
} Vec;

static int vec_reserve(Vec *v, size_t more) {
    if (v->n + more <= v->cap) return 0;
    size_t cap = v->cap ? v->cap : 64;
    while (cap < v->n + more) {
        if (cap > ((size_t)PY_SSIZE_T_MAX) / 2 / v->item) {
            PyErr_NoMemory();
            return -1;
        }
        cap *= 2;
    }
    char *d = PyMem_Realloc(v->d, cap * v->item);
    if (!d) {
        PyErr_NoMemory();
        return -1;
    }
    v->d = d;
    v->cap = cap;
    return 0;
}

#define VEC_PUSH(v, T, x) (vec_reserve((v), 1) < 0 ? -1 : (((T *)(v)->d)[(v)->n++] = (x), 0))
#define VEC_AT(v, T, i) (((T *)(v)->d)[i])

static void vec_free(Vec *v) {
    PyMem_Free(v->d);
    v->d = NULL;
    v->n = v->cap = 0;
}

/* A cached piece: its code points (in the key pool) and token ids (in the token pool). */
typedef struct {
    uint64_t hash;
    size_t key_off, key_len;
    size_t tok_off, tok_n; /* tok_off == PENDING: not tokenised yet */
} Entry;

typedef struct {
    PyObject_HEAD
    PyObject *tokenize;
    Py_buffer matrix;
    int has_matrix;
    Py_ssize_t rows, dim;
    Vec entries;   /* Entry */
    Vec keys;      /* Py_UCS4 */
    Vec toks;      /* uint32_t */
    size_t *slots; /* entry index + 1, 0 = empty */
    size_t nslots;
    int busy;
    /* WordPiece in C for printable-ASCII pieces (none when has_vocab is 0): the vocabulary's
     * ASCII tokens (hash table over vkeys), the unknown token, the id dropped, the longest word
     * and the most tokens per piece (0: no limit), as the Python tokenizer's settings say. */
    int has_vocab;
    Vec vkeys;    /* char */
    Vec ventries; /* VEntry */
    size_t *vslots;
    size_t nvslots, vmaxlen;
    long unk, drop;
    Py_ssize_t max_chars, max_tokens;
} Sketcher;

typedef struct {
    uint64_t hash;
    size_t off, len;
    long id;
} VEntry;

static uint64_t bytes_hash(const char *p, size_t n) {
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < n; i++) h = (h ^ (uint8_t)p[i]) * 1099511628211ULL;
    return h;
}

/* The id of the vocabulary token p[:n], or -1. */
static long vocab_id(Sketcher *s, const char *p, size_t n) {
    if (n > s->vmaxlen) return -1;
    uint64_t h = bytes_hash(p, n);
    size_t i = (size_t)h & (s->nvslots - 1);
    for (;;) {
        size_t slot = s->vslots[i];
        if (!slot) return -1;
        VEntry *e = &((VEntry *)s->ventries.d)[slot - 1];
        if (e->hash == h && e->len == n && memcmp(s->vkeys.d + e->off, p, n) == 0) return e->id;
        i = (i + 1) & (s->nvslots - 1);
    }
}

static int vocab_build(Sketcher *s, PyObject *vocab) {
    Py_ssize_t pos = 0, n = PyDict_Size(vocab);
    PyObject *key, *value;
    size_t nslots = 1024;
    while (nslots < (size_t)n * 2 + 2) nslots *= 2;
    s->vslots = PyMem_Calloc(nslots, sizeof(size_t));
    if (!s->vslots) {
        PyErr_NoMemory();
        return -1;
    }
    s->nvslots = nslots;
    while (PyDict_Next(vocab, &pos, &key, &value)) {
        if (!PyUnicode_Check(key) || !PyUnicode_IS_ASCII(key)) continue; /* never matched */
        long id = PyLong_AsLong(value);
        if (id == -1 && PyErr_Occurred()) return -1;
        Py_ssize_t len;
        const char *k = PyUnicode_AsUTF8AndSize(key, &len);
        if (!k) return -1;
        if (vocab_id(s, k, (size_t)len) >= 0) continue;
        if (vec_reserve(&s->vkeys, (size_t)len) < 0) return -1;
        VEntry e = {bytes_hash(k, (size_t)len), s->vkeys.n, (size_t)len, id};
        memcpy(s->vkeys.d + s->vkeys.n, k, (size_t)len);
        s->vkeys.n += (size_t)len;
        if (VEC_PUSH(&s->ventries, VEntry, e) < 0) return -1;
        size_t i = (size_t)e.hash & (nslots - 1);
        while (s->vslots[i]) i = (i + 1) & (nslots - 1);
        s->vslots[i] = s->ventries.n;
        if ((size_t)len > s->vmaxlen) s->vmaxlen = (size_t)len;
    }
    return 0;
}

static int is_alnum(Py_UCS4 c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

/* Emit one token of a piece (counted against max_tokens; the dropped id not kept). */
#define EMIT(id_)                                                                   \
    do {                                                                            \
        if (s->max_tokens && count >= (size_t)s->max_tokens) goto truncated;        \
        count++;                                                                    \
        if ((id_) != s->drop && VEC_PUSH(&s->toks, uint32_t, (uint32_t)(id_)) < 0) \
            return -1;                                                              \
    } while (0)

/* text[a:b], a printable-ASCII piece without '[', tokenised as the Python tokenizer does:
 * lowercased, split into runs of letters and digits and single punctuation characters, each
 * word by greedy longest-match WordPiece (a word of more than max_chars, or with a part not in
 * the vocabulary, is the unknown token), cut at max_tokens. Appends the ids to s->toks. */
static int wordpiece(Sketcher *s, int kind, const void *data, Py_ssize_t a, Py_ssize_t b) {
    char word[128], cand[136];
    long sub[128];
    size_t count = 0;
    Py_ssize_t i = a;
    while (i < b) {
        Py_ssize_t j = i + 1;
        if (is_alnum(PyUnicode_READ(kind, data, i)))
            while (j < b && is_alnum(PyUnicode_READ(kind, data, j))) j++;
        size_t n = (size_t)(j - i);
        if ((Py_ssize_t)n > s->max_chars) { /* max_chars <= 120: the buffers hold any other word */
            EMIT(s->unk);
            i = j;
            continue;
        }
        for (size_t k = 0; k < n; k++) {
            Py_UCS4 c = PyUnicode_READ(kind, data, i + (Py_ssize_t)k);
            word[k] = (char)(c >= 'A' && c <= 'Z' ? c + 32 : c);
        }
        size_t start = 0, nsub = 0;
        int bad = 0;
        while (start < n) {
            size_t end = n;
            long found = -1;
            while (start < end) {
                size_t len = end - start;
                if (start > 0) {
                    cand[0] = cand[1] = '#';
                    memcpy(cand + 2, word + start, len);
                    found = vocab_id(s, cand, len + 2);
                } else
                    found = vocab_id(s, word, len);
                if (found >= 0) break;
                end--;
            }
            if (found < 0) {
                bad = 1;
                break;
            }
            sub[nsub++] = found;
            start = end;
        }
        if (bad) EMIT(s->unk);
        else
            for (size_t k = 0; k < nsub; k++) EMIT(sub[k]);
        i = j;
    }
truncated:
    return 0;
}
#undef EMIT

/* Forget every cached piece; memory grown past the bounds (one huge batch) is given back. */
static void cache_clear(Sketcher *s) {
    s->entries.n = s->keys.n = s->toks.n = 0;
    if (s->entries.cap > 2 * CACHE_ENTRIES_MAX) vec_free(&s->entries);
    if (s->keys.cap > 2 * CACHE_CHARS_MAX) vec_free(&s->keys);
    if (s->toks.cap > 2 * CACHE_TOKENS_MAX) vec_free(&s->toks);
    if (s->nslots > 4 * CACHE_ENTRIES_MAX) {
        PyMem_Free(s->slots);
        s->slots = NULL;
        s->nslots = 0;
    }
    if (s->slots) memset(s->slots, 0, s->nslots * sizeof(size_t));
}

static int slots_grow(Sketcher *s) {
    size_t n = s->nslots ? s->nslots * 2 : 4096;
    size_t *slots = PyMem_Calloc(n, sizeof(size_t));
    if (!slots) {
        PyErr_NoMemory();
        return -1;
    }
    for (size_t e = 0; e < s->entries.n; e++) {
        size_t i = (size_t)VEC_AT(&s->entries, Entry, e).hash & (n - 1);
        while (slots[i]) i = (i + 1) & (n - 1);
        slots[i] = e + 1;
    }
    PyMem_Free(s->slots);
    s->slots = slots;
    s->nslots = n;
    return 0;
}

/* The entry of text[a:b] (hash h, all code points < 2**21), added as PENDING when new (then
 * *added = 1). Returns the entry index, or PENDING on error. */
static size_t cache_find(Sketcher *s, int kind, const void *data, Py_ssize_t a, Py_ssize_t b,
                         uint64_t h, int *added) {
    if ((s->entries.n + 1) * 2 > s->nslots && slots_grow(s) < 0) return PENDING;
    size_t len = (size_t)(b - a);
    size_t i = (size_t)h & (s->nslots - 1);
    for (;;) {
        size_t slot = s->slots[i];
        if (!slot) break;
        Entry *e = &VEC_AT(&s->entries, Entry, slot - 1);
        if (e->hash == h && e->key_len == len) {
            const Py_UCS4 *k = &VEC_AT(&s->keys, Py_UCS4, e->key_off);
            size_t j = 0;
            while (j < len && k[j] == PyUnicode_READ(kind, data, a + (Py_ssize_t)j)) j++;
            if (j == len) return slot - 1;
        }
        i = (i + 1) & (s->nslots - 1);
    }
    if (vec_reserve(&s->keys, len) < 0) return PENDING;
    Entry e = {h, s->keys.n, len, PENDING, 0};
    for (size_t j = 0; j < len; j++)
        VEC_AT(&s->keys, Py_UCS4, s->keys.n + j) = PyUnicode_READ(kind, data, a + (Py_ssize_t)j);
    s->keys.n += len;
    if (VEC_PUSH(&s->entries, Entry, e) < 0) return PENDING;
    s->slots[i] = s->entries.n;
    *added = 1;
    return s->entries.n - 1;
}

/* One batch's layout: pieces (entry indices), segments (their end in pieces), passages (their
 * segments, batch-global), texts (their segment and passage ends). */
typedef struct {
    Vec piece_entry;  /* size_t */
    Vec seg_end;      /* size_t: end of the segment's pieces */
    Vec ref;          /* size_t: segment of each passage reference */
    Vec pass_nref;    /* size_t */
    Vec text_segs;    /* size_t: segments per text */
    Vec text_pass;    /* size_t: passages per text */
    Vec heading_segs; /* size_t: this text's headings (scratch) */
    PyObject *new_pieces;
    Vec new_idx;           /* size_t: entry of each new piece */
} Batch;

static void batch_free(Batch *bt) {
    vec_free(&bt->piece_entry);
    vec_free(&bt->seg_end);
    vec_free(&bt->ref);
    vec_free(&bt->pass_nref);
    vec_free(&bt->text_segs);
    vec_free(&bt->text_pass);
    vec_free(&bt->heading_segs);
    vec_free(&bt->new_idx);
    Py_XDECREF(bt->new_pieces);
}

/* Split text[a:b] into whitespace pieces (str.split) and add their entries. */
static int add_pieces(Sketcher *s, Batch *bt, PyObject *text, int kind, const void *data, Py_ssize_t a,
                      Py_ssize_t b) {
    Py_ssize_t i = a;
    while (i < b) {
        while (i < b && Py_UNICODE_ISSPACE(PyUnicode_READ(kind, data, i))) i++;
        if (i >= b) break;
        Py_ssize_t start = i;
        uint64_t h = 1469598103934665603ULL;
        int plain = 1; /* printable ASCII without '[' (no added token inside): WordPiece here */
        while (i < b) {
            Py_UCS4 c = PyUnicode_READ(kind, data, i);
            if (Py_UNICODE_ISSPACE(c)) break;
            h = (h ^ (uint64_t)c) * 1099511628211ULL;
            plain &= c > 0x20 && c < 0x7f && c != '[';
            i++;
        }
        int added = 0;
        size_t e = cache_find(s, kind, data, start, i, h, &added);
        if (e == PENDING) return -1;
        if (added && plain && s->has_vocab) {
            Entry *en = &VEC_AT(&s->entries, Entry, e);
            size_t off = s->toks.n;
            if (wordpiece(s, kind, data, start, i) < 0) return -1;
            en = &VEC_AT(&s->entries, Entry, e);
            en->tok_off = off;
            en->tok_n = s->toks.n - off;
        } else if (added) {
            PyObject *piece = PyUnicode_Substring(text, start, i);
            if (!piece) return -1;
            int rc = PyList_Append(bt->new_pieces, piece);
            Py_DECREF(piece);
            if (rc < 0 || VEC_PUSH(&bt->new_idx, size_t, e) < 0) return -1;
        }
        if (VEC_PUSH(&bt->piece_entry, size_t, e) < 0) return -1;
    }
    return 0;
}

/* str.splitlines' line breaks (Py_UNICODE_ISLINEBREAK, its ASCII ones inline). */
static inline int is_break(Py_UCS4 c) {
    if (c < 128) return c == '\n' || c == '\r' || c == 0x0b || c == 0x0c || (c >= 0x1c && c <= 0x1e);
    return Py_UNICODE_ISLINEBREAK(c);
}

typedef struct {
    int level;
    size_t seg;
} Head;

/* passage_layout(text), appended to the batch. */
static int layout(Sketcher *s, Batch *bt, PyObject *text) {
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    size_t seg0 = bt->seg_end.n, pass0 = bt->pass_nref.n;
    Head heads[8];
    int nheads = 0;
    int block = 0;   /* a block is open */
    Py_UCS4 fence = 0; /* the open fence's character */
    bt->heading_segs.n = 0;

#define CLOSE()                                                                           \
    do {                                                                                  \
        if (block) {                                                                      \
            if (VEC_PUSH(&bt->seg_end, size_t, bt->piece_entry.n) < 0) return -1;         \
            for (int h_ = 0; h_ < nheads; h_++)                                           \
                if (VEC_PUSH(&bt->ref, size_t, heads[h_].seg) < 0) return -1;             \
            if (VEC_PUSH(&bt->ref, size_t, bt->seg_end.n - 1) < 0) return -1;             \
            if (VEC_PUSH(&bt->pass_nref, size_t, (size_t)nheads + 1) < 0) return -1;      \
            block = 0;                                                                    \
        }                                                                                 \
    } while (0)

    Py_ssize_t pos = 0;
    while (pos < n) {
        /* the next line: str.splitlines (\r\n is one break) */
        Py_ssize_t a = pos, b = pos;
        while (b < n && !is_break(PyUnicode_READ(kind, data, b))) b++;
        pos = b;
        if (pos < n) {
            if (PyUnicode_READ(kind, data, pos) == '\r' && pos + 1 < n && PyUnicode_READ(kind, data, pos + 1) == '\n')
                pos += 2;
            else
                pos += 1;
        }
        Py_ssize_t w = a;
        while (w < b && Py_UNICODE_ISSPACE(PyUnicode_READ(kind, data, w))) w++;
        Py_ssize_t lead = w - a;
        Py_UCS4 fm = 0;
        if (lead <= 3 && b - w >= 3) {
            Py_UCS4 c = PyUnicode_READ(kind, data, w);
            if ((c == '`' || c == '~') && PyUnicode_READ(kind, data, w + 1) == c && PyUnicode_READ(kind, data, w + 2) == c)
                fm = c;
        }
        if (fence) {
            block = 1;
            if (add_pieces(s, bt, text, kind, data, a, b) < 0) return -1;
            if (fm == fence) {
                fence = 0;
                CLOSE();
            }
            continue;
        }
        if (fm) {
            CLOSE();
            fence = fm;
            block = 1;
            if (add_pieces(s, bt, text, kind, data, a, b) < 0) return -1;
            continue;
        }
        if (w == b) {
            CLOSE();
            continue;
        }
        int level = 0, item = 0;
        if (lead <= 3) {
            Py_ssize_t r = w;
            while (r < b && PyUnicode_READ(kind, data, r) == '#') r++;
            if (r - w >= 1 && r - w <= 6 && r < b && Py_UNICODE_ISSPACE(PyUnicode_READ(kind, data, r)))
                level = (int)(r - w);
            if (!level) {
                Py_UCS4 c = PyUnicode_READ(kind, data, w);
                if ((c == '-' || c == '*' || c == '+') && w + 1 < b &&
                    Py_UNICODE_ISSPACE(PyUnicode_READ(kind, data, w + 1)))
                    item = 1;
                else {
                    Py_ssize_t d = w;
                    while (d < b && d - w < 10 && Py_UNICODE_ISDECIMAL(PyUnicode_READ(kind, data, d))) d++;
                    if (d - w >= 1 && d - w <= 9 && d + 1 < b) {
                        Py_UCS4 p = PyUnicode_READ(kind, data, d);
                        if ((p == '.' || p == ')') && Py_UNICODE_ISSPACE(PyUnicode_READ(kind, data, d + 1)))
                            item = 1;
                    }
                }
            }
        }
        if (level) {
            CLOSE();
            while (nheads > 0 && heads[nheads - 1].level >= level) nheads--;
            if (add_pieces(s, bt, text, kind, data, a, b) < 0) return -1;
            if (VEC_PUSH(&bt->seg_end, size_t, bt->piece_entry.n) < 0) return -1;
            heads[nheads].level = level;
            heads[nheads].seg = bt->seg_end.n - 1;
            nheads++;
            if (VEC_PUSH(&bt->heading_segs, size_t, bt->seg_end.n - 1) < 0) return -1;
            continue;
        }
        if (item) CLOSE();
        block = 1;
        if (add_pieces(s, bt, text, kind, data, a, b) < 0) return -1;
    }
    CLOSE();
#undef CLOSE
    if (bt->pass_nref.n == pass0) { /* headings only: each its own passage */
        for (size_t i = 0; i < bt->heading_segs.n; i++) {
            if (VEC_PUSH(&bt->ref, size_t, VEC_AT(&bt->heading_segs, size_t, i)) < 0) return -1;
            if (VEC_PUSH(&bt->pass_nref, size_t, 1) < 0) return -1;
        }
    }
    if (VEC_PUSH(&bt->text_segs, size_t, bt->seg_end.n - seg0) < 0) return -1;
    if (VEC_PUSH(&bt->text_pass, size_t, bt->pass_nref.n - pass0) < 0) return -1;
    return 0;
}

/* Tokenise the batch's new pieces with one call of s->tokenize. */
static int tokenize_new(Sketcher *s, Batch *bt) {
    Py_ssize_t n = PyList_GET_SIZE(bt->new_pieces);
    if (!n) return 0;
    s->busy = 1;
    PyObject *res = PyObject_CallOneArg(s->tokenize, bt->new_pieces);
    s->busy = 0;
    if (!res) return -1;
    PyObject *seq = PySequence_Fast(res, "tokenize must return a sequence");
    Py_DECREF(res);
    if (!seq) return -1;
    if (PySequence_Fast_GET_SIZE(seq) != n) {
        PyErr_SetString(PyExc_ValueError, "tokenize returned a different number of pieces");
        Py_DECREF(seq);
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *ids = PySequence_Fast(PySequence_Fast_GET_ITEM(seq, i), "token ids must be a sequence");
        if (!ids) {
            Py_DECREF(seq);
            return -1;
        }
        Py_ssize_t m = PySequence_Fast_GET_SIZE(ids);
        if (vec_reserve(&s->toks, (size_t)m) < 0) {
            Py_DECREF(ids);
            Py_DECREF(seq);
            return -1;
        }
        Entry *e = &VEC_AT(&s->entries, Entry, VEC_AT(&bt->new_idx, size_t, i));
        size_t off = s->toks.n;
        for (Py_ssize_t j = 0; j < m; j++) {
            long t = PyLong_AsLong(PySequence_Fast_GET_ITEM(ids, j));
            if (t == -1 && PyErr_Occurred()) {
                Py_DECREF(ids);
                Py_DECREF(seq);
                return -1;
            }
            if (t < 0 || t >= s->rows) {
                PyErr_Format(PyExc_IndexError, "token id %ld out of the matrix's %zd rows", t, s->rows);
                Py_DECREF(ids);
                Py_DECREF(seq);
                return -1;
            }
            VEC_AT(&s->toks, uint32_t, off + (size_t)j) = (uint32_t)t;
        }
        s->toks.n += (size_t)m;
        e->tok_off = off;
        e->tok_n = (size_t)m;
        Py_DECREF(ids);
    }
    Py_DECREF(seq);
    return 0;
}

/* acc += each row of these tokens, in order: elementwise, so the same sums at any vector width
 * (16 columns, one cache line, at a time; the next row's line fetched meanwhile). */
#if defined(__GNUC__) && (defined(__clang__) || __GNUC__ >= 9) && !defined(SKETCH_PLAIN)
typedef float v4f __attribute__((vector_size(16)));
typedef double v4d __attribute__((vector_size(32)));
#if defined(__x86_64__) && defined(__linux__) && !defined(__clang__)
__attribute__((target_clones("avx2", "default")))
#endif
static void add_rows(double *restrict acc, const float *restrict M, size_t dim, const uint32_t *tk, size_t k) {
    size_t d16 = dim & ~(size_t)15;
    for (size_t i = 0; i < k; i++) {
        const float *row = M + (size_t)tk[i] * dim;
        const float *next = M + (size_t)tk[i + 2 < k ? i + 2 : k - 1] * dim;
        for (size_t j = 0; j < d16; j += 16) {
            __builtin_prefetch(next + j);
            v4f f0, f1, f2, f3;
            v4d a0, a1, a2, a3;
            memcpy(&f0, row + j, 16);
            memcpy(&f1, row + j + 4, 16);
            memcpy(&f2, row + j + 8, 16);
            memcpy(&f3, row + j + 12, 16);
            memcpy(&a0, acc + j, 32);
            memcpy(&a1, acc + j + 4, 32);
            memcpy(&a2, acc + j + 8, 32);
            memcpy(&a3, acc + j + 12, 32);
            a0 += __builtin_convertvector(f0, v4d);
            a1 += __builtin_convertvector(f1, v4d);
            a2 += __builtin_convertvector(f2, v4d);
            a3 += __builtin_convertvector(f3, v4d);
            memcpy(acc + j, &a0, 32);
            memcpy(acc + j + 4, &a1, 32);
            memcpy(acc + j + 8, &a2, 32);
            memcpy(acc + j + 12, &a3, 32);
        }
        for (size_t j = d16; j < dim; j++) acc[j] += (double)row[j];
    }
}
#else
static void add_rows(double *acc, const float *M, size_t dim, const uint32_t *tk, size_t k) {
    for (size_t i = 0; i < k; i++) {
        const float *row = M + (size_t)tk[i] * dim;
        for (size_t j = 0; j < dim; j++) acc[j] += (double)row[j];
    }
}
#endif

static PyObject *bytes_of(Vec *v) {
    return PyBytes_FromStringAndSize(v->d ? v->d : "", (Py_ssize_t)(v->n * v->item));
}

/* Sketcher.batch(texts) -> (tokens u4, seg_len u4, refs u4, nref u1, norms f4, counts i8[n, 4]):
 * the batch's known segments' tokens, their token counts, the kept passages' references (into
 * their text's known segments), reference counts and norms, and per text the number of tokens,
 * known segments, kept references and kept passages. None while another call is tokenising. */
static PyObject *Sketcher_batch(Sketcher *s, PyObject *arg) {
    if (!s->tokenize) {
        PyErr_SetString(PyExc_RuntimeError, "Sketcher not initialised");
        return NULL;
    }
    if (s->busy) Py_RETURN_NONE;
    PyObject *texts = PySequence_Fast(arg, "texts must be a sequence");
    if (!texts) return NULL;
    Py_ssize_t nt = PySequence_Fast_GET_SIZE(texts);
    PyObject *out = NULL;
    Batch bt;
    memset(&bt, 0, sizeof bt);
    bt.piece_entry.item = bt.seg_end.item = bt.ref.item = bt.pass_nref.item = sizeof(size_t);
    bt.text_segs.item = bt.text_pass.item = bt.heading_segs.item = bt.new_idx.item = sizeof(size_t);
    Vec o_tok = {0, 0, 0, sizeof(uint32_t)}, o_seg = {0, 0, 0, sizeof(uint32_t)};
    Vec o_ref = {0, 0, 0, sizeof(uint32_t)}, o_nref = {0, 0, 0, 1}, o_norm = {0, 0, 0, sizeof(float)};
    Vec o_cnt = {0, 0, 0, sizeof(int64_t)}, seg_tok = {0, 0, 0, sizeof(size_t)};
    Vec local = {0, 0, 0, sizeof(size_t)};
    double *acc = NULL;
    if (s->entries.n > CACHE_ENTRIES_MAX || s->toks.n > CACHE_TOKENS_MAX || s->keys.n > CACHE_CHARS_MAX)
        cache_clear(s);
    bt.new_pieces = PyList_New(0);
    if (!bt.new_pieces) goto done;
    for (Py_ssize_t t = 0; t < nt; t++) {
        PyObject *text = PySequence_Fast_GET_ITEM(texts, t);
        if (!PyUnicode_Check(text)) {
            PyErr_Format(PyExc_TypeError, "texts must be str, not %.100s", Py_TYPE(text)->tp_name);
            goto fail;
        }
        if (layout(s, &bt, text) < 0) goto fail;
    }
    if (tokenize_new(s, &bt) < 0) goto fail;
    /* tokens per segment; the known segments' tokens */
    if (vec_reserve(&seg_tok, bt.seg_end.n) < 0 || vec_reserve(&local, bt.seg_end.n) < 0) goto fail;
    size_t p0 = 0;
    for (size_t g = 0; g < bt.seg_end.n; g++) {
        size_t p1 = VEC_AT(&bt.seg_end, size_t, g), nt_ = 0;
        for (size_t p = p0; p < p1; p++) {
            Entry *e = &VEC_AT(&s->entries, Entry, VEC_AT(&bt.piece_entry, size_t, p));
            if (vec_reserve(&o_tok, e->tok_n) < 0) goto fail;
            memcpy(&VEC_AT(&o_tok, uint32_t, o_tok.n), &VEC_AT(&s->toks, uint32_t, e->tok_off),
                   e->tok_n * sizeof(uint32_t));
            o_tok.n += e->tok_n;
            nt_ += e->tok_n;
        }
        VEC_AT(&seg_tok, size_t, g) = nt_;
        p0 = p1;
    }
    /* segment starts in o_tok */
    Vec seg_start = {0, 0, 0, sizeof(size_t)};
    if (vec_reserve(&seg_start, bt.seg_end.n) < 0) goto fail;
    {
        size_t at = 0;
        for (size_t g = 0; g < bt.seg_end.n; g++) {
            VEC_AT(&seg_start, size_t, g) = at;
            at += VEC_AT(&seg_tok, size_t, g);
        }
    }
    acc = PyMem_Malloc((size_t)s->dim * sizeof(double) + 1);
    if (!acc) {
        PyErr_NoMemory();
        vec_free(&seg_start);
        goto fail;
    }
    const float *M = (const float *)s->matrix.buf;
    Py_ssize_t dim = s->dim;
    size_t g0 = 0, q0 = 0, r0 = 0, tok0 = 0;
    for (Py_ssize_t t = 0; t < nt; t++) {
        size_t g1 = g0 + VEC_AT(&bt.text_segs, size_t, t);
        size_t q1 = q0 + VEC_AT(&bt.text_pass, size_t, t);
        size_t known = 0, tok1 = tok0, refs_kept = 0, pass_kept = 0;
        for (size_t g = g0; g < g1; g++) {
            size_t k = VEC_AT(&seg_tok, size_t, g);
            VEC_AT(&local, size_t, g) = known;
            if (k) {
                if (k > 0xFFFFFFFFu) k = 0xFFFFFFFFu; /* cut by _fits later */
                if (VEC_PUSH(&o_seg, uint32_t, (uint32_t)k) < 0) goto fail2;
                known++;
                tok1 += VEC_AT(&seg_tok, size_t, g);
            }
        }
        for (size_t q = q0; q < q1; q++) {
            size_t nr = VEC_AT(&bt.pass_nref, size_t, q), kn = 0;
            for (Py_ssize_t j = 0; j < dim; j++) acc[j] = 0.0;
            for (size_t r = r0; r < r0 + nr; r++) {
                size_t g = VEC_AT(&bt.ref, size_t, r);
                size_t k = VEC_AT(&seg_tok, size_t, g);
                if (!k) continue;
                kn++;
                const uint32_t *tk = &VEC_AT(&o_tok, uint32_t, VEC_AT(&seg_start, size_t, g));
                add_rows(acc, M, (size_t)dim, tk, k);
            }
            double sq = 0.0;
            for (Py_ssize_t j = 0; j < dim; j++) {
                double x = (double)(float)acc[j];
                sq += x * x; /* exact product: the order of the sum is all that matters */
            }
            float norm = (float)sqrt(sq);
            if (kn > 0 && norm > 0) {
                for (size_t r = r0; r < r0 + nr; r++) {
                    size_t g = VEC_AT(&bt.ref, size_t, r);
                    if (!VEC_AT(&seg_tok, size_t, g)) continue;
                    if (VEC_PUSH(&o_ref, uint32_t, (uint32_t)VEC_AT(&local, size_t, g)) < 0) goto fail2;
                }
                if (VEC_PUSH(&o_nref, uint8_t, (uint8_t)kn) < 0 || VEC_PUSH(&o_norm, float, norm) < 0)
                    goto fail2;
                refs_kept += kn;
                pass_kept++;
            }
            r0 += nr;
        }
        int64_t c[4] = {(int64_t)(tok1 - tok0), (int64_t)known, (int64_t)refs_kept, (int64_t)pass_kept};
        for (int i = 0; i < 4; i++)
            if (VEC_PUSH(&o_cnt, int64_t, c[i]) < 0) goto fail2;
        g0 = g1;
        q0 = q1;
        tok0 = tok1;
    }
    vec_free(&seg_start);
    out = Py_BuildValue("(NNNNNN)", bytes_of(&o_tok), bytes_of(&o_seg), bytes_of(&o_ref), bytes_of(&o_nref),
                        bytes_of(&o_norm), bytes_of(&o_cnt));
    goto done;
fail2:
    vec_free(&seg_start);
fail:
    /* pieces added but not tokenised must not stay in the cache */
    cache_clear(s);
done:
    PyMem_Free(acc);
    vec_free(&o_tok);
    vec_free(&o_seg);
    vec_free(&o_ref);
    vec_free(&o_nref);
    vec_free(&o_norm);
    vec_free(&o_cnt);
    vec_free(&seg_tok);
    vec_free(&local);
    batch_free(&bt);
    Py_DECREF(texts);
    return out;
}

static PyObject *Sketcher_clear(Sketcher *s, PyObject *Py_UNUSED(arg)) {
    if (!s->busy) cache_clear(s);
    Py_RETURN_NONE;
}

static PyObject *Sketcher_size(Sketcher *s, PyObject *Py_UNUSED(arg)) {
    return Py_BuildValue("(nnn)", (Py_ssize_t)s->entries.n, (Py_ssize_t)s->toks.n, (Py_ssize_t)s->keys.n);
}

static int Sketcher_init(Sketcher *s, PyObject *args, PyObject *kw) {
    PyObject *matrix, *tokenize, *vocab = Py_None;
    long unk = -1, drop = -1;
    Py_ssize_t max_chars = 100, max_tokens = 0;
    static char *names[] = {"matrix", "tokenize", "vocab", "unk", "drop", "max_chars", "max_tokens", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|$Ollnn:Sketcher", names, &matrix, &tokenize, &vocab, &unk,
                                     &drop, &max_chars, &max_tokens))
        return -1;
    if (vocab != Py_None && (!PyDict_Check(vocab) || unk < 0 || max_chars < 0 || max_chars > 120 || max_tokens < 0)) {
        PyErr_SetString(PyExc_ValueError, "vocab needs a dict, unk >= 0, 0 <= max_chars <= 120, max_tokens >= 0");
        return -1;
    }
    if (!PyCallable_Check(tokenize)) {
        PyErr_SetString(PyExc_TypeError, "tokenize must be callable");
        return -1;
    }
    if (s->has_matrix) {
        PyErr_SetString(PyExc_RuntimeError, "Sketcher already initialised");
        return -1;
    }
    if (PyObject_GetBuffer(matrix, &s->matrix, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) return -1;
    s->has_matrix = 1;
    if (s->matrix.ndim != 2 || s->matrix.itemsize != 4 || !s->matrix.format || strcmp(s->matrix.format, "f") != 0) {
        PyErr_SetString(PyExc_ValueError, "matrix must be a C-contiguous 2-d float32 array");
        return -1;
    }
    s->rows = s->matrix.shape[0];
    s->dim = s->matrix.shape[1];
    Py_INCREF(tokenize);
    s->tokenize = tokenize;
    s->entries.item = sizeof(Entry);
    s->keys.item = sizeof(Py_UCS4);
    s->toks.item = sizeof(uint32_t);
    s->vkeys.item = 1;
    s->ventries.item = sizeof(VEntry);
    if (vocab != Py_None) {
        if (unk >= s->rows || drop >= s->rows) {
            PyErr_SetString(PyExc_ValueError, "unk / drop outside the matrix");
            return -1;
        }
        s->unk = unk;
        s->drop = drop;
        s->max_chars = max_chars;
        s->max_tokens = max_tokens;
        if (vocab_build(s, vocab) < 0) return -1;
        for (size_t e = 0; e < s->ventries.n; e++)
            if (VEC_AT(&s->ventries, VEntry, e).id < 0 || VEC_AT(&s->ventries, VEntry, e).id >= s->rows) {
                PyErr_SetString(PyExc_ValueError, "a vocabulary id outside the matrix");
                return -1;
            }
        s->has_vocab = 1;
    }
    return 0;
}

static void Sketcher_dealloc(Sketcher *s) {
    if (s->has_matrix) PyBuffer_Release(&s->matrix);
    Py_XDECREF(s->tokenize);
    vec_free(&s->entries);
    vec_free(&s->keys);
    vec_free(&s->toks);
    vec_free(&s->vkeys);
    vec_free(&s->ventries);
    PyMem_Free(s->vslots);
    PyMem_Free(s->slots);
    Py_TYPE(s)->tp_free((PyObject *)s);
}

static PyMethodDef Sketcher_methods[] = {
    {"batch", (PyCFunction)Sketcher_batch, METH_O, "The flat sketches of a batch of texts."},
    {"clear", (PyCFunction)Sketcher_clear, METH_NOARGS, "Forget the cached pieces."},
    {"size", (PyCFunction)Sketcher_size, METH_NOARGS, "(cached pieces, their token ids, their characters)."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject SketcherType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "goclaw_search._sketch.Sketcher",
    .tp_basicsize = sizeof(Sketcher),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Sketcher_init,
    .tp_dealloc = (destructor)Sketcher_dealloc,
    .tp_methods = Sketcher_methods,
    .tp_doc = "Passage sketches of texts (see the module's source).",
};

static struct PyModuleDef sketch_module = {
    PyModuleDef_HEAD_INIT, "_sketch", "goclaw's passage-sketch accelerator.", -1, NULL, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__sketch(void) {
    if (PyType_Ready(&SketcherType) < 0) return NULL;
    PyObject *m = PyModule_Create(&sketch_module);
    if (!m) return NULL;
    Py_INCREF(&SketcherType);
    if (PyModule_AddObject(m, "Sketcher", (PyObject *)&SketcherType) < 0 ||
        PyModule_AddIntConstant(m, "ABI", SKETCH_ABI) < 0) {
        Py_DECREF(&SketcherType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
