# Included by _vec.pyx: the term table's loop over a batch's ASCII pieces
# (goclaw_search.term_table.TermTable, which defines what each computes and holds the numpy
# versions: the same results; tests/libs/search/test_term_table.py compares them).
#
# * split: the pieces of the joined texts (runs of bytes other than a space), their starts and
#   sizes, and how many start in each text;
# * short_ids: each piece of at most SHORT bytes found by its two words in the table's
#   open-addressing hash table (linear probing from its home slot), a piece not there numbered
#   and put in the first empty slot met; the longer pieces get -1;
# * gather: a batch's term ids and stored forms from its pieces' ids, with where each text's
#   start;
# * number_pieces: the terms, term ids and stored forms of the pieces new to the table, by the
#   tokenizer's rules for one piece (Tokenizer.ascii_batch is the numpy path's version).

from libc.string cimport memcpy

cdef enum:
    SHORT = 16  # bytes of a piece read as two 64-bit words

cdef uint64_t M0 = 0x9E3779B97F4A7C15ULL
cdef uint64_t M1 = 0xC2B2AE3D27D4EB4FULL


def split(const uint8_t[::1] joined, const int64_t[::1] text_start):
    """(starts, sizes, per_text) of the pieces of ``joined``; ``text_start`` holds each text's
    first byte and, last, the end (one past the final separator)."""
    cdef Py_ssize_t n = joined.shape[0], t = text_start.shape[0] - 1
    cdef Py_ssize_t i = 0, k = 0, j, text = 0
    starts_arr = np.empty(n // 2 + 1, dtype=np.int64)
    size_arr = np.empty(n // 2 + 1, dtype=np.int64)
    per_arr = np.zeros(max(t, 0), dtype=np.int64)
    cdef int64_t[::1] starts = starts_arr, size = size_arr, per = per_arr
    with nogil:
        while i < n:
            if joined[i] == 32:
                i += 1
                continue
            j = i
            while j < n and joined[j] != 32:
                j += 1
            while text + 1 < t and text_start[text + 1] <= i:
                text += 1
            if t > 0:
                per[text] += 1
            starts[k] = i
            size[k] = j - i
            k += 1
            i = j
    return starts_arr[:k].copy(), size_arr[:k].copy(), per_arr


def short_ids(const uint8_t[::1] joined, const int64_t[::1] starts, const int64_t[::1] size,
              int64_t[::1] slots, uint64_t[::1] w0, uint64_t[::1] w1, int bits, int64_t first):
    """(pid, new): each piece's id (-1 for one longer than SHORT bytes) and the indexes of the
    pieces numbered here (first, first + 1, ...), in order. ``slots`` has room for them all."""
    cdef Py_ssize_t n = starts.shape[0], i, s
    cdef Py_ssize_t mask = slots.shape[0] - 1
    cdef uint64_t word[2]
    cdef uint64_t h
    cdef int64_t at, fresh = first
    cdef int shift = 64 - bits
    pid_arr = np.empty(n, dtype=np.int64)
    new_arr = np.empty(n, dtype=np.int64)
    cdef int64_t[::1] pid = pid_arr, new = new_arr
    cdef Py_ssize_t n_new = 0
    with nogil:
        for i in range(n):
            if size[i] > SHORT:
                pid[i] = -1
                continue
            word[0] = 0
            word[1] = 0
            memcpy(<void *>word, &joined[starts[i]], <size_t>size[i])
            h = word[0] * M0
            h ^= word[1] * M1
            h ^= h >> 29
            h *= M1
            s = <Py_ssize_t>(h >> shift)
            while True:
                at = slots[s]
                if at < 0:
                    slots[s] = fresh
                    w0[fresh] = word[0]
                    w1[fresh] = word[1]
                    pid[i] = fresh
                    new[n_new] = i
                    n_new += 1
                    fresh += 1
                    break
                if w0[at] == word[0] and w1[at] == word[1]:
                    pid[i] = at
                    break
                s = (s + 1) & mask
    return pid_arr, new_arr[:n_new].copy()


def gather(const int64_t[::1] pid, const int64_t[::1] per_text, const int32_t[::1] flat,
           const int64_t[::1] start, const int64_t[::1] count, const uint8_t[::1] lex,
           const int64_t[::1] lex_start, const int64_t[::1] lex_len):
    """A batch's term ids and stored forms from its pieces ``pid`` (``per_text``: how many
    pieces each text has), in one pass: (the pieces' term ids one after the other, piece
    ``p``'s being ``flat[start[p]:start[p] + count[p]]``; where each text's ids start, and
    last their end; the stored forms one after the other as bytes, piece ``p``'s being
    ``lex[lex_start[p]:lex_start[p] + lex_len[p]]``; where each text's stored forms start,
    and last their end)."""
    cdef Py_ssize_t n = pid.shape[0], t = per_text.shape[0], i, k, j = 0
    cdef int64_t p, n_ids = 0, n_bytes = 0, ids_at = 0, bytes_at = 0
    for i in range(n):
        n_ids += count[pid[i]]
        n_bytes += lex_len[pid[i]]
    gids_arr = np.empty(n_ids, dtype=np.int32)
    out_arr = np.empty(n_bytes, dtype=np.uint8)
    term_arr = np.empty(t + 1, dtype=np.int64)
    lex_arr = np.empty(t + 1, dtype=np.int64)
    cdef int32_t[::1] gids = gids_arr
    cdef uint8_t[::1] out = out_arr
    cdef int64_t[::1] term_at = term_arr, lex_at = lex_arr
    with nogil:
        for k in range(t):
            term_at[k] = ids_at
            lex_at[k] = bytes_at
            for i in range(j, j + per_text[k]):
                p = pid[i]
                if count[p]:
                    memcpy(&gids[ids_at], &flat[start[p]], <size_t>count[p] * sizeof(int32_t))
                    ids_at += count[p]
                if lex_len[p]:
                    memcpy(&out[bytes_at], &lex[lex_start[p]], <size_t>lex_len[p])
                    bytes_at += lex_len[p]
            j += per_text[k]
        term_at[t] = ids_at
        lex_at[t] = bytes_at
    return gids_arr, term_arr, out_arr.tobytes(), lex_arr


cdef inline bint _connector(uint8_t c) nogil:
    return c == 45 or c == 95 or c == 46 or c == 47 or c == 58 or c == 64 or c == 35 or c == 43  # -_./:@#+


cdef object _NOT_SEEN = object()


cdef inline int64_t _term_id(object term, object get, object ids, list terms) except? -1:
    gid = get(term)
    if gid is None:
        gid = len(terms)
        ids[term] = gid
        terms.append(term)
    return <int64_t>gid


def number_pieces(bytes raw, const int64_t[::1] starts, const int64_t[::1] size,
                  dict words, object word, object rules, object ids, list terms, Py_ssize_t max_chars):
    """The terms of new lower-cased ASCII pieces (``raw[starts[i]:starts[i] + size[i]]``) by
    the tokenizer's rules for one piece (``Tokenizer.ascii_rules``; the same terms as
    ``Tokenizer.ascii_batch``): a plain word's term, or a code's whole then its parts' terms;
    a word's term is ``words[w]`` when there, else ``word(w)``; another piece (only
    connectors, doubled connectors, over ``max_chars``) gets ``rules(text)``. Returns (each
    piece's term count, their global ids one after the other, each piece's stored form's
    length, the stored forms one after the other as bytes); new terms are numbered in
    ``ids`` / ``terms`` in order of first sight."""
    cdef Py_ssize_t n = starts.shape[0], i, lo, hi, j, a, k, before
    cdef bint plain, odd
    count_arr = np.zeros(n, dtype=np.int64)
    lex_arr = np.zeros(n, dtype=np.int64)
    cdef int64_t[::1] count = count_arr, lex_len = lex_arr
    cdef const uint8_t[::1] joined = raw
    cdef Py_ssize_t bound = 0, g = 0
    for i in range(n):  # room to spare: a piece has at most a term per byte and its whole
        bound += 2 * size[i] + 2
    gids_arr = np.empty(bound, dtype=np.int64)
    cdef int64_t[::1] gids = gids_arr
    get = ids.get
    stored = bytearray()
    for i in range(n):
        lo = starts[i]
        hi = lo + size[i]
        while lo < hi and _connector(joined[lo]):
            lo += 1
        while hi > lo and _connector(joined[hi - 1]):
            hi -= 1
        plain = True
        odd = lo == hi or hi - lo > max_chars
        j = lo
        while j < hi and not odd:
            if _connector(joined[j]):
                plain = False
                if _connector(joined[j + 1]):  # j + 1 < hi: the last byte is no connector
                    odd = True
            j += 1
        before = len(stored)
        if odd:
            found = rules(raw[starts[i]:starts[i] + size[i]].decode("ascii"))
            for term in found:
                gids[g] = _term_id(term, get, ids, terms)
                g += 1
                stored += term.encode("utf-8")
                stored.append(32)
            count[i] = len(found)
            lex_len[i] = len(stored) - before
            continue
        if not plain:  # a code: the whole, then its parts
            whole = raw[lo:hi]
            gids[g] = _term_id(whole.decode("ascii"), get, ids, terms)
            g += 1
            stored += whole
            stored.append(32)
            count[i] += 1
        a = lo
        for j in range(lo, hi + 1):
            if j < hi and not _connector(joined[j]):
                continue
            w = raw[a:j].decode("ascii")
            t = words.get(w, _NOT_SEEN)
            if t is _NOT_SEEN:
                t = word(w)
            if t is not None:
                gids[g] = _term_id(t, get, ids, terms)
                g += 1
                stored += t.encode("utf-8")
                stored.append(32)
                count[i] += 1
            a = j + 1
        lex_len[i] = len(stored) - before
    return count_arr, gids_arr[:g], lex_arr, bytes(stored)


def first_seen(const int32_t[::1] gids, const int64_t[::1] gmap):
    """The global ids ``g`` of ``gids`` with ``gmap[g] < 0``, each once, in order of first
    occurrence (``SearchIndex._local_ids``' numpy passes, in one loop)."""
    cdef Py_ssize_t n = gids.shape[0], i, k = 0
    cdef int32_t g
    out_arr = np.empty(n, dtype=np.int64)
    seen_arr = np.zeros(gmap.shape[0], dtype=np.uint8)
    cdef int64_t[::1] out = out_arr
    cdef uint8_t[::1] seen = seen_arr
    with nogil:
        for i in range(n):
            g = gids[i]
            if gmap[g] < 0 and not seen[g]:
                seen[g] = 1
                out[k] = g
                k += 1
    return out_arr[:k].copy()


def postings(const int64_t[::1] tids, const int64_t[::1] lens, int64_t first, Py_ssize_t n_terms):
    """``(term, slot, tf)`` of documents ``first, first + 1, ...`` (``lens``: their term counts,
    ``tids``: their terms in order), term-major with slots ascending (``index_build._postings``'
    numpy and scipy versions: the same arrays), by a counting sort: one pass counts each term's
    documents, one places them."""
    cdef Py_ssize_t n_docs = lens.shape[0], d, j, at = 0, total = 0
    cdef int64_t t, p
    last_arr = np.full(n_terms, -1, dtype=np.int64)
    pos_arr = np.zeros(n_terms + 1, dtype=np.int64)
    cdef int64_t[::1] last = last_arr, pos = pos_arr
    with nogil:
        for d in range(n_docs):  # each term's documents
            for j in range(at, at + lens[d]):
                t = tids[j]
                if last[t] != d:
                    last[t] = d
                    pos[t + 1] += 1
            at += lens[d]
        for j in range(n_terms):
            pos[j + 1] += pos[j]
        total = pos[n_terms]
    terms_arr = np.repeat(np.arange(n_terms, dtype=np.int64), np.diff(pos_arr))
    slots_arr = np.empty(total, dtype=np.int32)
    tf_arr = np.zeros(total, dtype=np.float32)
    cdef int32_t[::1] slots = slots_arr
    cdef float[::1] tf = tf_arr
    last_arr.fill(-1)
    at = 0
    with nogil:
        for d in range(n_docs):  # placed in document order: each term's slots ascending
            for j in range(at, at + lens[d]):
                t = tids[j]
                if last[t] != d:
                    last[t] = d
                    p = pos[t]
                    pos[t] += 1
                    slots[p] = <int32_t>(first + d)
                tf[pos[t] - 1] += 1
            at += lens[d]
    return terms_arr, slots_arr, tf_arr
