# Included by _vec.pyx: the query terms' occurrences in stored term strings
# (goclaw_search.rerank.lex_positions, which defines what it computes and holds the Python
# version: the same lists; tests/libs/search/test_rerank_numpy.py compares them).
#
# * lex_positions: each string's words (runs of bytes other than ASCII whitespace) compared
#   with the terms' UTF-8 bytes, length first: no regular expression, no Python object per
#   word. The caller turns other whitespace into spaces first.

from libc.string cimport memcmp


cdef inline bint _is_space(unsigned char c) noexcept nogil:
    return c == 32 or 9 <= c <= 13 or 28 <= c <= 31


def lex_positions(list terms, list lexes):
    """For each of ``lexes`` (a str, or None) the occurrences of the distinct ``terms`` among
    its words: ``(codes, positions)``, the index in ``terms`` and the word's position, by
    position. Words are separated by ASCII whitespace only."""
    cdef Py_ssize_t n_terms = len(terms), k, i, n, start, position, length
    cdef list encoded = [t.encode("utf-8") for t in terms]
    cdef const unsigned char** term_at = <const unsigned char**> malloc(max(n_terms, 1) * sizeof(void*))
    cdef Py_ssize_t* term_len = <Py_ssize_t*> malloc(max(n_terms, 1) * sizeof(Py_ssize_t))
    cdef const unsigned char* p
    cdef bytes raw, term_bytes
    cdef list out = [], codes, found
    if term_at == NULL or term_len == NULL:
        free(term_at)
        free(term_len)
        raise MemoryError()
    try:
        for k in range(n_terms):
            term_bytes = encoded[k]
            term_at[k] = <const unsigned char*> term_bytes
            term_len[k] = len(term_bytes)
        for lex in lexes:
            codes, found = [], []
            out.append((codes, found))
            if not lex:
                continue
            raw = (<str> lex).encode("utf-8")
            p = <const unsigned char*> raw
            n = len(raw)
            i = 0
            position = 0
            while i < n:
                while i < n and _is_space(p[i]):
                    i += 1
                if i >= n:
                    break
                start = i
                while i < n and not _is_space(p[i]):
                    i += 1
                length = i - start
                for k in range(n_terms):
                    if term_len[k] == length and memcmp(p + start, term_at[k], length) == 0:
                        codes.append(k)
                        found.append(position)
                        break
                position += 1
    finally:
        free(term_at)
        free(term_len)
    return out
