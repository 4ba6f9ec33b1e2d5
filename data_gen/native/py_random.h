/* A Python random.Random driven from C, draw for draw as random.py draws.
 *
 * The accelerators that make records (_instances, _xlnet) call the
 * chunk's own generator through its bound methods, in the order their pure-Python twins
 * call it, so both write the same bytes; header-only, each module gets its own copy. */
#ifndef ZH_PY_RANDOM_H
#define ZH_PY_RANDOM_H

#include <Python.h>

/* rng.random() into *out; -1 with the Python error set. */
static inline int py_random_draw(PyObject *random, double *out)
{
    PyObject *x = PyObject_CallNoArgs(random);
    if (x == NULL) return -1;
    *out = PyFloat_AsDouble(x);
    Py_DECREF(x);
    return *out == -1.0 && PyErr_Occurred() ? -1 : 0;
}

/* Random._randbelow_with_getrandbits(n), n >= 1, through rng.getrandbits. */
static inline int py_random_below(PyObject *getrandbits, Py_ssize_t n, Py_ssize_t *out)
{
    int k = 0;
    for (size_t v = (size_t)n; v; v >>= 1) k++;
    PyObject *bits = PyLong_FromLong(k);
    if (bits == NULL) return -1;
    for (;;) {
        PyObject *x = PyObject_CallOneArg(getrandbits, bits);
        if (x == NULL) break;
        unsigned long long v = PyLong_AsUnsignedLongLong(x);
        Py_DECREF(x);
        if (v == (unsigned long long)-1 && PyErr_Occurred()) break;
        if (v < (unsigned long long)n) {
            *out = (Py_ssize_t)v;
            Py_DECREF(bits);
            return 0;
        }
    }
    Py_DECREF(bits);
    return -1;
}

#endif
