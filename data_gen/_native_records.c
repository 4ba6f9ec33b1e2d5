/* C fast paths of data_gen.masking and data_gen.example_proto.

Every function gives the same values, makes the same rng.random() calls in
the same order and builds the same bytes as its Python twin. Inputs the fast
path does not take (not an exact list/tuple, items not plain ints, negative
ids, malformed units) make it return NotImplemented BEFORE any random draw,
and the caller then runs the Python reference.
*/
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef long long i64;

static PyObject *str_random;  /* interned "random" */

/* ---- inputs ------------------------------------------------------------ */

static int is_seq(PyObject *o) { return PyList_CheckExact(o) || PyTuple_CheckExact(o); }
#define SIZE PySequence_Fast_GET_SIZE
#define ITEMS PySequence_Fast_ITEMS

/* 1: *out = item, a plain int in [lo, 2**63); 0: not one; -1: error. */
static int as_i64(PyObject *item, i64 lo, i64 *out)
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

/* A list/tuple of plain ints >= lo into out; 1/0/-1 as as_i64. */
static int read_ints(PyObject *seq, i64 lo, i64 *out)
{
    Py_ssize_t n = SIZE(seq);
    PyObject **items = ITEMS(seq);
    for (Py_ssize_t i = 0; i < n; i++) {
        int ok = as_i64(items[i], lo, &out[i]);
        if (ok != 1) return ok;
    }
    return 1;
}

static void *alloc(Py_ssize_t count, size_t size)
{
    if (count < 0 || (size_t)count > (size_t)PY_SSIZE_T_MAX / size - 1) return PyErr_NoMemory();
    void *p = PyMem_Calloc((size_t)count + 1, size);
    return p ? p : PyErr_NoMemory();
}

/* A list/tuple of ints into a new array; NULL with *ok = 0 (not for the fast
   path) or -1 (error). */
static i64 *ints_of(PyObject *seq, i64 lo, int *ok)
{
    *ok = -1;
    i64 *v = alloc(SIZE(seq), sizeof(i64));
    if (v != NULL && (*ok = read_ints(seq, lo, v)) != 1) {
        PyMem_Free(v);
        v = NULL;
    }
    return v;
}

/* whole_word_units() as pairs u[2k], u[2k+1]; returns the number of units. */
static Py_ssize_t units_from_starts(const i64 *starts, Py_ssize_t n, int whole_word, i64 *u)
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
static i64 *instance_units(PyObject *units, const i64 *starts, Py_ssize_t n_starts,
                           int whole_word, Py_ssize_t n_ids, int ngrams,
                           Py_ssize_t *count, i64 *total, int *ok)
{
    *count = units == Py_None ? n_starts : SIZE(units);
    i64 *u = alloc(2 * *count, sizeof(i64));
    *ok = u == NULL ? -1 : 1;
    if (u != NULL && units == Py_None)
        *count = units_from_starts(starts, n_starts, whole_word, u);
    for (Py_ssize_t k = 0; u != NULL && units != Py_None && *ok == 1 && k < *count; k++) {
        PyObject *pair = ITEMS(units)[k];
        *ok = is_seq(pair) && SIZE(pair) == 2 ? read_ints(pair, 0, u + 2 * k) : 0;
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

/* ---- masking ------------------------------------------------------------- */

static int draw(PyObject *random, double *out)
{
    PyObject *r = PyObject_CallNoArgs(random);
    if (r == NULL) return -1;
    int is_float = PyFloat_Check(r);
    if (is_float) *out = PyFloat_AS_DOUBLE(r);
    else PyErr_SetString(PyExc_TypeError, "rng.random() must return a float");
    Py_DECREF(r);
    return is_float ? 0 : -1;
}

/* int(random() * size), used as an index into `size` items. */
static int draw_index(PyObject *random, i64 size, i64 *out)
{
    double d;
    if (draw(random, &d) < 0) return -1;
    double x = d * (double)size;  /* the IEEE product, truncated as int() does */
    if (!(x >= 0.0) || x >= (double)size) {
        PyErr_SetString(PyExc_IndexError, "list index out of range");
        return -1;
    }
    *out = (i64)x;
    return 0;
}

typedef struct {
    i64 num_to_predict;
    const double *cumulative;  /* NULL: _select_units, else _select_ngrams */
    Py_ssize_t ngram;          /* len(cumulative) */
    i64 n_replacements;
} MaskParams;

/* config.ngram_cumulative (a list/tuple of at most 64 floats) into out; 1 or 0. */
static int read_cumulative(PyObject *cumulative, double *out, Py_ssize_t *ngram)
{
    if (!is_seq(cumulative) || (*ngram = SIZE(cumulative)) > 64) return 0;
    for (Py_ssize_t k = 0; k < *ngram; k++) {
        if (!PyFloat_CheckExact(ITEMS(cumulative)[k])) return 0;
        out[k] = PyFloat_AS_DOUBLE(ITEMS(cumulative)[k]);
    }
    return 1;
}

typedef struct { i64 *order, *chosen, *action; char *covered; } Work;

/* One zeroed block for `count` units and `cap` chosen positions. */
static int work_alloc(Work *w, const i64 *u, Py_ssize_t count, i64 cap)
{
    i64 cover = count ? u[2 * count - 1] : 0;
    w->order = alloc(count + 2 * cap + cover / (i64)sizeof(i64) + 1, sizeof(i64));
    if (w->order == NULL) return -1;
    w->chosen = w->order + count;
    w->action = w->chosen + cap;
    w->covered = (char *)(w->action + cap);
    return 0;
}

static int compare_i64(const void *a, const void *b)
{
    i64 x = *(const i64 *)a, y = *(const i64 *)b;
    return (x > y) - (x < y);
}

/* _select_units or _select_ngrams, the sort, then the corruption draws of
   create_masked_lm_predictions. Fills w->chosen (sorted) and w->action (-2
   keep, -1 [MASK], r >= 0 replacements[r]); returns the count or -1. */
static Py_ssize_t mask_core(const i64 *u, Py_ssize_t size, const MaskParams *mp,
                            PyObject *random, Work *w)
{
    i64 num = mp->num_to_predict, count = 0, *order = w->order, *chosen = w->chosen, j;
    for (Py_ssize_t i = 0; i < size; i++) order[i] = i;  /* lazily shuffled (Fisher-Yates) */
    for (Py_ssize_t i = 0; i < size && count < num; i++) {
        if (draw_index(random, size - i, &j) < 0) return -1;
        i64 first = order[i + j], span_begin, span_end;
        order[i + j] = order[i];
        order[i] = first;
        span_begin = u[2 * first];
        if (mp->cumulative == NULL) {  /* whole units while they fit */
            span_end = u[2 * first + 1];
            if (count + span_end - span_begin > num) continue;
        } else {
            double d;
            Py_ssize_t n = mp->ngram;
            if (w->covered[span_begin]) continue;
            if (draw(random, &d) < 0) return -1;
            for (Py_ssize_t k = mp->ngram - 1; k >= 0; k--)  /* _draw_n: the first bound > d */
                if (d < mp->cumulative[k]) n = k + 1;
            span_end = span_begin;
            for (i64 index = first; index < first + n && index < size; index++) {
                i64 begin = u[2 * index], end = u[2 * index + 1];
                if (begin != span_end && index != first) break;  /* do not cross [SEP] */
                if (w->covered[begin] || count + (end - span_begin) > num) break;
                span_end = end;
            }
            if (span_end == span_begin) continue;
            memset(w->covered + span_begin, 1, (size_t)(span_end - span_begin));
        }
        for (i64 p = span_begin; p < span_end; p++) chosen[count++] = p;
    }
    if (count > 64)
        qsort(chosen, (size_t)count, sizeof(i64), compare_i64);
    for (i64 k = 1; k < count && count <= 64; k++)  /* insertion sort: no malloc */
        for (i64 m = k, x = chosen[k]; m > 0 && chosen[m - 1] > x; m--) {
            chosen[m] = chosen[m - 1];
            chosen[m - 1] = x;
        }
    for (i64 k = 0; k < count; k++) {
        double d;
        if (draw(random, &d) < 0) return -1;
        w->action[k] = d < 0.8 ? -1 : -2;
        if (d >= 0.9 && draw_index(random, mp->n_replacements, &w->action[k]) < 0) return -1;
    }
    return count;
}

/* ---- Example encoding ---------------------------------------------------- */

typedef struct {
    const char *name;
    char tag;                  /* 0x1a Int64List, 0x12 FloatList */
    const i64 *values;         /* payload: packed varints, */
    Py_ssize_t n;
    const char *fill;          /* then `fills` copies of fill[0:fill_len], */
    Py_ssize_t fill_len, fills;
    Py_ssize_t zeros;          /* then zero bytes */
    Py_ssize_t len[4];         /* payload, Int64List/FloatList, Feature, map entry */
} Feature;

static Py_ssize_t varint_len(unsigned long long v)
{
    Py_ssize_t n = 1;
    for (; v >= 0x80; v >>= 7) n++;
    return n;
}

static char *put_varint(char *p, unsigned long long v)
{
    for (; v >= 0x80; v >>= 7) *p++ = (char)((v & 0x7f) | 0x80);
    *p++ = (char)v;
    return p;
}

/* f->len as _feature_entry computes them; returns the entry's size in Features. */
static Py_ssize_t feature_size(Feature *f)
{
    Py_ssize_t *len = f->len;
    len[0] = f->fill_len * f->fills + f->zeros;
    for (Py_ssize_t i = 0; i < f->n; i++) len[0] += varint_len((unsigned long long)f->values[i]);
    len[1] = 1 + varint_len(len[0]) + len[0];
    len[2] = 1 + varint_len(len[1]) + len[1];
    len[3] = 2 + (Py_ssize_t)strlen(f->name) + 1 + varint_len(len[2]) + len[2];
    return 1 + varint_len(len[3]) + len[3];
}

static char *put_feature(char *p, const Feature *f)
{
    size_t name_len = strlen(f->name);
    *p++ = 0x0a, p = put_varint(p, f->len[3]);              /* map entry */
    *p++ = 0x0a, *p++ = (char)name_len;                      /* key */
    memcpy(p, f->name, name_len), p += name_len;
    *p++ = 0x12, p = put_varint(p, f->len[2]);              /* value: Feature */
    *p++ = f->tag, p = put_varint(p, f->len[1]);            /* Int64List / FloatList */
    *p++ = 0x0a, p = put_varint(p, f->len[0]);              /* packed values */
    for (Py_ssize_t i = 0; i < f->n; i++) p = put_varint(p, (unsigned long long)f->values[i]);
    if (f->fill_len == 1) memset(p, f->fill[0], f->fills);
    for (Py_ssize_t i = 0; i < f->fills && f->fill_len > 1; i++)
        memcpy(p + i * f->fill_len, f->fill, f->fill_len);
    p += f->fill_len * f->fills;
    memset(p, 0, f->zeros);
    return p + f->zeros;
}

typedef struct { const i64 *v; Py_ssize_t n; } Ints;
typedef struct {
    Ints input_ids, segment_ids, positions, masked_ids, boundary;
    i64 label;
    Py_ssize_t max_len, max_pred;
    int with_boundary;
} Instance;

/* The ValueErrors of InstanceEncoder.encode. */
static int check_sizes(Py_ssize_t seq_len, Py_ssize_t num_masked, Py_ssize_t max_len,
                       Py_ssize_t max_pred)
{
    if (seq_len > max_len)
        PyErr_Format(PyExc_ValueError, "instance of %zd tokens exceeds max_seq_length %zd",
                     seq_len, max_len);
    else if (num_masked > max_pred)
        PyErr_Format(PyExc_ValueError, "%zd predictions exceed max_predictions_per_seq %zd",
                     num_masked, max_pred);
    else
        return 0;
    return -1;
}

static Py_ssize_t pad(Py_ssize_t length, Py_ssize_t n) { return length > n ? length - n : 0; }

/* InstanceEncoder.encode after check_sizes: features in sorted key order. */
static PyObject *encode_instance(const Instance *in)
{
    static const char float_one[4] = {0x00, 0x00, (char)0x80, 0x3f};
    Py_ssize_t seq_len = in->input_ids.n, num_masked = in->positions.n, body = 0;
    Feature f[8] = {
        {"input_ids", 0x1a, in->input_ids.v, seq_len, NULL, 0, 0, pad(in->max_len, seq_len), {0}},
        {"input_mask", 0x1a, NULL, 0, "\x01", 1, seq_len, in->max_len - seq_len, {0}},
        {"masked_lm_ids", 0x1a, in->masked_ids.v, in->masked_ids.n, NULL, 0, 0,
         pad(in->max_pred, in->masked_ids.n), {0}},
        {"masked_lm_positions", 0x1a, in->positions.v, num_masked, NULL, 0, 0,
         pad(in->max_pred, num_masked), {0}},
        {"masked_lm_weights", 0x12, NULL, 0, float_one, 4, num_masked,
         4 * (in->max_pred - num_masked), {0}},
        {"next_sentence_labels", 0x1a, &in->label, 1, NULL, 0, 0, 0, {0}},
        {"segment_ids", 0x1a, in->segment_ids.v, in->segment_ids.n, NULL, 0, 0,
         pad(in->max_len, in->segment_ids.n), {0}},
        {"token_boundary", 0x1a, in->boundary.v, in->boundary.n, NULL, 0, 0,
         pad(in->max_len, in->boundary.n), {0}},
    };
    int count = in->with_boundary ? 8 : 7;
    for (int i = 0; i < count; i++) body += feature_size(&f[i]);
    PyObject *out = PyBytes_FromStringAndSize(NULL, 1 + varint_len(body) + body);
    if (out == NULL) return NULL;
    char *p = PyBytes_AS_STRING(out);
    *p++ = 0x0a;
    p = put_varint(p, body);
    for (int i = 0; i < count; i++) p = put_feature(p, &f[i]);
    return out;
}

/* ---- module functions ---------------------------------------------------- */

static PyObject *py_whole_word_units(PyObject *module, PyObject *args)
{
    PyObject *starts, *result = NULL;
    int whole_word, ok;
    (void)module;
    if (!PyArg_ParseTuple(args, "Op", &starts, &whole_word)) return NULL;
    if (!is_seq(starts)) Py_RETURN_NOTIMPLEMENTED;
    Py_ssize_t n = SIZE(starts);
    i64 *s = ints_of(starts, LLONG_MIN, &ok), *u = s ? alloc(2 * n, sizeof(i64)) : NULL;
    if (u != NULL) {
        Py_ssize_t count = units_from_starts(s, n, whole_word, u);
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
    MaskParams mp = {0, NULL, 0, 0};
    Work w = {NULL, NULL, NULL, NULL};
    Py_ssize_t count, num;
    (void)module;
    if (!PyArg_ParseTuple(args, "OOOLOpOOO", &ids, &starts, &random, &mp.num_to_predict,
                          &units, &whole_word, &cumulative, &mask_id, &replacements))
        return NULL;
    if (!is_seq(ids) || !is_seq(replacements) || !is_seq(units == Py_None ? starts : units) ||
        (cumulative != Py_None && !read_cumulative(cumulative, cumul, &mp.ngram)))
        Py_RETURN_NOTIMPLEMENTED;
    mp.cumulative = cumulative == Py_None ? NULL : cumul;
    mp.n_replacements = SIZE(replacements);
    if (units == Py_None && (s = ints_of(starts, LLONG_MIN, &ok)) == NULL) goto done;
    u = instance_units(units, s, s ? SIZE(starts) : 0, whole_word, SIZE(ids),
                       mp.cumulative != NULL, &count, &total, &ok);
    cap = mp.num_to_predict < total ? mp.num_to_predict : total;
    if (u == NULL || work_alloc(&w, u, count, cap < 0 ? 0 : cap) < 0 ||
        (output = PySequence_List(ids)) == NULL)
        goto done;
    num = mask_core(u, count, &mp, random, &w);
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
    if (check_sizes(SIZE(seq[0]), SIZE(seq[2]), in.max_len, in.max_pred) < 0) return NULL;
    if (!is_seq(seq[1]) || !is_seq(seq[3]) || (in.with_boundary && !is_seq(seq[4])))
        Py_RETURN_NOTIMPLEMENTED;
    Ints *fields[5] = {&in.input_ids, &in.segment_ids, &in.positions, &in.masked_ids,
                       &in.boundary};
    if ((ok = as_i64(label, 0, &in.label)) != 1) goto done;
    for (int i = 0; i < 4 + in.with_boundary; i++) {
        if ((v[i] = ints_of(seq[i], 0, &ok)) == NULL) goto done;
        fields[i]->v = v[i];
        fields[i]->n = SIZE(seq[i]);
    }
    result = encode_instance(&in);
done:
    for (int i = 0; i < 5; i++) PyMem_Free(v[i]);
    if (ok == 0) Py_RETURN_NOTIMPLEMENTED;
    return result;
}

/* ---- the fused per-instance call ----------------------------------------- */

typedef struct {
    PyObject_HEAD
    i64 max_predictions, mask_id, *replacements;
    double masked_lm_prob, cumulative[64];
    Py_ssize_t n_replacements, ngram, max_len, max_pred;
    int whole_word, with_boundary;
    PyObject *fallback;
} MaskEncoder;

static void mask_encoder_dealloc(MaskEncoder *self)
{
    PyMem_Free(self->replacements);
    Py_XDECREF(self->fallback);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *mask_encoder_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    PyObject *replacements, *cumulative, *fallback;
    MaskEncoder *self = (MaskEncoder *)type->tp_alloc(type, 0);
    int ok;
    (void)kwargs;
    if (self == NULL) return NULL;
    if (!PyArg_ParseTuple(args, "LdLOpOnnpO", &self->max_predictions, &self->masked_lm_prob,
                          &self->mask_id, &replacements, &self->whole_word, &cumulative,
                          &self->max_len, &self->max_pred, &self->with_boundary, &fallback))
        goto fail;
    Py_INCREF(fallback);
    self->fallback = fallback;
    self->ngram = -1;
    if (!PyCallable_Check(fallback) || self->mask_id < 0 || !is_seq(replacements) ||
        (cumulative != Py_None && !read_cumulative(cumulative, self->cumulative, &self->ngram))) {
        PyErr_SetString(PyExc_ValueError, "MaskEncoder: parameters the C path does not take");
        goto fail;
    }
    self->n_replacements = SIZE(replacements);
    if ((self->replacements = ints_of(replacements, 0, &ok)) != NULL) return (PyObject *)self;
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
    Work w = {NULL, NULL, NULL, NULL};
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
                     self->n_replacements};
    if ((ok = as_i64(label_obj, 0, &label)) != 1 || (v = ints_of(ids, 0, &ok)) == NULL ||
        (s = ints_of(starts, LLONG_MIN, &ok)) == NULL || (g = ints_of(segments, 0, &ok)) == NULL)
        goto done;
    u = instance_units(units, s, n_starts, self->whole_word, n, mp.cumulative != NULL,
                       &count, &total, &ok);
    cap = mp.num_to_predict < total ? mp.num_to_predict : total;
    /* w.action gets room for labels [cap] and boundary [n_starts] after it. */
    if (u == NULL || work_alloc(&w, u, count, (cap < 0 ? 0 : cap) * 2 + n_starts) < 0 ||
        (random = PyObject_GetAttr(rng, str_random)) == NULL ||
        (num = mask_core(u, count, &mp, random, &w)) < 0)
        goto done;
    i64 *labels = w.action + num, *boundary = labels + num;
    for (Py_ssize_t k = 0; k < num; k++) {  /* labels before any replacement */
        labels[k] = v[w.chosen[k]];
        max_id = labels[k] > max_id ? labels[k] : max_id;
    }
    for (Py_ssize_t k = 0; k < num; k++)
        if (w.action[k] != -2)
            v[w.chosen[k]] = w.action[k] == -1 ? self->mask_id : self->replacements[w.action[k]];
    for (Py_ssize_t i = 0; i < n; i++) max_id = v[i] > max_id ? v[i] : max_id;
    for (Py_ssize_t i = 0; self->with_boundary && i < n_starts; i++) boundary[i] = s[i] != 0;
    if (check_sizes(n, num, self->max_len, self->max_pred) < 0) goto done;
    Instance in = {{v, n}, {g, SIZE(segments)}, {w.chosen, num}, {labels, num},
                   {boundary, n_starts}, label, self->max_len, self->max_pred,
                   self->with_boundary};
    if ((record = encode_instance(&in)) != NULL)
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
    .tp_name = "data_gen._native_records.MaskEncoder",
    .tp_basicsize = sizeof(MaskEncoder),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "MaskEncoder(max_predictions, masked_lm_prob, mask_id, replacements, whole_word,"
              " cumulative_or_None, max_seq_length, max_predictions_per_seq, with_boundary,"
              " fallback)(ids, starts, segment_ids, label, units, rng)"
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
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "data_gen._native_records",
    "C fast paths of data_gen.masking and data_gen.example_proto.", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__native_records(void)
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
