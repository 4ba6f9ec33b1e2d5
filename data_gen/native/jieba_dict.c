/* data_gen.native._jieba, the dictionary: jieba's FREQ dict copied into a trie
 * (one hash table of (parent node, character) edges), rebuilt when FREQ
 * changes, and FREQ itself read for the counts the trie does not cover. */
#include "jieba.h"

PyObject *zj_math_log; /* set by PyInit__jieba */

/* ---- the FREQ trie ---- */

/* How a FREQ value is used: K_ZERO (falsy), K_LOG (*lg = math.log(value),
 * which is libm's log of the int or float as a double), or K_SLOW (anything
 * else: looked up in FREQ and given to Python's math.log at cut time). */
static int value_kind(PyObject *value, double *lg) {
    double d;
    if (PyLong_CheckExact(value)) {
        d = PyLong_AsDouble(value);
        if (d == -1.0 && PyErr_Occurred()) { /* too large for a double */
            PyErr_Clear();
            return K_SLOW;
        }
    } else if (PyFloat_CheckExact(value)) {
        d = PyFloat_AS_DOUBLE(value);
    } else {
        return K_SLOW;
    }
    if (d == 0.0) return K_ZERO;
    if (!(d > 0.0) || isinf(d)) return K_SLOW; /* negative (math.log raises), nan, inf */
    *lg = log(d);
    return K_LOG;
}

/* Fills a zeroed table of mask + 1 slots: 0, or 1 if it gets over 3/4 full, -1 error. */
static int trie_fill(Node *nodes, size_t mask, PyObject *freq) {
    Py_ssize_t pos = 0, i, length;
    PyObject *word, *value;
    size_t used = 0;
    while (PyDict_Next(freq, &pos, &word, &value)) {
        uint32_t node = ROOT;
        int kind;
        const void *data;
        if (!PyUnicode_Check(word) || value == Py_None) continue; /* None: as if absent */
        if (READY(word) < 0) return -1;
        if ((length = PyUnicode_GET_LENGTH(word)) == 0) continue;
        kind = PyUnicode_KIND(word);
        data = PyUnicode_DATA(word);
        for (i = 0; i < length; i++) { /* find or add the nodes of every prefix */
            Py_UCS4 c = PyUnicode_READ(kind, data, i);
            size_t j = slot_hash(node, c) & mask;
            while (nodes[j].key && !((nodes[j].key & CP_MASK) == c && nodes[j].parent == node))
                j = (j + 1) & mask;
            if (!nodes[j].key) {
                if (++used > mask / 4 * 3) return 1;
                nodes[j].parent = node;
                nodes[j].key = c | (uint32_t)K_PREFIX << 24;
            }
            node = (uint32_t)j;
        }
        kind = value_kind(value, &nodes[node].lg);
        nodes[node].key = (nodes[node].key & CP_MASK) | (uint32_t)kind << 24;
    }
    return 0;
}

/* (Re)builds the trie from FREQ, doubling the table until it fits. */
int zj_trie_build(Cutter *self) {
    size_t size = 1024;
    while (size < (size_t)PyDict_Size(self->freq) * 2) size *= 2;
    for (;; size *= 2) {
        Node *nodes;
        int rc;
        if (size > ((size_t)1 << 31) || (nodes = PyMem_Calloc(size, sizeof(Node))) == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        if ((rc = trie_fill(nodes, size - 1, self->freq)) == 0) {
            PyMem_Free(self->nodes);
            self->nodes = nodes;
            self->node_mask = size - 1;
            self->freq_stamp = FREQ_STAMP(self->freq);
            return 0;
        }
        PyMem_Free(nodes);
        if (rc < 0) return -1;
    }
}

/* ---- FREQ itself for K_SLOW nodes ---- */

/* For a K_SLOW node, Python's own `count = FREQ.get(text[a:b])`, `if count:` and,
 * when want_log, `log(count)`. Returns -1 on error, 0 if missing (or None), 1. */
int zj_slow_count(Ctx *ctx, Py_ssize_t a, Py_ssize_t b, int want_log, int *truth, double *lg) {
    PyObject *key = PyUnicode_Substring(ctx->text, a, b), *count, *r;
    *truth = 0;
    if (key == NULL) return -1;
    count = PyDict_GetItemWithError(ctx->self->freq, key);
    Py_XINCREF(count);
    Py_DECREF(key);
    if (count == NULL || count == Py_None) {
        Py_XDECREF(count);
        return PyErr_Occurred() ? -1 : 0;
    }
    if ((*truth = PyObject_IsTrue(count)) > 0 && want_log) {
        if ((r = PyObject_CallOneArg(zj_math_log, count)) != NULL) {
            *lg = PyFloat_AsDouble(r);
            Py_DECREF(r);
        }
        if (r == NULL || (*lg == -1.0 && PyErr_Occurred())) *truth = -1;
    }
    Py_DECREF(count);
    return *truth < 0 ? -1 : 1;
}
