/* data_gen.native._records, masking: the choice of positions (_select_units /
   _select_ngrams) and the corruption draws of create_masked_lm_predictions
   (per token) or mask_spans (per span), with the same rng.random() calls in
   the same order as data_gen.modes.mlm.masking. */
#include "records.h"
#include <stdlib.h>
#include <string.h>

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

/* config.ngram_cumulative (a list/tuple of at most 64 floats) into out; 1 or 0. */
int zr_read_cumulative(PyObject *cumulative, double *out, Py_ssize_t *ngram)
{
    if (!is_seq(cumulative) || (*ngram = SIZE(cumulative)) > 64) return 0;
    for (Py_ssize_t k = 0; k < *ngram; k++) {
        if (!PyFloat_CheckExact(ITEMS(cumulative)[k])) return 0;
        out[k] = PyFloat_AS_DOUBLE(ITEMS(cumulative)[k]);
    }
    return 1;
}

/* One zeroed block for `count` units and `cap` chosen positions. */
int zr_work_alloc(Work *w, const i64 *u, Py_ssize_t count, i64 cap)
{
    i64 cover = count ? u[2 * count - 1] : 0;
    w->order = zr_alloc(count + 8 * cap + cover / (i64)sizeof(i64) + 1, sizeof(i64));
    if (w->order == NULL) return -1;
    w->chosen = w->order + count;
    w->action = w->chosen + cap;
    w->left = w->action + cap;
    w->right = w->left + cap;
    w->spans = w->right + cap;
    w->covered = (char *)(w->spans + 4 * cap);
    return 0;
}

/* Random tokens at action[k .. k + n): one draw_index each. */
static int random_tokens(PyObject *random, const MaskParams *mp, i64 *action, i64 n)
{
    for (i64 k = 0; k < n; k++)
        if (draw_index(random, mp->n_replacements, &action[k]) < 0) return -1;
    return 0;
}

/* macbert: the word ids[begin:end] becomes one of its similar words (literal
   ids in action[0 .. end - begin)), or random tokens when it has none. */
static int similar_word(PyObject *random, const MaskParams *mp, i64 begin, i64 end,
                        i64 *action)
{
    PyObject *key = PyTuple_New(end - begin), *candidates, *word;
    i64 pick, value;
    if (key == NULL) return -1;
    for (i64 p = begin; p < end; p++) {
        PyObject *id = PyLong_FromLongLong(mp->ids[p]);
        if (id == NULL) { Py_DECREF(key); return -1; }
        PyTuple_SET_ITEM(key, p - begin, id);
    }
    candidates = PyDict_GetItemWithError(mp->similar, key);  /* borrowed */
    Py_DECREF(key);
    if (candidates == NULL)
        return PyErr_Occurred() ? -1 : random_tokens(random, mp, action, end - begin);
    if (!PyTuple_CheckExact(candidates) || PyTuple_GET_SIZE(candidates) == 0)
        return random_tokens(random, mp, action, end - begin);
    if (draw_index(random, PyTuple_GET_SIZE(candidates), &pick) < 0) return -1;
    word = PyTuple_GET_ITEM(candidates, pick);
    if (!PyTuple_CheckExact(word) || PyTuple_GET_SIZE(word) != end - begin) {
        PyErr_SetString(PyExc_ValueError, "similar word of another length");
        return -1;
    }
    for (i64 p = 0; p < end - begin; p++) {
        if (zr_as_i64(PyTuple_GET_ITEM(word, p), 0, &value) != 1) {
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "similar word id");
            return -1;
        }
        action[p] = ZR_LITERAL(value);
    }
    return 0;
}

/* mask_spans after the selection: spans in position order, one draw each. */
static Py_ssize_t span_decisions(const i64 *u, const MaskParams *mp, PyObject *random,
                                 Work *w, Py_ssize_t n_spans)
{
    i64 *sp = w->spans, count = 0;
    for (Py_ssize_t k = 1; k < n_spans; k++)  /* insertion sort of the 4-wide rows by begin */
        for (Py_ssize_t m = k; m > 0 && sp[4 * (m - 1)] > sp[4 * m]; m--)
            for (int c = 0; c < 4; c++) {
                i64 x = sp[4 * m + c];
                sp[4 * m + c] = sp[4 * (m - 1) + c];
                sp[4 * (m - 1) + c] = x;
            }
    for (Py_ssize_t s = 0; s < n_spans; s++) {
        i64 begin = sp[4 * s], end = sp[4 * s + 1], *action = w->action + count;
        double d;
        for (i64 p = begin; p < end; p++, count++) {
            w->chosen[count] = p;
            w->left[count] = begin - 1;
            w->right[count] = end;
        }
        if (draw(random, &d) < 0) return -1;
        if (d >= 0.9) {
            if (random_tokens(random, mp, action, end - begin) < 0) return -1;
        } else if (d >= 0.8) {
            for (i64 p = begin; p < end; p++) action[p - begin] = ZR_KEEP;
        } else if (mp->per_span == 1) {
            for (i64 p = begin; p < end; p++) action[p - begin] = ZR_MASK;
        } else {
            for (i64 unit = sp[4 * s + 2]; unit < sp[4 * s + 3]; unit++)
                if (similar_word(random, mp, u[2 * unit], u[2 * unit + 1],
                                 action + (u[2 * unit] - begin)) < 0)
                    return -1;
        }
    }
    return count;
}

static int compare_i64(const void *a, const void *b)
{
    i64 x = *(const i64 *)a, y = *(const i64 *)b;
    return (x > y) - (x < y);
}

/* _select_units or _select_ngrams, the sort, then the corruption draws of
   create_masked_lm_predictions, or mask_spans' when mp->per_span. Fills
   w->chosen (sorted), w->action (ZR_KEEP, ZR_MASK, r >= 0 replacements[r],
   ZR_LITERAL(id)) and, per span, w->left / w->right; returns the count or -1. */
Py_ssize_t zr_mask_core(const i64 *u, Py_ssize_t size, const MaskParams *mp,
                        PyObject *random, Work *w)
{
    i64 num = mp->num_to_predict, count = 0, *order = w->order, *chosen = w->chosen, j;
    Py_ssize_t n_spans = 0;
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
            i64 last = first;
            span_end = span_begin;
            for (i64 index = first; index < first + n && index < size; index++) {
                i64 begin = u[2 * index], end = u[2 * index + 1];
                if (begin != span_end && index != first) break;  /* do not cross [SEP] */
                if (w->covered[begin] || count + (end - span_begin) > num) break;
                span_end = end;
                last = index + 1;
            }
            if (span_end == span_begin) continue;
            memset(w->covered + span_begin, 1, (size_t)(span_end - span_begin));
            i64 *row = w->spans + 4 * n_spans++;
            row[0] = span_begin, row[1] = span_end, row[2] = first, row[3] = last;
        }
        for (i64 p = span_begin; p < span_end; p++) chosen[count++] = p;
    }
    if (mp->per_span && mp->cumulative != NULL)
        return span_decisions(u, mp, random, w, n_spans);
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
