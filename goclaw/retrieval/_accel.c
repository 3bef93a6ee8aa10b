/* Optional accelerator for goclaw's retrieval engine (issue 11, indexing speed): the two
   per-term loops of a bulk load, in C with the CPython API. Built by hatch_build.py when a C
   compiler and the Python headers are there; without it goclaw/retrieval/tokenize.py and
   index.py run their pure-Python equivalents, which give identical results
   (tests/test_retrieval_accel.py compares both on random text). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* ascii_terms(text: str (ASCII), table: bytes[256], cache: dict, miss: callable) -> list[str]
   text.encode().translate(table).split(): each piece looked up in cache (bytes -> tuple of
   terms), miss(piece) on a miss; the terms concatenated. */
static PyObject *
ascii_terms(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "ascii_terms(text, table, cache, miss)");
        return NULL;
    }
    PyObject *text = args[0], *table = args[1], *cache = args[2], *miss = args[3];
    if (!PyUnicode_Check(text) || !PyUnicode_IS_ASCII(text) || !PyBytes_Check(table) ||
        PyBytes_GET_SIZE(table) != 256 || !PyDict_Check(cache)) {
        PyErr_SetString(PyExc_TypeError, "ascii_terms: an ASCII str, a 256-byte table and a dict");
        return NULL;
    }
    const unsigned char *s = PyUnicode_1BYTE_DATA(text);
    Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    const unsigned char *tab = (const unsigned char *)PyBytes_AS_STRING(table);
    PyObject *out = PyList_New(0);
    if (out == NULL)
        return NULL;
    char small[512];
    char *buf = small;
    Py_ssize_t cap = sizeof(small);
    Py_ssize_t i = 0;
    while (i < n) {
        while (i < n && tab[s[i]] == ' ')
            i++;
        if (i >= n)
            break;
        Py_ssize_t len = 0;
        while (i < n && tab[s[i]] != ' ') {
            if (len == cap) {
                Py_ssize_t ncap = cap * 2;
                char *nbuf = PyMem_Malloc(ncap);
                if (nbuf == NULL) {
                    PyErr_NoMemory();
                    goto fail;
                }
                memcpy(nbuf, buf, len);
                if (buf != small)
                    PyMem_Free(buf);
                buf = nbuf;
                cap = ncap;
            }
            buf[len++] = (char)tab[s[i++]];
        }
        PyObject *key = PyBytes_FromStringAndSize(buf, len);
        if (key == NULL)
            goto fail;
        PyObject *terms = PyDict_GetItemWithError(cache, key); /* borrowed */
        if (terms != NULL) {
            Py_INCREF(terms);
        }
        else if (PyErr_Occurred()) {
            Py_DECREF(key);
            goto fail;
        }
        else {
            terms = PyObject_CallOneArg(miss, key);
            if (terms == NULL) {
                Py_DECREF(key);
                goto fail;
            }
        }
        Py_DECREF(key);
        if (!PyTuple_Check(terms)) {
            Py_DECREF(terms);
            PyErr_SetString(PyExc_TypeError, "ascii_terms: a piece's terms must be a tuple");
            goto fail;
        }
        Py_ssize_t k = PyTuple_GET_SIZE(terms);
        for (Py_ssize_t j = 0; j < k; j++) {
            if (PyList_Append(out, PyTuple_GET_ITEM(terms, j)) < 0) {
                Py_DECREF(terms);
                goto fail;
            }
        }
        Py_DECREF(terms);
    }
    if (buf != small)
        PyMem_Free(buf);
    return out;
fail:
    if (buf != small)
        PyMem_Free(buf);
    Py_DECREF(out);
    return NULL;
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
            PyObject *tid = PyDict_GetItemWithError(vocab, items[j]);
            long long v;
            if (tid != NULL) {
                v = PyLong_AsLongLong(tid);
                if (v == -1 && PyErr_Occurred()) {
                    Py_DECREF(fast);
                    goto fail_it;
                }
            }
            else if (PyErr_Occurred()) {
                Py_DECREF(fast);
                goto fail_it;
            }
            else {
                v = (long long)PyDict_GET_SIZE(vocab);
                PyObject *num = PyLong_FromLongLong(v);
                if (num == NULL || PyDict_SetItem(vocab, items[j], num) < 0) {
                    Py_XDECREF(num);
                    Py_DECREF(fast);
                    goto fail_it;
                }
                Py_DECREF(num);
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

static PyMethodDef methods[] = {
    {"ascii_terms", (PyCFunction)(void (*)(void))ascii_terms, METH_FASTCALL,
     "The terms of an ASCII text through the piece cache."},
    {"term_ids", (PyCFunction)(void (*)(void))term_ids, METH_FASTCALL,
     "Term ids of every term of every sequence (int64 bytes), numbering unknown terms."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_accel", NULL, -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC
PyInit__accel(void)
{
    /* ABI: what tokenize.py expects (ACCEL_ABI). Bump both whenever a function's arguments or
       results change, so a module built from an older checkout is ignored, not called. */
    PyObject *m = PyModule_Create(&module);
    if (m != NULL && PyModule_AddIntConstant(m, "ABI", 1) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
