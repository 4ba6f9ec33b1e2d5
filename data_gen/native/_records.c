/* C fast paths of data_gen.modes.mlm.masking and data_gen.records.example_proto.

Every function gives the same values, makes the same rng.random() calls in
the same order and builds the same bytes as its Python twin. Inputs the fast
path does not take (not an exact list/tuple, items not plain ints, negative
ids, malformed units) make it return NotImplemented BEFORE any random draw,
and the caller then runs the Python reference.
*/
#include "records.h"
#include <math.h>
#include <string.h>
#if PY_VERSION_HEX < 0x030A0000  /* Python 3.9: PyModule_AddObjectRef is 3.10+ */
static int PyModule_AddObjectRef(PyObject *m, const char *name, PyObject *v)
{
    Py_INCREF(v);
    if (PyModule_AddObject(m, name, v) < 0) { Py_DECREF(v); return -1; }
    return 0;
}
#endif

/* The inputs, masking and Example encoding live in native/records_*.c;
   this file holds the Python-facing functions, MaskEncoder and module init. */

static PyObject *str_random;  /* interned "random" */

/* ---- module functions ---------------------------------------------------- */

static PyObject *py_whole_word_units(PyObject *module, PyObject *args)
{
    PyObject *starts, *result = NULL;
    int whole_word, ok;
    (void)module;
    if (!PyArg_ParseTuple(args, "Op", &starts, &whole_word)) return NULL;
    if (!is_seq(starts)) Py_RETURN_NOTIMPLEMENTED;
    Py_ssize_t n = SIZE(starts);
    i64 *s = zr_ints_of(starts, LLONG_MIN, &ok), *u = s ? zr_alloc(2 * n, sizeof(i64)) : NULL;
    if (u != NULL) {
        Py_ssize_t count = zr_units_from_starts(s, n, whole_word, u);
        result = PyList_New(count);
        for (Py_ssize_t k = 0; result != NULL && k < count; k++) {
            PyObject *pair = PyTuple_New(2), *begin = PyLong_FromLongLong(u[2 * k]);
            PyObject *end = PyLong_FromLongLong(u[2 * k + 1]);
            if (pair == NULL || begin == NULL || end == NULL) {
                Py_XDECREF(pair), Py_XDECREF(begin), Py_XDECREF(end);
                Py_CLEAR(result);
                break;
            }
            PyTuple_SET_ITEM(pair, 0, begin);
            PyTuple_SET_ITEM(pair, 1, end);
            PyList_SET_ITEM(result, k, pair);
        }
    }
    PyMem_Free(s);
    PyMem_Free(u);
    if (ok == 0) Py_RETURN_NOTIMPLEMENTED;
    return result;
}

static PyObject *py_token_boundary(PyObject *module, PyObject *starts)
{
    (void)module;
    if (!is_seq(starts)) Py_RETURN_NOTIMPLEMENTED;
    for (Py_ssize_t i = 0; i < SIZE(starts); i++)
        if (!PyLong_CheckExact(ITEMS(starts)[i])) Py_RETURN_NOTIMPLEMENTED;
    PyObject *result = PyList_New(SIZE(starts));
    for (Py_ssize_t i = 0; result != NULL && i < SIZE(starts); i++)  /* exact ints: no error */
        PyList_SET_ITEM(result, i, PyLong_FromLong(PyObject_IsTrue(ITEMS(starts)[i])));
    return result;  /* (0 and 1 are cached ints: PyLong_FromLong cannot fail) */
}

/* create_masked_lm_predictions(ids, starts, rng_random, num_to_predict, units,
   whole_word, cumulative_or_None, mask_id, replacements) */
static PyObject *py_create_masked_lm_predictions(PyObject *module, PyObject *args)
{
    PyObject *ids, *starts, *random, *units, *cumulative, *mask_id, *replacements;
    PyObject *output = NULL, *positions = NULL, *labels = NULL, *result = NULL;
    int whole_word, ok = 1;
    i64 *s = NULL, *u = NULL, total = 0, cap;
    double cumul[64];
    MaskParams mp = {0, NULL, 0, 0, 0, NULL, NULL};
    Work w = {NULL, NULL, NULL, NULL, NULL, NULL, NULL};
    Py_ssize_t count, num;
    (void)module;
    if (!PyArg_ParseTuple(args, "OOOLOpOOO", &ids, &starts, &random, &mp.num_to_predict,
                          &units, &whole_word, &cumulative, &mask_id, &replacements))
        return NULL;
    if (!is_seq(ids) || !is_seq(replacements) || !is_seq(units == Py_None ? starts : units) ||
        (cumulative != Py_None && !zr_read_cumulative(cumulative, cumul, &mp.ngram)))
        Py_RETURN_NOTIMPLEMENTED;
    mp.cumulative = cumulative == Py_None ? NULL : cumul;
    mp.n_replacements = SIZE(replacements);
    if (units == Py_None && (s = zr_ints_of(starts, LLONG_MIN, &ok)) == NULL) goto done;
    u = zr_instance_units(units, s, s ? SIZE(starts) : 0, whole_word, SIZE(ids),
                       mp.cumulative != NULL, &count, &total, &ok);
    cap = mp.num_to_predict < total ? mp.num_to_predict : total;
    if (u == NULL || zr_work_alloc(&w, u, count, cap < 0 ? 0 : cap) < 0 ||
        (output = PySequence_List(ids)) == NULL)
        goto done;
    num = zr_mask_core(u, count, &mp, random, &w);
    if (num < 0 || (positions = PyList_New(num)) == NULL || (labels = PyList_New(num)) == NULL)
        goto done;
    for (Py_ssize_t k = 0; k < num; k++) {  /* labels before any replacement */
        PyObject *position = PyLong_FromLongLong(w.chosen[k]);
        if (position == NULL) goto done;
        PyList_SET_ITEM(positions, k, position);
        PyObject *label = PyList_GET_ITEM(output, w.chosen[k]);
        Py_INCREF(label);
        PyList_SET_ITEM(labels, k, label);
    }
    for (Py_ssize_t k = 0; k < num; k++) {
        PyObject *value = mask_id;
        if (w.action[k] == -2) continue;
        if (w.action[k] >= SIZE(replacements)) {  /* shrunk by rng.random()? */
            PyErr_SetString(PyExc_IndexError, "list index out of range");
            goto done;
        }
        if (w.action[k] >= 0) value = ITEMS(replacements)[w.action[k]];
        Py_INCREF(value);
        PyList_SetItem(output, w.chosen[k], value);  /* steals; releases the old item */
    }
    result = PyTuple_Pack(3, output, positions, labels);
done:
    Py_XDECREF(output);
    Py_XDECREF(positions);
    Py_XDECREF(labels);
    PyMem_Free(s);
    PyMem_Free(u);
    PyMem_Free(w.order);
    if (ok == 0) Py_RETURN_NOTIMPLEMENTED;
    return result;
}

/* encode(input_ids, segment_ids, masked_positions, masked_ids, label, boundary,
          max_seq_length, max_predictions_per_seq, with_token_boundary) */
static PyObject *py_encode(PyObject *module, PyObject *args)
{
    PyObject *seq[5], *label, *result = NULL;  /* input, segment, positions, ids, boundary */
    i64 *v[5] = {NULL, NULL, NULL, NULL, NULL};
    Instance in;
    int ok = 1;
    (void)module;
    memset(&in, 0, sizeof in);
    if (!PyArg_ParseTuple(args, "OOOOOOnnp", &seq[0], &seq[1], &seq[2], &seq[3], &label,
                          &seq[4], &in.max_len, &in.max_pred, &in.with_boundary))
        return NULL;
    if (!is_seq(seq[0]) || !is_seq(seq[2])) Py_RETURN_NOTIMPLEMENTED;
    if (zr_check_sizes(SIZE(seq[0]), SIZE(seq[2]), in.max_len, in.max_pred) < 0) return NULL;
    if (!is_seq(seq[1]) || !is_seq(seq[3]) || (in.with_boundary && !is_seq(seq[4])))
        Py_RETURN_NOTIMPLEMENTED;
    Ints *fields[5] = {&in.input_ids, &in.segment_ids, &in.positions, &in.masked_ids,
                       &in.boundary};
    if ((ok = zr_as_i64(label, 0, &in.label)) != 1) goto done;
    for (int i = 0; i < 4 + in.with_boundary; i++) {
        if ((v[i] = zr_ints_of(seq[i], 0, &ok)) == NULL) goto done;
        fields[i]->v = v[i];
        fields[i]->n = SIZE(seq[i]);
    }
    result = zr_encode_instance(&in);
done:
    for (int i = 0; i < 5; i++) PyMem_Free(v[i]);
    if (ok == 0) Py_RETURN_NOTIMPLEMENTED;
    return result;
}

static PyObject *py_encode_word_ids(PyObject *module, PyObject *args)
{
    PyObject *seq[3], *label, *result = NULL;  /* input, segment, starts */
    i64 *v[4] = {NULL, NULL, NULL, NULL}, label_value;
    Py_ssize_t max_len;
    int whole_word, ok = 1;
    (void)module;
    if (!PyArg_ParseTuple(args, "OOOOnp", &seq[0], &seq[1], &seq[2], &label, &max_len,
                          &whole_word))
        return NULL;
    for (int i = 0; i < 3; i++)
        if (!is_seq(seq[i])) Py_RETURN_NOTIMPLEMENTED;
    Py_ssize_t n = SIZE(seq[0]);
    if (n > max_len)
        return PyErr_Format(PyExc_ValueError, "instance of %zd tokens exceeds max_seq_length "
                            "%zd", n, max_len);
    if (SIZE(seq[2]) != n) Py_RETURN_NOTIMPLEMENTED;
    if ((ok = zr_as_i64(label, 0, &label_value)) != 1) goto done;
    for (int i = 0; i < 3; i++)
        if ((v[i] = zr_ints_of(seq[i], i == 2 ? -1 : 0, &ok)) == NULL) goto done;
    if ((v[3] = zr_alloc(n ? n : 1, sizeof(i64))) == NULL) goto done;
    zr_word_ids(v[2], n, whole_word, v[3]);
    Ints ids = {v[0], n}, segments = {v[1], SIZE(seq[1])};
    result = zr_encode_word_ids(&ids, &segments, v[3], label_value, max_len);
done:
    for (int i = 0; i < 4; i++) PyMem_Free(v[i]);
    if (ok == 0) Py_RETURN_NOTIMPLEMENTED;
    return result;
}

/* ---- the fused per-instance call ----------------------------------------- */

typedef struct {
    PyObject_HEAD
    i64 max_predictions, mask_id, *replacements;
    double masked_lm_prob, cumulative[64];
    Py_ssize_t n_replacements, ngram, max_len, max_pred;
    int whole_word, with_boundary, per_span, with_spans;
    PyObject *fallback, *similar;
} MaskEncoder;

static void mask_encoder_dealloc(MaskEncoder *self)
{
    PyMem_Free(self->replacements);
    Py_XDECREF(self->fallback);
    Py_XDECREF(self->similar);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *mask_encoder_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    PyObject *replacements, *cumulative, *fallback, *similar;
    MaskEncoder *self = (MaskEncoder *)type->tp_alloc(type, 0);
    int ok;
    (void)kwargs;
    if (self == NULL) return NULL;
    if (!PyArg_ParseTuple(args, "LdLOpOnnpOiOp", &self->max_predictions,
                          &self->masked_lm_prob, &self->mask_id, &replacements,
                          &self->whole_word, &cumulative, &self->max_len, &self->max_pred,
                          &self->with_boundary, &fallback, &self->per_span, &similar,
                          &self->with_spans))
        goto fail;
    Py_INCREF(fallback);
    self->fallback = fallback;
    Py_INCREF(similar);
    self->similar = similar;
    self->ngram = -1;
    if (!PyCallable_Check(fallback) || self->mask_id < 0 || !is_seq(replacements) ||
        self->per_span < 0 || self->per_span > 2 ||
        (self->per_span && cumulative == Py_None) ||
        (self->per_span == 2 && !PyDict_CheckExact(similar)) ||
        (cumulative != Py_None &&
         !zr_read_cumulative(cumulative, self->cumulative, &self->ngram))) {
        PyErr_SetString(PyExc_ValueError, "MaskEncoder: parameters the C path does not take");
        goto fail;
    }
    self->n_replacements = SIZE(replacements);
    if ((self->replacements = zr_ints_of(replacements, 0, &ok)) != NULL) return (PyObject *)self;
    if (ok == 0) PyErr_SetString(PyExc_ValueError, "MaskEncoder: replacement ids not ints >= 0");
fail:
    Py_DECREF(self);
    return NULL;
}

/* (ids, starts, segment_ids, label, units, rng) -> (record, num_masked, max_id),
   as masking.mask_and_encode with the parameters given at construction. */
static PyObject *mask_encoder_call(MaskEncoder *self, PyObject *args, PyObject *kwargs)
{
    PyObject *ids, *starts, *segments, *label_obj, *units, *rng, *random = NULL;
    PyObject *result = NULL, *record;
    i64 *v = NULL, *s = NULL, *g = NULL, *u = NULL, label, total = 0, cap, max_id = 0;
    Work w = {NULL, NULL, NULL, NULL, NULL, NULL, NULL};
    Py_ssize_t count, num, n, n_starts;
    int ok = 0;
    if (kwargs != NULL && PyDict_GET_SIZE(kwargs)) {
        PyErr_SetString(PyExc_TypeError, "MaskEncoder takes positional arguments only");
        return NULL;
    }
    if (!PyArg_UnpackTuple(args, "MaskEncoder", 6, 6, &ids, &starts, &segments, &label_obj,
                           &units, &rng))
        return NULL;
    if (!is_seq(ids) || !is_seq(starts) || !is_seq(segments) ||
        (units != Py_None && !is_seq(units)) || (n = SIZE(ids)) == 0)
        goto done;
    n_starts = SIZE(starts);
    /* num_to_predict: nearbyint rounds half to even, as Python's round(). */
    i64 num_to_predict = (i64)nearbyint((double)n * self->masked_lm_prob);
    num_to_predict = num_to_predict < 1 ? 1 : num_to_predict;
    MaskParams mp = {num_to_predict < self->max_predictions ? num_to_predict
                                                             : self->max_predictions,
                     self->ngram < 0 ? NULL : self->cumulative, self->ngram,
                     self->n_replacements, self->per_span, self->similar, NULL};
    if ((ok = zr_as_i64(label_obj, 0, &label)) != 1 || (v = zr_ints_of(ids, 0, &ok)) == NULL ||
        (s = zr_ints_of(starts, LLONG_MIN, &ok)) == NULL ||
        (g = zr_ints_of(segments, 0, &ok)) == NULL)
        goto done;
    mp.ids = v;
    u = zr_instance_units(units, s, n_starts, self->whole_word, n, mp.cumulative != NULL,
                       &count, &total, &ok);
    cap = mp.num_to_predict < total ? mp.num_to_predict : total;
    /* w.action gets room for labels [cap] and boundary [n_starts] after it. */
    if (u == NULL || zr_work_alloc(&w, u, count, (cap < 0 ? 0 : cap) * 2 + n_starts) < 0 ||
        (random = PyObject_GetAttr(rng, str_random)) == NULL ||
        (num = zr_mask_core(u, count, &mp, random, &w)) < 0)
        goto done;
    i64 *labels = w.action + num, *boundary = labels + num;
    for (Py_ssize_t k = 0; k < num; k++) {  /* labels before any replacement */
        labels[k] = v[w.chosen[k]];
        max_id = labels[k] > max_id ? labels[k] : max_id;
    }
    for (Py_ssize_t k = 0; k < num; k++) {
        i64 a = w.action[k];
        if (a != ZR_KEEP)
            v[w.chosen[k]] = a == ZR_MASK ? self->mask_id
                             : a >= 0 ? self->replacements[a] : ZR_LITERAL(a);
    }
    for (Py_ssize_t i = 0; i < n; i++) max_id = v[i] > max_id ? v[i] : max_id;
    for (Py_ssize_t i = 0; self->with_boundary && i < n_starts; i++) boundary[i] = s[i] != 0;
    if (zr_check_sizes(n, num, self->max_len, self->max_pred) < 0) goto done;
    Instance in = {{v, n}, {g, SIZE(segments)}, {w.chosen, num}, {labels, num},
                   {boundary, n_starts}, {w.left, num}, {w.right, num}, label, self->max_len,
                   self->max_pred, self->with_boundary, self->with_spans && self->per_span};
    if ((record = zr_encode_instance(&in)) != NULL)
        result = Py_BuildValue("(NnL)", record, num, max_id);
done:
    Py_XDECREF(random);
    PyMem_Free(v);
    PyMem_Free(s);
    PyMem_Free(g);
    PyMem_Free(u);
    PyMem_Free(w.order);
    if (ok == 0)  /* not for the fast path (no draw made yet): the Python reference */
        return PyObject_Call(self->fallback, args, NULL);
    return result;
}

static PyTypeObject MaskEncoderType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "data_gen.native._records.MaskEncoder",
    .tp_basicsize = sizeof(MaskEncoder),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "MaskEncoder(max_predictions, masked_lm_prob, mask_id, replacements, whole_word,"
              " cumulative_or_None, max_seq_length, max_predictions_per_seq, with_boundary,"
              " fallback, per_span, similar_or_None, with_spans)"
              "(ids, starts, segment_ids, label, units, rng)"
              " -> (record, num_masked, max_id); see masking.make_mask_and_encode",
    .tp_new = mask_encoder_new,
    .tp_dealloc = (destructor)mask_encoder_dealloc,
    .tp_call = (ternaryfunc)mask_encoder_call,
};

static PyMethodDef methods[] = {
    {"whole_word_units", py_whole_word_units, METH_VARARGS,
     "whole_word_units(starts, whole_word) -> list of (begin, end), or NotImplemented"},
    {"token_boundary", py_token_boundary, METH_O,
     "token_boundary(starts) -> list, or NotImplemented"},
    {"create_masked_lm_predictions", py_create_masked_lm_predictions, METH_VARARGS,
     "create_masked_lm_predictions(ids, starts, rng_random, num_to_predict, units, whole_word,"
     " cumulative_or_None, mask_id, replacements) -> (output_ids, positions, labels),"
     " or NotImplemented"},
    {"encode", py_encode, METH_VARARGS,
     "encode(input_ids, segment_ids, positions, masked_ids, label, boundary, max_seq_length,"
     " max_predictions_per_seq, with_boundary) -> bytes, or NotImplemented"},
    {"encode_word_ids", py_encode_word_ids, METH_VARARGS,
     "encode_word_ids(input_ids, segment_ids, starts, label, max_seq_length, whole_word)"
     " -> bytes, or NotImplemented"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "data_gen.native._records",
    "C fast paths of data_gen.modes.mlm.masking and data_gen.records.example_proto.", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__records(void)
{
    if (str_random == NULL && (str_random = PyUnicode_InternFromString("random")) == NULL)
        return NULL;
    if (PyType_Ready(&MaskEncoderType) < 0) return NULL;
    PyObject *module = PyModule_Create(&module_def);
    if (module != NULL && PyModule_AddObjectRef(module, "MaskEncoder",
                                                (PyObject *)&MaskEncoderType) < 0)
        Py_CLEAR(module);
    return module;
}
