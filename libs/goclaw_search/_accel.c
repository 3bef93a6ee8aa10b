/* Optional accelerator for goclaw's retrieval engine (issue 11, indexing speed), in C with the
   CPython API. Built by hatch_build.py when a C compiler and the Python headers are there;
   without it libs/goclaw_search/tokenize.py and index.py (with its index_*.py parts) run their
   pure-Python equivalents, which give identical results (tests/test_retrieval_accel.py compares
   both on random text).

   TermTable: the tokenizer's term numbering and its ASCII fast path. Every term the table has
   seen has a *global term id* (gid): ``terms[gid]`` is its string, ``ids[term]`` its gid. An
   ASCII text is lower-cased and split into pieces here (the rules of tokenize.py's
   ``_ascii_piece``), each piece looked up in a C hash map of piece -> gids, so indexing a text
   makes no Python object per piece or per term: a batch of texts comes back as one int32
   array of gids, one int64 array of counts and one ``lex`` string per text (its terms joined
   by spaces, the stored form). What a piece's terms are stays in Python: an unseen plain word
   is handed to ``word(str) -> str | None`` (stopwords, stemming), a piece outside the code rule
   to ``piece(str) -> tuple[str, ...]``, a non-ASCII text to ``text(str) -> list[str]``. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#define ABI 3
#define MAX_TERM_CHARS 200 /* tokenize.MAX_TERM_CHARS */
#define MAX_KEY 256        /* longer pieces are not cached (blobs: computed each time) */

static unsigned char LOWER[256]; /* ASCII letter/digit -> lower case, connector -> itself, else ' ' */

static int
is_connector(unsigned char c)
{
    return c == '-' || c == '_' || c == '.' || c == '/' || c == ':' || c == '@' || c == '#' || c == '+';
}

/* ------------------------------------------------------------------ a bytes -> int32 span map */
#define INLINE_KEY 16 /* keys and values this short live in the entry: one cache line a look-up */
#define INLINE_VALS 4

typedef struct {
    uint64_t hash; /* 0: empty slot */
    uint32_t key_len;
    uint32_t n; /* values */
    union {
        unsigned char b[INLINE_KEY];
        size_t off; /* in keys */
    } key;
    union {
        int32_t v[INLINE_VALS];
        size_t off; /* in vals */
    } val;
} Entry;

typedef struct {
    Entry *slots;
    size_t cap, used;
    char *keys;
    size_t keys_len, keys_cap;
    int32_t *vals;
    size_t vals_len, vals_cap;
} Map;

#define KEY_OF(m, e) ((e)->key_len <= INLINE_KEY ? (const char *)(e)->key.b : (m)->keys + (e)->key.off)
#define VALS_OF(m, e) ((e)->n <= INLINE_VALS ? (e)->val.v : (m)->vals + (e)->val.off)

static uint64_t
hash_bytes(const unsigned char *s, size_t n)
{
    uint64_t h = 0x9E3779B97F4A7C15ULL ^ (uint64_t)n, w;
    while (n >= 8) {
        memcpy(&w, s, 8);
        h = (h ^ w) * 0xff51afd7ed558ccdULL;
        h ^= h >> 32;
        s += 8;
        n -= 8;
    }
    w = 0;
    for (size_t i = 0; i < n; i++) /* not memcpy: a library call for a variable length */
        w |= (uint64_t)s[i] << (8 * i);
    h = (h ^ w) * 0xc4ceb9fe1a85ec53ULL;
    h ^= h >> 29;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 32;
    return h ? h : 1;
}

static void
map_free(Map *m)
{
    PyMem_Free(m->slots);
    PyMem_Free(m->keys);
    PyMem_Free(m->vals);
    memset(m, 0, sizeof(*m));
}

static Entry *
map_find(Map *m, const unsigned char *key, size_t n, uint64_t h)
{
    if (!m->cap)
        return NULL;
    size_t mask = m->cap - 1;
    for (size_t i = (size_t)h & mask;; i = (i + 1) & mask) {
        Entry *e = &m->slots[i];
        if (!e->hash)
            return NULL;
        if (e->hash == h && e->key_len == n && memcmp(KEY_OF(m, e), key, n) == 0)
            return e;
    }
}

static int
grow(void **buf, size_t *cap, size_t need, size_t item)
{
    if (need <= *cap)
        return 0;
    size_t ncap = *cap ? *cap : 1024;
    while (ncap < need)
        ncap *= 2;
    void *nbuf = PyMem_Realloc(*buf, ncap * item);
    if (nbuf == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    *buf = nbuf;
    *cap = ncap;
    return 0;
}

static int
map_rehash(Map *m, size_t ncap)
{
    Entry *slots = PyMem_Calloc(ncap, sizeof(Entry));
    if (slots == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (size_t i = 0; i < m->cap; i++) {
        Entry *e = &m->slots[i];
        if (!e->hash)
            continue;
        size_t j = (size_t)e->hash & (ncap - 1);
        while (slots[j].hash)
            j = (j + 1) & (ncap - 1);
        slots[j] = *e;
    }
    PyMem_Free(m->slots);
    m->slots = slots;
    m->cap = ncap;
    return 0;
}

static int
map_put(Map *m, const unsigned char *key, size_t n, uint64_t h, const int32_t *vals, size_t k)
{
    if ((m->used + 1) * 2 > m->cap && map_rehash(m, m->cap ? m->cap * 2 : 4096) < 0)
        return -1;
    if ((n > INLINE_KEY && grow((void **)&m->keys, &m->keys_cap, m->keys_len + n, 1) < 0) ||
        (k > INLINE_VALS && grow((void **)&m->vals, &m->vals_cap, m->vals_len + k, sizeof(int32_t)) < 0))
        return -1;
    size_t mask = m->cap - 1, i = (size_t)h & mask;
    while (m->slots[i].hash)
        i = (i + 1) & mask;
    Entry *e = &m->slots[i];
    e->hash = h;
    e->key_len = (uint32_t)n;
    e->n = (uint32_t)k;
    if (n <= INLINE_KEY)
        memcpy(e->key.b, key, n);
    else {
        e->key.off = m->keys_len;
        memcpy(m->keys + m->keys_len, key, n);
        m->keys_len += n;
    }
    if (k <= INLINE_VALS) {
        if (k)
            memcpy(e->val.v, vals, k * sizeof(int32_t));
    }
    else {
        e->val.off = m->vals_len;
        memcpy(m->vals + m->vals_len, vals, k * sizeof(int32_t));
        m->vals_len += k;
    }
    m->used++;
    return 0;
}

/* ------------------------------------------------------------------ growable int32 buffer */
typedef struct {
    int32_t *v;
    size_t n, cap;
} Ids;

static int
ids_push(Ids *b, int32_t x)
{
    if (b->n == b->cap && grow((void **)&b->v, &b->cap, b->n + 1, sizeof(int32_t)) < 0)
        return -1;
    b->v[b->n++] = x;
    return 0;
}

/* ------------------------------------------------------------------ the table */
typedef struct {
    size_t off;   /* in tb */
    uint32_t len; /* bytes */
    uint32_t kind; /* 0 ASCII, 1 other UTF-8, 2 none (not encodable) */
} TermInfo;

typedef struct {
    PyObject_HEAD
    PyObject *terms; /* list: gid -> str */
    PyObject *ids;   /* dict: str -> gid */
    PyObject *word, *piece, *text; /* the Python rules */
    Py_ssize_t limit;              /* pieces / words cached at most */
    int plain_digits;              /* a word of ASCII digits is its own term */
    Map pieces, words;
    /* each gid's term as UTF-8, side by side (lex strings are copied from here) */
    char *tb;
    size_t tb_len, tb_cap;
    TermInfo *info; /* gid -> where its UTF-8 is */
    size_t tn, tcap;
    /* Held by whoever reads or changes the C maps and term buffers (batch, terms_of), so that
       batch's first pass can run with the GIL released (see table_batch). */
    PyThread_type_lock lock;
    unsigned long owner; /* the thread holding it (0: none): a callback re-entering is refused */
} TermTable;

/* Take the table's lock: at once when it is free, else waiting with the GIL released (the
   holder may need the GIL to finish). -1 with RuntimeError when this thread holds it already
   (a Python rule calling back into its own table). */
static int
table_lock(TermTable *t)
{
    unsigned long me = PyThread_get_thread_ident();
    if (t->owner == me) {
        PyErr_SetString(PyExc_RuntimeError, "TermTable: used from inside one of its own rules");
        return -1;
    }
    if (!PyThread_acquire_lock(t->lock, NOWAIT_LOCK)) {
        Py_BEGIN_ALLOW_THREADS
        PyThread_acquire_lock(t->lock, WAIT_LOCK);
        Py_END_ALLOW_THREADS
    }
    t->owner = me;
    return 0;
}

static void
table_unlock(TermTable *t)
{
    t->owner = 0;
    PyThread_release_lock(t->lock);
}

/* The gid of a term (a str), numbering it when new. -1 on error. */
static int32_t
gid_of(TermTable *t, PyObject *term)
{
    if (!PyUnicode_Check(term)) {
        PyErr_SetString(PyExc_TypeError, "TermTable: a term must be a str");
        return -1;
    }
    PyObject *num = PyDict_GetItemWithError(t->ids, term);
    if (num != NULL)
        return (int32_t)PyLong_AsLong(num);
    if (PyErr_Occurred())
        return -1;
    Py_ssize_t g = PyList_GET_SIZE(t->terms);
    if (g >= INT32_MAX) {
        PyErr_SetString(PyExc_OverflowError, "TermTable: too many terms");
        return -1;
    }
    if ((size_t)g != t->tn) {
        PyErr_SetString(PyExc_RuntimeError, "TermTable: its terms list was changed");
        return -1;
    }
    Py_ssize_t m = 0;
    unsigned char kind = PyUnicode_IS_ASCII(term) ? 0 : 1;
    const char *utf8 = PyUnicode_AsUTF8AndSize(term, &m);
    if (utf8 == NULL) { /* a lone surrogate: joined with PyUnicode_Join instead */
        PyErr_Clear();
        kind = 2;
        m = 0;
    }
    if (grow((void **)&t->tb, &t->tb_cap, t->tb_len + (size_t)m, 1) < 0)
        return -1;
    if (t->tn == t->tcap && grow((void **)&t->info, &t->tcap, t->tn + 1, sizeof(TermInfo)) < 0)
        return -1;
    num = PyLong_FromSsize_t(g);
    if (num == NULL)
        return -1;
    int rc = PyDict_SetItem(t->ids, term, num);
    Py_DECREF(num);
    if (rc < 0)
        return -1;
    if (PyList_Append(t->terms, term) < 0) {
        PyDict_DelItem(t->ids, term);
        return -1;
    }
    if (m)
        memcpy(t->tb + t->tb_len, utf8, (size_t)m);
    t->info[t->tn].off = t->tb_len;
    t->info[t->tn].len = (uint32_t)m;
    t->info[t->tn].kind = kind;
    t->tb_len += (size_t)m;
    t->tn++;
    return (int32_t)g;
}

/* Append the gids of a Python sequence of terms. */
static int
push_terms(TermTable *t, PyObject *seq, Ids *out)
{
    PyObject *fast = PySequence_Fast(seq, "TermTable: terms must be a sequence");
    if (fast == NULL)
        return -1;
    Py_ssize_t k = PySequence_Fast_GET_SIZE(fast);
    PyObject **items = PySequence_Fast_ITEMS(fast);
    for (Py_ssize_t j = 0; j < k; j++) {
        int32_t g = gid_of(t, items[j]);
        if (g < 0 || ids_push(out, g) < 0) {
            Py_DECREF(fast);
            return -1;
        }
    }
    Py_DECREF(fast);
    return 0;
}

/* The gid of a plain word (lower-case ASCII letters/digits), -2 for none (a stopword). */
static int32_t
word_gid(TermTable *t, const unsigned char *w, size_t n)
{
    uint64_t h = hash_bytes(w, n);
    Entry *e = map_find(&t->words, w, n, h);
    if (e != NULL)
        return e->n ? VALS_OF(&t->words, e)[0] : -2;
    PyObject *s = PyUnicode_FromStringAndSize((const char *)w, (Py_ssize_t)n);
    if (s == NULL)
        return -1;
    int digits = t->plain_digits;
    for (size_t i = 0; digits && i < n; i++)
        digits = w[i] >= '0' && w[i] <= '9';
    PyObject *term;
    if (digits) /* a number is its own term (no stopword is one): no call */
        term = s;
    else {
        term = PyObject_CallOneArg(t->word, s);
        Py_DECREF(s);
        if (term == NULL)
            return -1;
    }
    int32_t g = -2;
    if (term != Py_None)
        g = gid_of(t, term);
    Py_DECREF(term);
    if (g == -1)
        return -1;
    if ((Py_ssize_t)t->words.used < t->limit && map_put(&t->words, w, n, h, &g, g >= 0 ? 1 : 0) < 0)
        return -1;
    return g;
}

/* Append the gids of one ASCII piece (lower-cased: letters, digits and connectors). */
static int
piece_gids(TermTable *t, const unsigned char *p, size_t n, Ids *out)
{
    uint64_t h = hash_bytes(p, n);
    Entry *e = map_find(&t->pieces, p, n, h);
    if (e != NULL) {
        if (!e->n)
            return 0;
        if (out->n + e->n > out->cap && grow((void **)&out->v, &out->cap, out->n + e->n, sizeof(int32_t)) < 0)
            return -1;
        memcpy(out->v + out->n, VALS_OF(&t->pieces, e), e->n * sizeof(int32_t));
        out->n += e->n;
        return 0;
    }
    size_t start = out->n;
    size_t a = 0, b = n;
    while (a < b && is_connector(p[a]))
        a++;
    while (b > a && is_connector(p[b - 1]))
        b--;
    size_t len = b - a, connectors = 0;
    int doubled = 0;
    for (size_t i = a; i < b; i++) {
        if (is_connector(p[i])) {
            connectors++;
            if (is_connector(p[i - 1]))
                doubled = 1;
        }
    }
    if (len > 0 && len <= MAX_TERM_CHARS && connectors == 0) { /* one plain word */
        int32_t g = word_gid(t, p + a, len);
        if (g == -1 || (g >= 0 && ids_push(out, g) < 0))
            return -1;
    }
    else if (len > 0 && len <= MAX_TERM_CHARS && !doubled) { /* a code: whole, then its parts */
        PyObject *s = PyUnicode_FromStringAndSize((const char *)p + a, (Py_ssize_t)len);
        if (s == NULL)
            return -1;
        int32_t g = gid_of(t, s);
        Py_DECREF(s);
        if (g < 0 || ids_push(out, g) < 0)
            return -1;
        size_t i = a;
        while (i < b) {
            size_t j = i;
            while (j < b && !is_connector(p[j]))
                j++;
            int32_t w = word_gid(t, p + i, j - i);
            if (w == -1 || (w >= 0 && ids_push(out, w) < 0))
                return -1;
            i = j + 1;
        }
    }
    else { /* "a--b", nothing but connectors, a blob: the general rules */
        PyObject *s = PyUnicode_FromStringAndSize((const char *)p, (Py_ssize_t)n);
        if (s == NULL)
            return -1;
        PyObject *terms = PyObject_CallOneArg(t->piece, s);
        Py_DECREF(s);
        if (terms == NULL)
            return -1;
        int rc = push_terms(t, terms, out);
        Py_DECREF(terms);
        if (rc < 0)
            return -1;
    }
    if (n <= MAX_KEY && (Py_ssize_t)t->pieces.used < t->limit &&
        map_put(&t->pieces, p, n, h, out->v + start, out->n - start) < 0)
        return -1;
    return 0;
}

/* The pieces of an ASCII text one after another, each lower-cased into `buf` (grown for a long
   piece with PyMem_Raw*: usable with the GIL released). Kept where it was made: `buf` may
   point into `small`. */
typedef struct {
    const unsigned char *s;
    Py_ssize_t n, i;
    unsigned char *buf;
    size_t cap;
    unsigned char small[MAX_KEY];
} Pieces;

static void
pieces_init(Pieces *p, PyObject *text)
{
    p->s = PyUnicode_1BYTE_DATA(text);
    p->n = PyUnicode_GET_LENGTH(text);
    p->i = 0;
    p->buf = p->small;
    p->cap = sizeof(p->small);
}

/* The next piece's length (its bytes in p->buf), 0 at the end, -1 out of memory (no
   exception set: the caller may not hold the GIL). */
static Py_ssize_t
pieces_next(Pieces *p)
{
    const unsigned char *s = p->s;
    Py_ssize_t n = p->n, i = p->i;
    while (i < n && LOWER[s[i]] == ' ')
        i++;
    size_t len = 0;
    while (i < n && LOWER[s[i]] != ' ') {
        if (len == p->cap) {
            unsigned char *nbuf = PyMem_RawMalloc(p->cap * 2);
            if (nbuf == NULL)
                return -1;
            memcpy(nbuf, p->buf, len);
            if (p->buf != p->small)
                PyMem_RawFree(p->buf);
            p->buf = nbuf;
            p->cap *= 2;
        }
        p->buf[len++] = LOWER[s[i++]];
    }
    p->i = i;
    return (Py_ssize_t)len;
}

static void
pieces_free(Pieces *p)
{
    if (p->buf != p->small)
        PyMem_RawFree(p->buf);
}

/* Append the gids of an ASCII text. */
static int
ascii_gids(TermTable *t, PyObject *text, Ids *out)
{
    Pieces ps;
    pieces_init(&ps, text);
    Py_ssize_t len;
    int rc = 0;
    while ((len = pieces_next(&ps)) > 0) {
        if (piece_gids(t, ps.buf, (size_t)len, out) < 0) {
            rc = -1;
            break;
        }
    }
    if (len < 0) {
        PyErr_NoMemory();
        rc = -1;
    }
    pieces_free(&ps);
    return rc;
}

/* Append the gids of a segment of text holding a non-ASCII character: the Python rules
   (``text``), cached by the segment's UTF-8 (never equal to an ASCII piece's key). */
static int
segment_gids(TermTable *t, PyObject *seg, Ids *out)
{
    Py_ssize_t n = 0;
    const char *key = PyUnicode_AsUTF8AndSize(seg, &n);
    uint64_t h = 0;
    if (key == NULL)
        PyErr_Clear(); /* a lone surrogate: not cached */
    else {
        h = hash_bytes((const unsigned char *)key, (size_t)n);
        Entry *e = map_find(&t->pieces, (const unsigned char *)key, (size_t)n, h);
        if (e != NULL) {
            if (!e->n)
                return 0;
            if (out->n + e->n > out->cap &&
                grow((void **)&out->v, &out->cap, out->n + e->n, sizeof(int32_t)) < 0)
                return -1;
            memcpy(out->v + out->n, VALS_OF(&t->pieces, e), e->n * sizeof(int32_t));
            out->n += e->n;
            return 0;
        }
    }
    size_t start = out->n;
    PyObject *terms = PyObject_CallOneArg(t->text, seg);
    if (terms == NULL)
        return -1;
    int rc = push_terms(t, terms, out);
    Py_DECREF(terms);
    if (rc < 0)
        return -1;
    if (key != NULL && n <= 4 * MAX_KEY && (Py_ssize_t)t->pieces.used < t->limit &&
        map_put(&t->pieces, (const unsigned char *)key, (size_t)n, h, out->v + start, out->n - start) < 0)
        return -1;
    return 0;
}

/* Append the gids of a text holding non-ASCII characters. The text is cut at each ASCII
   separator followed by an ASCII character (or the end): no term crosses one, and text
   normalisation (NFKC, case folding, accents) never joins characters across one, so each
   segment's terms are its part of the whole text's. An all-ASCII segment is one ASCII piece;
   one holding a non-ASCII character goes to the Python rules. */
static int
mixed_gids(TermTable *t, PyObject *text, Ids *out)
{
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    unsigned char small[MAX_KEY];
    unsigned char *buf = small;
    size_t cap = sizeof(small);
    Py_ssize_t i = 0;
    int rc = 0;
#define CUT(j)                                                                                    \
    (PyUnicode_READ(kind, data, j) < 128 && LOWER[PyUnicode_READ(kind, data, j)] == ' ' &&        \
     ((j) + 1 == n || PyUnicode_READ(kind, data, (j) + 1) < 128))
    while (i < n) {
        if (CUT(i)) {
            i++;
            continue;
        }
        Py_ssize_t start = i;
        int other = 0;
        while (i < n && !CUT(i)) {
            if (PyUnicode_READ(kind, data, i) >= 128)
                other = 1;
            i++;
        }
        if (other) {
            PyObject *seg = PyUnicode_Substring(text, start, i);
            if (seg == NULL) {
                rc = -1;
                break;
            }
            rc = segment_gids(t, seg, out);
            Py_DECREF(seg);
            if (rc < 0)
                break;
            continue;
        }
        size_t len = (size_t)(i - start);
        if (len > cap) {
            unsigned char *nbuf = PyMem_Malloc(len);
            if (nbuf == NULL) {
                PyErr_NoMemory();
                rc = -1;
                break;
            }
            if (buf != small)
                PyMem_Free(buf);
            buf = nbuf;
            cap = len;
        }
        for (size_t j = 0; j < len; j++)
            buf[j] = LOWER[PyUnicode_READ(kind, data, start + (Py_ssize_t)j)];
        rc = piece_gids(t, buf, len, out);
        if (rc < 0)
            break;
    }
#undef CUT
    if (buf != small)
        PyMem_Free(buf);
    return rc;
}

/* Append the gids of any text: ASCII here, other text through the Python rules. */
static int
text_gids(TermTable *t, PyObject *text, Ids *out)
{
    if (!PyUnicode_Check(text)) {
        PyErr_SetString(PyExc_TypeError, "TermTable: a text must be a str");
        return -1;
    }
    if (PyUnicode_IS_ASCII(text))
        return ascii_gids(t, text, out);
    return mixed_gids(t, text, out);
}

/* The terms of gids[0..k) joined by single spaces (the stored ``lex``). */
static PyObject *
joined(TermTable *t, const int32_t *g, size_t k)
{
    size_t total = k ? k - 1 : 0;
    unsigned char kind = 0;
    for (size_t j = 0; j < k; j++) {
        if (g[j] < 0 || (size_t)g[j] >= t->tn) {
            PyErr_SetString(PyExc_RuntimeError, "TermTable: a term id out of range");
            return NULL;
        }
        const TermInfo *ti = &t->info[g[j]];
        total += ti->len;
        if (ti->kind > kind)
            kind = (unsigned char)ti->kind;
    }
    if (kind == 2) { /* a term with no UTF-8 form */
        PyObject *list = PyList_New((Py_ssize_t)k);
        if (list == NULL)
            return NULL;
        for (size_t j = 0; j < k; j++) {
            if ((size_t)g[j] >= (size_t)PyList_GET_SIZE(t->terms)) {
                Py_DECREF(list);
                PyErr_SetString(PyExc_RuntimeError, "TermTable: its terms list was changed");
                return NULL;
            }
            PyObject *s = PyList_GET_ITEM(t->terms, g[j]);
            Py_INCREF(s);
            PyList_SET_ITEM(list, (Py_ssize_t)j, s);
        }
        PyObject *sep = PyUnicode_FromString(" ");
        PyObject *res = sep == NULL ? NULL : PyUnicode_Join(sep, list);
        Py_XDECREF(sep);
        Py_DECREF(list);
        return res;
    }
    char *d, *tmp = NULL;
    PyObject *res = NULL;
    if (kind == 0) {
        res = PyUnicode_New((Py_ssize_t)total, 127);
        if (res == NULL)
            return NULL;
        d = (char *)PyUnicode_1BYTE_DATA(res);
    }
    else {
        tmp = PyMem_Malloc(total ? total : 1);
        if (tmp == NULL)
            return PyErr_NoMemory();
        d = tmp;
    }
    for (size_t j = 0; j < k; j++) {
        const TermInfo *ti = &t->info[g[j]];
        if (j)
            *d++ = ' ';
        memcpy(d, t->tb + ti->off, ti->len);
        d += ti->len;
    }
    if (tmp != NULL) {
        res = PyUnicode_DecodeUTF8(tmp, (Py_ssize_t)total, "strict");
        PyMem_Free(tmp);
    }
    return res;
}

/* A raw buffer (PyMem_Raw*: usable without the GIL) of `item`-sized things: 0, or -1 when out
   of memory (no exception: the caller sets it once it holds the GIL again). */
static int
raw_grow(void **buf, size_t *cap, size_t need, size_t item)
{
    if (need <= *cap)
        return 0;
    size_t ncap = *cap ? *cap : 4096;
    while (ncap < need)
        ncap *= 2;
    void *nbuf = PyMem_RawRealloc(*buf, ncap * item);
    if (nbuf == NULL)
        return -1;
    *buf = nbuf;
    *cap = ncap;
    return 0;
}

/* What batch's first pass could not do without Python: a piece new to the piece cache (its
   bytes in the pass's `pend` buffer) or a text holding a non-ASCII character (len SIZE_MAX).
   Its gids go at `at` of the pass's output. */
typedef struct {
    size_t at;
    Py_ssize_t text;
    size_t off, len;
} Hole;

typedef struct {
    int32_t *gids; /* the first pass's gids */
    size_t n, cap;
    Hole *holes;
    size_t nh, hcap;
    unsigned char *pend; /* the bytes of the pieces left */
    size_t plen, pcap;
    size_t *end; /* text i's gids (and holes) end at end[i] of gids */
} Pass;

static void
pass_free(Pass *p)
{
    PyMem_RawFree(p->gids);
    PyMem_RawFree(p->holes);
    PyMem_RawFree(p->pend);
    PyMem_RawFree(p->end);
}

static int
pass_hole(Pass *p, Py_ssize_t text, const unsigned char *piece, size_t len)
{
    if (raw_grow((void **)&p->holes, &p->hcap, p->nh + 1, sizeof(Hole)) < 0)
        return -1;
    Hole *h = &p->holes[p->nh++];
    h->at = p->n;
    h->text = text;
    h->off = p->plen;
    h->len = len;
    if (piece == NULL)
        return 0;
    if (raw_grow((void **)&p->pend, &p->pcap, p->plen + len, 1) < 0)
        return -1;
    memcpy(p->pend + p->plen, piece, len);
    p->plen += len;
    return 0;
}

/* The first pass of batch, with the GIL released and the table locked: each ASCII text split
   into pieces (ascii_gids' rules) whose gids the piece cache holds; the others become holes.
   Reads the texts' characters (kept alive by the caller) and the piece cache only. */
static int
first_pass(TermTable *t, PyObject **items, Py_ssize_t n, Pass *p)
{
    for (Py_ssize_t k = 0; k < n; k++) {
        PyObject *text = items[k];
        if (!PyUnicode_IS_ASCII(text)) {
            if (pass_hole(p, k, NULL, SIZE_MAX) < 0)
                return -1;
            p->end[k] = p->n;
            continue;
        }
        Pieces ps;
        pieces_init(&ps, text);
        Py_ssize_t len;
        while ((len = pieces_next(&ps)) > 0) {
            Entry *e = map_find(&t->pieces, ps.buf, (size_t)len, hash_bytes(ps.buf, (size_t)len));
            if (e == NULL) {
                if (pass_hole(p, k, ps.buf, (size_t)len) < 0)
                    len = -1;
            }
            else if (e->n) {
                if (raw_grow((void **)&p->gids, &p->cap, p->n + e->n, sizeof(int32_t)) < 0)
                    len = -1;
                else {
                    memcpy(p->gids + p->n, VALS_OF(&t->pieces, e), e->n * sizeof(int32_t));
                    p->n += e->n;
                }
            }
            if (len < 0)
                break;
        }
        pieces_free(&ps);
        if (len < 0)
            return -1;
        p->end[k] = p->n;
    }
    return 0;
}

/* batch(texts: list[str]) -> (gids: bytes (int32), counts: bytes (int64), lex: list[str])

   In three passes, so that most of the work runs with the GIL released (an index run writes
   the previous batch and reads vectors on other threads meanwhile):
   1. without the GIL: every ASCII text's pieces that the piece cache holds (first_pass);
   2. with it: each hole in order, by the rules that may call Python (piece_gids, mixed_gids);
      holes are met in the order a one-pass loop meets them, so new terms get the same ids;
   3. with it: each text's gids put together, counted and joined into its lex string. */
static PyObject *
table_batch(TermTable *t, PyObject *texts)
{
    if (!PyList_Check(texts)) {
        PyErr_SetString(PyExc_TypeError, "TermTable.batch: a list of str");
        return NULL;
    }
    Py_ssize_t n = PyList_GET_SIZE(texts);
    PyObject **items = PyMem_Calloc(n ? (size_t)n : 1, sizeof(PyObject *));
    if (items == NULL)
        return PyErr_NoMemory();
    for (Py_ssize_t k = 0; k < n; k++) { /* our own references: the list may change meanwhile */
        PyObject *text = PyList_GET_ITEM(texts, k);
        if (!PyUnicode_Check(text)) {
            for (Py_ssize_t j = 0; j < k; j++)
                Py_DECREF(items[j]);
            PyMem_Free(items);
            PyErr_SetString(PyExc_TypeError, "TermTable: a text must be a str");
            return NULL;
        }
        Py_INCREF(text);
        items[k] = text;
    }
    Pass p = {0};
    Ids holes = {NULL, 0, 0};   /* the holes' gids, hole after hole */
    size_t *span = NULL;        /* hole h's gids end at span[h] of holes */
    PyObject *counts = NULL, *lex = NULL, *gids = NULL, *res = NULL;
    if (table_lock(t) < 0)
        goto out;
    p.end = PyMem_RawMalloc((n ? (size_t)n : 1) * sizeof(size_t));
    int rc = p.end == NULL ? -1 : 0;
    if (rc == 0) {
        Py_BEGIN_ALLOW_THREADS
        rc = first_pass(t, items, n, &p);
        Py_END_ALLOW_THREADS
    }
    if (rc < 0) {
        PyErr_NoMemory();
        goto unlock;
    }
    span = PyMem_Malloc((p.nh ? p.nh : 1) * sizeof(size_t));
    if (span == NULL) {
        PyErr_NoMemory();
        goto unlock;
    }
    for (size_t h = 0; h < p.nh; h++) {
        const Hole *hole = &p.holes[h];
        if (hole->len == SIZE_MAX)
            rc = mixed_gids(t, items[hole->text], &holes);
        else
            rc = piece_gids(t, p.pend + hole->off, hole->len, &holes);
        if (rc < 0)
            goto unlock;
        span[h] = holes.n;
    }
    counts = PyBytes_FromStringAndSize(NULL, n * (Py_ssize_t)sizeof(int64_t));
    gids = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)((p.n + holes.n) * sizeof(int32_t)));
    lex = PyList_New(n);
    if (counts == NULL || gids == NULL || lex == NULL)
        goto unlock;
    int64_t *cnt = (int64_t *)PyBytes_AS_STRING(counts);
    int32_t *g = (int32_t *)PyBytes_AS_STRING(gids);
    size_t at = 0, pos = 0, h = 0, hpos = 0;
    for (Py_ssize_t k = 0; k < n; k++) {
        size_t start = at;
        for (; h < p.nh && p.holes[h].text == k; h++) {
            size_t upto = p.holes[h].at;
            memcpy(g + at, p.gids + pos, (upto - pos) * sizeof(int32_t));
            at += upto - pos;
            pos = upto;
            memcpy(g + at, holes.v + hpos, (span[h] - hpos) * sizeof(int32_t));
            at += span[h] - hpos;
            hpos = span[h];
        }
        memcpy(g + at, p.gids + pos, (p.end[k] - pos) * sizeof(int32_t));
        at += p.end[k] - pos;
        pos = p.end[k];
        cnt[k] = (int64_t)(at - start);
        PyObject *s = joined(t, g + start, at - start);
        if (s == NULL)
            goto unlock;
        PyList_SET_ITEM(lex, k, s);
    }
    res = PyTuple_Pack(3, gids, counts, lex);
unlock:
    table_unlock(t);
out:
    for (Py_ssize_t k = 0; k < n; k++)
        Py_DECREF(items[k]);
    PyMem_Free(items);
    pass_free(&p);
    PyMem_Free(holes.v);
    PyMem_Free(span);
    Py_XDECREF(gids);
    Py_XDECREF(counts);
    Py_XDECREF(lex);
    return res;
}

/* terms_of(text: str) -> list[str]: the terms of one text (the query path). */
static PyObject *
table_terms(TermTable *t, PyObject *text)
{
    Ids out = {NULL, 0, 0};
    if (table_lock(t) < 0)
        return NULL;
    int rc = text_gids(t, text, &out);
    table_unlock(t);
    if (rc < 0) {
        PyMem_Free(out.v);
        return NULL;
    }
    for (size_t j = 0; j < out.n; j++) {
        if (out.v[j] < 0 || out.v[j] >= PyList_GET_SIZE(t->terms)) {
            PyErr_SetString(PyExc_RuntimeError, "TermTable: its terms list was changed");
            PyMem_Free(out.v);
            return NULL;
        }
    }
    PyObject *list = PyList_New((Py_ssize_t)out.n);
    if (list != NULL) {
        for (size_t j = 0; j < out.n; j++) {
            PyObject *s = PyList_GET_ITEM(t->terms, out.v[j]);
            Py_INCREF(s);
            PyList_SET_ITEM(list, (Py_ssize_t)j, s);
        }
    }
    PyMem_Free(out.v);
    return list;
}

static int
table_init(TermTable *t, PyObject *args, PyObject *kwds)
{
    static char *kw[] = {"word", "piece", "text", "limit", "plain_digits", NULL};
    PyObject *word, *piece, *text;
    Py_ssize_t limit;
    int plain_digits = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OOOn|p", kw, &word, &piece, &text, &limit, &plain_digits))
        return -1;
    if (!PyCallable_Check(word) || !PyCallable_Check(piece) || !PyCallable_Check(text)) {
        PyErr_SetString(PyExc_TypeError, "TermTable(word, piece, text, limit): callables");
        return -1;
    }
    if (t->terms != NULL) {
        PyErr_SetString(PyExc_RuntimeError, "TermTable: already initialised");
        return -1;
    }
    t->terms = PyList_New(0);
    t->ids = PyDict_New();
    t->lock = PyThread_allocate_lock();
    if (t->lock == NULL)
        PyErr_NoMemory();
    if (t->terms == NULL || t->ids == NULL || t->lock == NULL)
        return -1;
    Py_INCREF(word);
    Py_INCREF(piece);
    Py_INCREF(text);
    t->word = word;
    t->piece = piece;
    t->text = text;
    t->limit = limit;
    t->plain_digits = plain_digits;
    return 0;
}

static int
table_traverse(TermTable *t, visitproc visit, void *arg)
{
    Py_VISIT(t->terms);
    Py_VISIT(t->ids);
    Py_VISIT(t->word);
    Py_VISIT(t->piece);
    Py_VISIT(t->text);
    return 0;
}

static int
table_clear(TermTable *t)
{
    Py_CLEAR(t->terms);
    Py_CLEAR(t->ids);
    Py_CLEAR(t->word);
    Py_CLEAR(t->piece);
    Py_CLEAR(t->text);
    return 0;
}

static void
table_dealloc(TermTable *t)
{
    PyObject_GC_UnTrack(t);
    table_clear(t);
    map_free(&t->pieces);
    map_free(&t->words);
    if (t->lock != NULL)
        PyThread_free_lock(t->lock);
    PyMem_Free(t->tb);
    PyMem_Free(t->info);
    Py_TYPE(t)->tp_free((PyObject *)t);
}

/* Whether the table was initialised (else a RuntimeError is set): one made by __new__ alone,
   or whose __init__ failed half-way, has no terms list or no ids dict. */
static int
ready(TermTable *t)
{
    if (t->terms != NULL && t->ids != NULL && t->lock != NULL)
        return 1;
    PyErr_SetString(PyExc_RuntimeError, "TermTable: not initialised");
    return 0;
}

static PyObject *
table_get_terms(TermTable *t, void *closure)
{
    if (!ready(t))
        return NULL;
    Py_INCREF(t->terms);
    return t->terms;
}

static PyObject *
table_get_ids(TermTable *t, void *closure)
{
    if (!ready(t))
        return NULL;
    Py_INCREF(t->ids);
    return t->ids;
}

static PyObject *
table_get_cached(TermTable *t, void *closure)
{
    return Py_BuildValue("(nn)", (Py_ssize_t)t->pieces.used, (Py_ssize_t)t->words.used);
}

static PyObject *
checked_batch(TermTable *t, PyObject *texts)
{
    return ready(t) ? table_batch(t, texts) : NULL;
}

static PyObject *
checked_terms(TermTable *t, PyObject *text)
{
    return ready(t) ? table_terms(t, text) : NULL;
}

static PyMethodDef table_methods[] = {
    {"batch", (PyCFunction)checked_batch, METH_O,
     "batch(texts) -> (int32 gids bytes, int64 counts bytes, list of lex strings)"},
    {"terms_of", (PyCFunction)checked_terms, METH_O, "terms_of(text) -> list of terms"},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef table_getset[] = {
    {"terms", (getter)table_get_terms, NULL, "gid -> term (a list, only appended to)", NULL},
    {"ids", (getter)table_get_ids, NULL, "term -> gid", NULL},
    {"cached", (getter)table_get_cached, NULL, "(pieces, words) cached", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject TermTableType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "goclaw_search._accel.TermTable",
    .tp_basicsize = sizeof(TermTable),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "Global term ids and the ASCII fast path of the tokenizer.",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)table_init,
    .tp_dealloc = (destructor)table_dealloc,
    .tp_traverse = (traverseproc)table_traverse,
    .tp_clear = (inquiry)table_clear,
    .tp_methods = table_methods,
    .tp_getset = table_getset,
};

/* ------------------------------------------------------------------ module functions */

/* A term's id in vocab (a dict of term -> int), numbered len(vocab) when new. -1 with an
   exception set on error (a stored -1 comes back as -1 with no exception). */
static long long
vocab_id(PyObject *vocab, PyObject *term)
{
    PyObject *tid = PyDict_GetItemWithError(vocab, term);
    if (tid != NULL)
        return PyLong_AsLongLong(tid);
    if (PyErr_Occurred())
        return -1;
    long long v = (long long)PyDict_GET_SIZE(vocab);
    PyObject *num = PyLong_FromLongLong(v);
    if (num == NULL || PyDict_SetItem(vocab, term, num) < 0)
        v = -1;
    Py_XDECREF(num);
    return v;
}

/* term_ids(vocab: dict, seqs: iterable of sequences of str, count: int) -> bytes (int64 ids)
   Each term's id in vocab; an unknown term gets the next id (len(vocab)), in order of first
   sight. */
static PyObject *
term_ids(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "term_ids(vocab, seqs, count)");
        return NULL;
    }
    PyObject *vocab = args[0], *seqs = args[1];
    Py_ssize_t count = PyLong_AsSsize_t(args[2]);
    if (count < 0 && PyErr_Occurred())
        return NULL;
    if (count < 0 || (size_t)count > (size_t)PY_SSIZE_T_MAX / sizeof(long long)) {
        PyErr_SetString(PyExc_ValueError, "term_ids: count must be >= 0 (and fit in memory)");
        return NULL;
    }
    if (!PyDict_Check(vocab)) {
        PyErr_SetString(PyExc_TypeError, "term_ids: vocab must be a dict");
        return NULL;
    }
    PyObject *res = PyBytes_FromStringAndSize(NULL, count * (Py_ssize_t)sizeof(long long));
    if (res == NULL)
        return NULL;
    long long *ids = (long long *)PyBytes_AS_STRING(res);
    Py_ssize_t at = 0;
    PyObject *it = PyObject_GetIter(seqs);
    if (it == NULL)
        goto fail;
    PyObject *seq;
    while ((seq = PyIter_Next(it)) != NULL) {
        PyObject *fast = PySequence_Fast(seq, "term_ids: each item must be a sequence of terms");
        Py_DECREF(seq);
        if (fast == NULL)
            goto fail_it;
        Py_ssize_t m = PySequence_Fast_GET_SIZE(fast);
        PyObject **items = PySequence_Fast_ITEMS(fast);
        if (at + m > count) {
            Py_DECREF(fast);
            PyErr_SetString(PyExc_ValueError, "term_ids: more terms than count");
            goto fail_it;
        }
        for (Py_ssize_t j = 0; j < m; j++) {
            long long v = vocab_id(vocab, items[j]);
            if (v == -1 && PyErr_Occurred()) {
                Py_DECREF(fast);
                goto fail_it;
            }
            ids[at++] = v;
        }
        Py_DECREF(fast);
    }
    Py_DECREF(it);
    if (PyErr_Occurred())
        goto fail;
    if (at != count) {
        PyErr_SetString(PyExc_ValueError, "term_ids: fewer terms than count");
        goto fail;
    }
    return res;
fail_it:
    Py_DECREF(it);
fail:
    Py_DECREF(res);
    return NULL;
}

/* number_new(gids: buffer of int32, known: writable buffer of int64, vocab: dict, table: list)
   -> bytearray of int32: each gid's id in vocab. A gid g with known[g] < 0 is looked up once,
   in order of first sight: its term table[g] gets its id in vocab, numbered len(vocab) when new,
   and known[g] = that id. */
static PyObject *
number_new(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 4 || !PyDict_Check(args[2]) || !PyList_Check(args[3])) {
        PyErr_SetString(PyExc_TypeError, "number_new(gids, known, vocab: dict, table: list)");
        return NULL;
    }
    PyObject *vocab = args[2], *table = args[3];
    Py_buffer g, k;
    if (PyObject_GetBuffer(args[0], &g, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0)
        return NULL;
    if (PyObject_GetBuffer(args[1], &k, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE | PyBUF_FORMAT) < 0) {
        PyBuffer_Release(&g);
        return NULL;
    }
    PyObject *res = NULL;
    if (g.itemsize != 4 || k.itemsize != 8) {
        PyErr_SetString(PyExc_ValueError, "number_new: int32 gids and int64 known");
        goto done;
    }
    const int32_t *gv = (const int32_t *)g.buf;
    int64_t *kv = (int64_t *)k.buf;
    Py_ssize_t n = g.len / (Py_ssize_t)sizeof(int32_t), m = k.len / (Py_ssize_t)sizeof(int64_t);
    res = PyByteArray_FromStringAndSize(NULL, n * (Py_ssize_t)sizeof(int32_t));
    if (res == NULL)
        goto done;
    int32_t *ov = (int32_t *)PyByteArray_AS_STRING(res);
    for (Py_ssize_t i = 0; i < n; i++) {
        int32_t x = gv[i];
        if (x < 0 || x >= m || x >= PyList_GET_SIZE(table)) {
            PyErr_SetString(PyExc_IndexError, "number_new: a gid outside known or the table");
            Py_CLEAR(res);
            goto done;
        }
        if (kv[x] < 0) {
            PyObject *term = PyList_GET_ITEM(table, x);
            Py_INCREF(term);
            long long v = vocab_id(vocab, term);
            Py_DECREF(term);
            if (v < 0 || v > INT32_MAX) {
                if (!PyErr_Occurred())
                    PyErr_SetString(PyExc_ValueError, "number_new: a term id outside int32");
                Py_CLEAR(res);
                goto done;
            }
            kv[x] = v;
        }
        ov[i] = (int32_t)kv[x];
    }
done:
    PyBuffer_Release(&g);
    PyBuffer_Release(&k);
    return res;
}

/* postings(tids: buffer of int32, lens: buffer of int64, first: int, n_terms: int)
   -> (terms, slots, tf): bytearrays of int64, int32 and float32, one entry per distinct
   (term, document), term-major and slots ascending within a term; document d (its terms
   tids[sum(lens[:d]):][:lens[d]]) is slot first + d and tf the term's count in it. A counting
   sort in two passes: what numpy.unique over term * stride + slot gives, without the sort. */
static PyObject *
postings(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "postings(tids, lens, first, n_terms)");
        return NULL;
    }
    Py_ssize_t first = PyLong_AsSsize_t(args[2]), nt = PyLong_AsSsize_t(args[3]);
    if ((first == -1 || nt == -1) && PyErr_Occurred())
        return NULL;
    if (first < 0 || nt < 0 || first > INT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "postings: first and n_terms must be >= 0");
        return NULL;
    }
    Py_buffer tb, lb;
    if (PyObject_GetBuffer(args[0], &tb, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0)
        return NULL;
    if (PyObject_GetBuffer(args[1], &lb, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) {
        PyBuffer_Release(&tb);
        return NULL;
    }
    PyObject *res = NULL, *terms = NULL, *slots = NULL, *tf = NULL;
    int64_t *at = NULL, *pos = NULL;
    int32_t *last = NULL;
    if (tb.itemsize != 4 || lb.itemsize != 8) {
        PyErr_SetString(PyExc_ValueError, "postings: int32 tids and int64 lens");
        goto done;
    }
    const int32_t *tv = (const int32_t *)tb.buf;
    const int64_t *lv = (const int64_t *)lb.buf;
    Py_ssize_t n = tb.len / 4, docs = lb.len / 8;
    if (first + docs > (Py_ssize_t)INT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "postings: slots beyond int32");
        goto done;
    }
    Py_ssize_t total = 0;
    for (Py_ssize_t d = 0; d < docs; d++) {
        if (lv[d] < 0 || lv[d] > n - total) {
            PyErr_SetString(PyExc_ValueError, "postings: lens do not add up to the tids");
            goto done;
        }
        total += lv[d];
    }
    if (total != n) {
        PyErr_SetString(PyExc_ValueError, "postings: lens do not add up to the tids");
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        if (tv[i] < 0 || tv[i] >= nt) {
            PyErr_SetString(PyExc_IndexError, "postings: a term id outside n_terms");
            goto done;
        }
    }
    size_t cells = (size_t)(nt ? nt : 1);
    last = PyMem_Malloc(cells * sizeof(int32_t)); /* the last document holding the term */
    at = PyMem_Calloc(cells + 1, sizeof(int64_t)); /* df, then each term's next place */
    pos = PyMem_Malloc(cells * sizeof(int64_t));   /* the term's place for the current document */
    if (last == NULL || at == NULL || pos == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    Py_ssize_t pairs = 0, i = 0;
    /* The counting passes run with the GIL released (an index run's other threads go on):
       they touch only the buffers held above and the arrays allocated here. */
    Py_BEGIN_ALLOW_THREADS
    memset(last, 0xff, cells * sizeof(int32_t)); /* -1 */
    for (Py_ssize_t d = 0; d < docs; d++) { /* pass 1: documents per term */
        for (int64_t j = 0; j < lv[d]; j++, i++) {
            int32_t t = tv[i];
            if (last[t] != (int32_t)d) {
                last[t] = (int32_t)d;
                at[t + 1]++;
                pairs++;
            }
        }
    }
    Py_END_ALLOW_THREADS
    terms = PyByteArray_FromStringAndSize(NULL, pairs * 8);
    slots = PyByteArray_FromStringAndSize(NULL, pairs * 4);
    tf = PyByteArray_FromStringAndSize(NULL, pairs * 4);
    if (terms == NULL || slots == NULL || tf == NULL)
        goto done;
    int64_t *to = (int64_t *)PyByteArray_AS_STRING(terms);
    int32_t *so = (int32_t *)PyByteArray_AS_STRING(slots);
    float *fo = (float *)PyByteArray_AS_STRING(tf);
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t t = 0; t < nt; t++) { /* each term's first place; its entries' term */
        int64_t df = at[t + 1];
        at[t + 1] = at[t] + df;
        for (int64_t j = at[t]; j < at[t + 1]; j++)
            to[j] = t;
    }
    memset(last, 0xff, cells * sizeof(int32_t));
    i = 0;
    for (Py_ssize_t d = 0; d < docs; d++) { /* pass 2: place each (term, document) once */
        int32_t slot = (int32_t)(first + d);
        for (int64_t j = 0; j < lv[d]; j++, i++) {
            int32_t t = tv[i];
            if (last[t] != (int32_t)d) {
                last[t] = (int32_t)d;
                int64_t p = at[t]++;
                pos[t] = p;
                so[p] = slot;
                fo[p] = 1.0f;
            }
            else
                fo[pos[t]] += 1.0f;
        }
    }
    Py_END_ALLOW_THREADS
    res = PyTuple_Pack(3, terms, slots, tf);
done:
    PyMem_Free(last);
    PyMem_Free(at);
    PyMem_Free(pos);
    Py_XDECREF(terms);
    Py_XDECREF(slots);
    Py_XDECREF(tf);
    PyBuffer_Release(&tb);
    PyBuffer_Release(&lb);
    return res;
}

/* ------------------------------------------------------------------ chunking */
typedef struct {
    Py_ssize_t ls, le; /* the line's characters (a trailing \r dropped); le == ls for a blank entry */
    int blank;         /* a blank line kept inside a chunk (stored as "") */
    int raw;           /* the entry is exactly the source text (no \r dropped, a blank one empty) */
} Line;

typedef struct {
    Line *v;
    size_t n, cap;
} Lines;

/* The body of a chunk: its lines joined by "\n", right-stripped (the last content line's
   trailing whitespace and any blank entries after it go). */
static PyObject *
chunk_body(PyObject *text, int kind, const void *data, const Line *b, size_t k)
{
    size_t last = k;
    while (last > 0 && b[last - 1].blank)
        last--;
    if (last == 0)
        return PyUnicode_New(0, 0);
    Py_ssize_t end = b[last - 1].le;
    while (end > b[last - 1].ls && Py_UNICODE_ISSPACE(PyUnicode_READ(kind, data, end - 1)))
        end--;
    int raw = 1;
    for (size_t j = 0; j < last; j++)
        raw &= b[j].raw;
    if (raw) /* one piece of the text as it is */
        return PyUnicode_Substring(text, b[0].ls, end);
    PyObject *parts = PyList_New((Py_ssize_t)last);
    if (parts == NULL)
        return NULL;
    for (size_t j = 0; j < last; j++) {
        Py_ssize_t hi = j + 1 == last ? end : b[j].le;
        PyObject *s = b[j].blank ? PyUnicode_New(0, 0) : PyUnicode_Substring(text, b[j].ls, hi);
        if (s == NULL) {
            Py_DECREF(parts);
            return NULL;
        }
        PyList_SET_ITEM(parts, (Py_ssize_t)j, s);
    }
    PyObject *sep = PyUnicode_FromString("\n");
    PyObject *res = sep == NULL ? NULL : PyUnicode_Join(sep, parts);
    Py_XDECREF(sep);
    Py_DECREF(parts);
    return res;
}

static int
chunk_add(PyObject *out, PyObject *body, Py_ssize_t start, Py_ssize_t end)
{
    if (body == NULL)
        return -1;
    PyObject *item = Py_BuildValue("(Nnn)", body, start, end);
    if (item == NULL)
        return -1;
    int rc = PyList_Append(out, item);
    Py_DECREF(item);
    return rc;
}

/* chunks(text: str, max_len: int (> 0), split: callable) -> list of (body, start_line, end_line)
   goclaw_memory/chunking.py's chunk_text rules in one pass over the text; a line longer than
   max_len is cut by split(line) -> list[str] (chunking.split_long_line). */
static PyObject *
chunks(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3 || !PyUnicode_Check(args[0]) || !PyCallable_Check(args[2])) {
        PyErr_SetString(PyExc_TypeError, "chunks(text: str, max_len: int, split: callable)");
        return NULL;
    }
    PyObject *text = args[0], *split = args[2];
    Py_ssize_t max_len = PyLong_AsSsize_t(args[1]);
    if (max_len == -1 && PyErr_Occurred())
        return NULL;
    if (max_len <= 0) {
        PyErr_SetString(PyExc_ValueError, "chunks: max_len must be > 0");
        return NULL;
    }
    Py_ssize_t half = max_len / 2;
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    PyObject *out = PyList_New(0);
    if (out == NULL)
        return NULL;
    Lines buf = {NULL, 0, 0};
    Py_ssize_t buf_len = 0, start = 0, last_content = 0, number = 0, pos = 0;
#define FLUSH()                                                                                   \
    do {                                                                                          \
        if (buf.n && chunk_add(out, chunk_body(text, kind, data, buf.v, buf.n), start, last_content) < 0) \
            goto fail;                                                                            \
        buf.n = 0;                                                                                \
        buf_len = start = last_content = 0;                                                       \
    } while (0)
    while (pos <= n) {
        number++;
        Py_ssize_t ls = pos, le = pos;
        while (le < n && PyUnicode_READ(kind, data, le) != '\n')
            le++;
        pos = le + 1; /* past the "\n" (or past the end: the last line) */
        int cr = le > ls && PyUnicode_READ(kind, data, le - 1) == '\r';
        if (cr)
            le--;
        int blank = 1;
        for (Py_ssize_t i = ls; i < le && blank; i++)
            blank = Py_UNICODE_ISSPACE(PyUnicode_READ(kind, data, i));
        Py_ssize_t len = le - ls;
        if (blank) {
            if (!buf.n)
                continue; /* leading blank lines do not start a chunk */
            if (buf_len >= half || buf_len + 1 > max_len) {
                FLUSH(); /* paragraph break once the chunk is at least half full */
                continue;
            }
            if (buf.n == buf.cap && grow((void **)&buf.v, &buf.cap, buf.n + 1, sizeof(Line)) < 0)
                goto fail;
            buf.v[buf.n++] = (Line){ls, ls, 1, !cr && len == 0};
            buf_len += 1;
            continue;
        }
        if (len > max_len) {
            FLUSH();
            PyObject *line = PyUnicode_Substring(text, ls, le);
            if (line == NULL)
                goto fail;
            PyObject *pieces = PyObject_CallOneArg(split, line);
            Py_DECREF(line);
            if (pieces == NULL)
                goto fail;
            PyObject *fast = PySequence_Fast(pieces, "chunks: split must return a sequence");
            Py_DECREF(pieces);
            if (fast == NULL)
                goto fail;
            for (Py_ssize_t j = 0; j < PySequence_Fast_GET_SIZE(fast); j++) {
                PyObject *piece = PySequence_Fast_GET_ITEM(fast, j);
                Py_INCREF(piece);
                if (chunk_add(out, piece, number, number) < 0) {
                    Py_DECREF(fast);
                    goto fail;
                }
            }
            Py_DECREF(fast);
            continue;
        }
        Py_ssize_t added = len + (buf.n ? 1 : 0);
        if (buf.n && buf_len + added > max_len) {
            FLUSH();
            added = len;
        }
        if (!buf.n)
            start = number;
        if (buf.n == buf.cap && grow((void **)&buf.v, &buf.cap, buf.n + 1, sizeof(Line)) < 0)
            goto fail;
        buf.v[buf.n++] = (Line){ls, le, 0, !cr};
        buf_len += added;
        last_content = number;
        if (buf_len >= max_len)
            FLUSH();
    }
    FLUSH();
#undef FLUSH
    PyMem_Free(buf.v);
    return out;
fail:
    PyMem_Free(buf.v);
    Py_DECREF(out);
    return NULL;
}

static PyMethodDef methods[] = {
    {"term_ids", (PyCFunction)(void (*)(void))term_ids, METH_FASTCALL,
     "Term ids of every term of every sequence (int64 bytes), numbering unknown terms."},
    {"number_new", (PyCFunction)(void (*)(void))number_new, METH_FASTCALL,
     "Number the terms of the unknown gids in order of first sight."},
    {"chunks", (PyCFunction)(void (*)(void))chunks, METH_FASTCALL,
     "Chunks of a text: (body, start_line, end_line) by chunk_text's rules."},
    {"postings", (PyCFunction)(void (*)(void))postings, METH_FASTCALL,
     "Term-major postings (term, slot, tf) of documents' term ids, by a counting sort."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_accel", NULL, -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC
PyInit__accel(void)
{
    for (int c = 0; c < 256; c++) {
        int keep = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
        LOWER[c] = keep ? (unsigned char)((c >= 'A' && c <= 'Z') ? c + 32 : c)
                        : (is_connector((unsigned char)c) ? (unsigned char)c : ' ');
    }
    if (PyType_Ready(&TermTableType) < 0)
        return NULL;
    /* ABI: what tokenize.py expects (ACCEL_ABI). Bump both whenever a function's arguments or
       results change, so a module built from an older checkout is ignored, not called. */
    PyObject *m = PyModule_Create(&module);
    if (m == NULL)
        return NULL;
    Py_INCREF(&TermTableType);
    if (PyModule_AddIntConstant(m, "ABI", ABI) < 0 ||
        PyModule_AddObject(m, "TermTable", (PyObject *)&TermTableType) < 0) {
        Py_DECREF(&TermTableType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
