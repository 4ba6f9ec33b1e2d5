/* Private header of data_gen.native._records: the types and the zr_ functions
   shared by its translation units (records_input.c, records_mask.c,
   records_encode.c and data_gen/native/_records.c). Not a public API. */
#ifndef ZR_RECORDS_H
#define ZR_RECORDS_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* Shared between the module's files, not exported from the shared object. */
#if defined(__GNUC__)
#define ZR_INTERNAL __attribute__((visibility("hidden")))
#else
#define ZR_INTERNAL
#endif

typedef long long i64;

static inline int is_seq(PyObject *o) { return PyList_CheckExact(o) || PyTuple_CheckExact(o); }
#define SIZE PySequence_Fast_GET_SIZE
#define ITEMS PySequence_Fast_ITEMS

/* ---- inputs (records_input.c) ------------------------------------------- */

ZR_INTERNAL int zr_as_i64(PyObject *item, i64 lo, i64 *out);
ZR_INTERNAL int zr_read_ints(PyObject *seq, i64 lo, i64 *out);
ZR_INTERNAL void *zr_alloc(Py_ssize_t count, size_t size);
ZR_INTERNAL i64 *zr_ints_of(PyObject *seq, i64 lo, int *ok);
ZR_INTERNAL Py_ssize_t zr_units_from_starts(const i64 *starts, Py_ssize_t n, int whole_word,
                                            i64 *u);
ZR_INTERNAL i64 *zr_instance_units(PyObject *units, const i64 *starts, Py_ssize_t n_starts,
                                   int whole_word, Py_ssize_t n_ids, int ngrams,
                                   Py_ssize_t *count, i64 *total, int *ok);

/* ---- masking (records_mask.c) -------------------------------------------- */

typedef struct {
    i64 num_to_predict;
    const double *cumulative;  /* NULL: _select_units, else _select_ngrams */
    Py_ssize_t ngram;          /* len(cumulative) */
    i64 n_replacements;
    int per_span;              /* 0 per token, 1 per span [MASK], 2 per span similar words */
    PyObject *similar;         /* per_span 2: dict {ids tuple: tuple of id tuples} */
    const i64 *ids;            /* per_span 2: the instance's ids (the similar-word keys) */
} MaskParams;

/* chosen/action/left/right: one entry per chosen position; spans: 4 per span. */
typedef struct { i64 *order, *chosen, *action, *left, *right, *spans; char *covered; } Work;

/* action values: keep, [MASK], replacements[r] (r >= 0), or a literal id. */
#define ZR_KEEP (-2)
#define ZR_MASK (-1)
#define ZR_LITERAL(id) (-3 - (id))

ZR_INTERNAL int zr_read_cumulative(PyObject *cumulative, double *out, Py_ssize_t *ngram);
ZR_INTERNAL int zr_work_alloc(Work *w, const i64 *u, Py_ssize_t count, i64 cap);
ZR_INTERNAL Py_ssize_t zr_mask_core(const i64 *u, Py_ssize_t size, const MaskParams *mp,
                                    PyObject *random, Work *w);

/* ---- Example encoding (records_encode.c) --------------------------------- */

typedef struct { const i64 *v; Py_ssize_t n; } Ints;
typedef struct {
    Ints input_ids, segment_ids, positions, masked_ids, boundary, span_left, span_right;
    i64 label;
    Py_ssize_t max_len, max_pred;
    int with_boundary, with_spans;
} Instance;

ZR_INTERNAL int zr_check_sizes(Py_ssize_t seq_len, Py_ssize_t num_masked, Py_ssize_t max_len,
                               Py_ssize_t max_pred);
ZR_INTERNAL PyObject *zr_encode_instance(const Instance *in);
ZR_INTERNAL void zr_word_ids(const i64 *starts, Py_ssize_t n, int whole_word, i64 *out);
ZR_INTERNAL PyObject *zr_encode_word_ids(const Ints *input_ids, const Ints *segment_ids,
                                         const i64 *word_ids, i64 label, Py_ssize_t max_len);

#endif
