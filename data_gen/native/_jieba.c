/* data_gen.native._jieba: jieba's accurate-mode cut in C, giving the same words
 * as the Python reference data_gen/text/jieba_fast.py:FastJiebaCutter.
 *
 * Cutter(freq, logtotal, start, trans, emit, min_float, force_split)
 *   freq         jieba's FREQ dict (word -> count; word prefixes map to 0)
 *   logtotal     math.log(total), fixed when the cutter is made (as in Python)
 *   start, trans the HMM's 4 start and 8 transition log-probabilities, in the
 *                order of jieba_fast._HmmCutter (start B M E S; trans EB SB MM
 *                BM SS ES BE ME)
 *   emit         {char: its (B, M, E, S) emission log-probabilities}
 *   min_float    the log-probability of a character missing from emit
 *   force_split  finalseg.Force_Split_Words (a set, consulted on every cut)
 * Cutter.cut(text, hmm) -> list of words
 *
 * FREQ is copied into a trie (one hash table of (parent node, character)
 * edges), so that extending a fragment by one character is one probe and no
 * string is built. The copy is rebuilt when FREQ changes: on CPython 3.11 any
 * change is seen (the dict's version tag), on later versions only a change of
 * its size. Counts that are not plain non-negative numbers are read from FREQ
 * itself when met, so errors are raised where Python would raise them.
 *
 * Every score is the same sum of doubles, in the same order, as in the Python
 * code, and ties are broken the same way, hence the same words.
 */
#include "jieba.h"

/* The parts: native/jieba_dict.c (the FREQ trie), jieba_route.c (the
 * dictionary cut), jieba_hmm.c (the HMM); this file holds the Cutter type
 * (construction and cut()) and the module init. */

static PyObject *Cutter_cut(Cutter *self, PyObject *args) {
    Ctx ctx;
    Py_ssize_t n;
    int hmm, rc;
    char *scratch;
    if (!PyArg_ParseTuple(args, "Up:cut", &ctx.text, &hmm) || READY(ctx.text) < 0) return NULL;
    if (self->busy == 0 && FREQ_STAMP(self->freq) != self->freq_stamp && zj_trie_build(self) < 0)
        return NULL;
    ctx.self = self;
    ctx.kind = PyUnicode_KIND(ctx.text);
    ctx.data = PyUnicode_DATA(ctx.text);
    n = PyUnicode_GET_LENGTH(ctx.text);
    if ((ctx.words = PyList_New(0)) == NULL || n == 0) return ctx.words;
    /* one allocation: score[n + 1], best_end[n + 1], states[n] */
    if ((size_t)n > (size_t)PY_SSIZE_T_MAX / 32 ||
        !(scratch = PyMem_Malloc((size_t)(n + 1) * (sizeof(double) + sizeof(Py_ssize_t)) + (size_t)n))) {
        Py_DECREF(ctx.words);
        return PyErr_NoMemory();
    }
    ctx.score = (double *)scratch;
    ctx.best_end = (Py_ssize_t *)(scratch + (size_t)(n + 1) * sizeof(double));
    ctx.states = (unsigned char *)(ctx.best_end + n + 1);
    self->busy++;
    rc = zj_cut_text(&ctx, n, hmm);
    self->busy--;
    PyMem_Free(scratch);
    if (rc < 0) Py_CLEAR(ctx.words);
    return ctx.words;
}

/* ---- construction ---- */

static int read_doubles(PyObject *seq, double *out, Py_ssize_t n, const char *what) {
    Py_ssize_t i;
    PyObject *fast = PySequence_Fast(seq, what);
    if (fast == NULL) return -1;
    if (PySequence_Fast_GET_SIZE(fast) != n) PyErr_SetString(PyExc_ValueError, what);
    for (i = 0; i < n && !PyErr_Occurred(); i++)
        out[i] = PyFloat_AsDouble(PySequence_Fast_GET_ITEM(fast, i));
    Py_DECREF(fast);
    return PyErr_Occurred() ? -1 : 0;
}

/* emit: {char: (B, M, E, S) log-probabilities} as a table by code point */
static int build_emit(Cutter *self, PyObject *emit) {
    PyObject *key, *value;
    Py_ssize_t pos = 0;
    size_t size = 16, i;
    while (size < (size_t)PyDict_Size(emit) * 2) size *= 2;
    PyMem_Free(self->emit);
    if ((self->emit = PyMem_Calloc(size, sizeof(EmitSlot))) == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    self->emit_mask = size - 1;
    while (PyDict_Next(emit, &pos, &key, &value)) {
        Py_UCS4 c;
        /* only a one-character key can equal a character */
        if (!PyUnicode_Check(key)) continue;
        if (READY(key) < 0) return -1;
        if (PyUnicode_GET_LENGTH(key) != 1) continue;
        c = PyUnicode_READ_CHAR(key, 0);
        for (i = slot_hash(0, c) & self->emit_mask; self->emit[i].used && self->emit[i].c != c;
             i = (i + 1) & self->emit_mask) {}
        self->emit[i].used = 1;
        self->emit[i].c = c;
        if (read_doubles(value, self->emit[i].p, 4, "emit values must be 4 floats") < 0) return -1;
    }
    return 0;
}

static void Cutter_dealloc(Cutter *self) {
    Py_XDECREF(self->freq);
    Py_XDECREF(self->force_split);
    PyMem_Free(self->nodes);
    PyMem_Free(self->emit);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* Cutter(...): everything is read here; the object does not change afterwards
 * (except that the trie follows FREQ). */
static PyObject *Cutter_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    static char *kwlist[] = {"freq", "logtotal", "start", "trans", "emit", "min_float",
                             "force_split", NULL};
    PyObject *freq, *start, *trans, *emit, *force_split;
    Cutter *self = (Cutter *)type->tp_alloc(type, 0);
    if (self == NULL) return NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O!dOOO!dO!:Cutter", kwlist, &PyDict_Type, &freq,
                                     &self->logtotal, &start, &trans, &PyDict_Type, &emit,
                                     &self->low, &PySet_Type, &force_split)) {
        Py_DECREF(self);
        return NULL;
    }
    Py_INCREF(freq);
    self->freq = freq;
    Py_INCREF(force_split);
    self->force_split = force_split;
    if (read_doubles(start, self->start, 4, "start must be 4 floats (B, M, E, S)") < 0 ||
        read_doubles(trans, self->trans, 8, "trans must be 8 floats") < 0 ||
        build_emit(self, emit) < 0 || zj_trie_build(self) < 0)
        Py_CLEAR(self);
    return (PyObject *)self;
}

static PyMethodDef Cutter_methods[] = {
    {"cut", (PyCFunction)Cutter_cut, METH_VARARGS,
     "cut(text, hmm) -> the list of words of jieba.lcut(text, HMM=hmm)"},
    {NULL, NULL, 0, NULL}};

static PyTypeObject CutterType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "data_gen.native._jieba.Cutter",
    .tp_basicsize = sizeof(Cutter),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Cutter(freq, logtotal, start, trans, emit, min_float, force_split)",
    .tp_dealloc = (destructor)Cutter_dealloc,
    .tp_methods = Cutter_methods,
    .tp_new = Cutter_new,
};

static struct PyModuleDef native_jieba_module = {
    PyModuleDef_HEAD_INIT, "data_gen.native._jieba",
    "jieba's accurate-mode cut in C (see data_gen/text/jieba_fast.py).", -1, NULL, NULL, NULL, NULL,
    NULL};

PyMODINIT_FUNC PyInit__jieba(void) {
    PyObject *module, *math;
    if (zj_math_log == NULL) {
        if ((math = PyImport_ImportModule("math")) == NULL) return NULL;
        zj_math_log = PyObject_GetAttrString(math, "log");
        Py_DECREF(math);
        if (zj_math_log == NULL) return NULL;
    }
    if ((module = PyModule_Create(&native_jieba_module)) != NULL &&
        PyModule_AddType(module, &CutterType) < 0)
        Py_CLEAR(module);
    return module;
}
