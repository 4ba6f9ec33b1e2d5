/* data_gen.native._records, inputs: plain ints, lists of ints and the
   whole-word units of an instance read from Python objects into C arrays.
   Anything the fast path does not take is reported as "not taken" (0), so
   that the caller returns NotImplemented before any random draw. */
#include "records.h"

/* 1: *out = item, a plain int in [lo, 2**63); 0: not one; -1: error. */
int zr_as_i64(PyObject *item, i64 lo, i64 *out)
{
    int overflow = 0;
    i64 value;
    if (!PyLong_CheckExact(item)) return 0;
#if PY_VERSION_HEX >= 0x030C0000  /* one-digit ints read in place (a fifth of the fused call) */
    if (PyUnstable_Long_IsCompact((PyLongObject *)item))
        value = PyUnstable_Long_CompactValue((PyLongObject *)item);
#else
    if (Py_SIZE(item) >= -1 && Py_SIZE(item) <= 1)
        value = Py_SIZE(item) * (i64)((PyLongObject *)item)->ob_digit[0];
#endif
    else if ((value = PyLong_AsLongLongAndOverflow(item, &overflow)) == -1 && PyErr_Occurred())
        return -1;
    if (overflow || value < lo) return 0;
    *out = value;
    return 1;
}

/* A list/tuple of plain ints >= lo into out; 1/0/-1 as zr_as_i64. */
int zr_read_ints(PyObject *seq, i64 lo, i64 *out)
{
    Py_ssize_t n = SIZE(seq);
    PyObject **items = ITEMS(seq);
    for (Py_ssize_t i = 0; i < n; i++) {
        int ok = zr_as_i64(items[i], lo, &out[i]);
        if (ok != 1) return ok;
    }
    return 1;
}

void *zr_alloc(Py_ssize_t count, size_t size)
{
    if (count < 0 || (size_t)count > (size_t)PY_SSIZE_T_MAX / size - 1) return PyErr_NoMemory();
    void *p = PyMem_Calloc((size_t)count + 1, size);
    return p ? p : PyErr_NoMemory();
}

/* A list/tuple of ints into a new array; NULL with *ok = 0 (not for the fast
   path) or -1 (error). */
i64 *zr_ints_of(PyObject *seq, i64 lo, int *ok)
{
    *ok = -1;
    i64 *v = zr_alloc(SIZE(seq), sizeof(i64));
    if (v != NULL && (*ok = zr_read_ints(seq, lo, v)) != 1) {
        PyMem_Free(v);
        v = NULL;
    }
    return v;
}

/* whole_word_units() as pairs u[2k], u[2k+1]; returns the number of units. */
Py_ssize_t zr_units_from_starts(const i64 *starts, Py_ssize_t n, int whole_word, i64 *u)
{
    Py_ssize_t count = 0, open = -1;
    for (Py_ssize_t p = 0; p < n && !whole_word; p++)
        if (starts[p] >= 0) {
            u[2 * count] = p;
            u[2 * count++ + 1] = p + 1;
        }
    for (Py_ssize_t p = 0; p <= n && whole_word; p++) {
        if (p < n && starts[p] == 0) continue;
        /* A non-zero start closes the range the previous one opened; ranges
           opened by a special (-1) are dropped. */
        if (open >= 0 && starts[open] != -1) {
            u[2 * count] = open;
            u[2 * count++ + 1] = p;
        }
        open = p;
    }
    return count;
}

/* The units of an instance: `units` (list/tuple of (begin, end) pairs), or
   from starts when None. The fast path takes begin <= end <= n_ids (labels
   index ids) and, for n-grams, begins and ends inside `covered` (sized by the
   last end). Returns a new array (NULL: *ok = 0 not taken / -1 error) and
   sets *count and *total (unit lengths summed: a bound on positions chosen). */
i64 *zr_instance_units(PyObject *units, const i64 *starts, Py_ssize_t n_starts,
                       int whole_word, Py_ssize_t n_ids, int ngrams,
                       Py_ssize_t *count, i64 *total, int *ok)
{
    *count = units == Py_None ? n_starts : SIZE(units);
    i64 *u = zr_alloc(2 * *count, sizeof(i64));
    *ok = u == NULL ? -1 : 1;
    if (u != NULL && units == Py_None)
        *count = zr_units_from_starts(starts, n_starts, whole_word, u);
    for (Py_ssize_t k = 0; u != NULL && units != Py_None && *ok == 1 && k < *count; k++) {
        PyObject *pair = ITEMS(units)[k];
        *ok = is_seq(pair) && SIZE(pair) == 2 ? zr_read_ints(pair, 0, u + 2 * k) : 0;
    }
    i64 cover = u != NULL && *count ? u[2 * *count - 1] : 0;
    *total = 0;
    for (Py_ssize_t k = 0; *ok == 1 && k < *count; k++) {
        i64 begin = u[2 * k], end = u[2 * k + 1];
        if (begin > end || end > n_ids || (ngrams && (begin >= cover || end > cover))) *ok = 0;
        *total += end - begin;
    }
    if (*ok != 1) {
        PyMem_Free(u);
        return NULL;
    }
    return u;
}
