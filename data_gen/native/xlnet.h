/* Private header of data_gen.native._xlnet (see data_gen/native/_xlnet.c). */
#ifndef ZH_PRETRAIN_XLNET_H
#define ZH_PRETRAIN_XLNET_H
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#define MAX_SPAN_TABLE 16

typedef struct { PyObject *random, *getrandbits; } Rng;

typedef struct {
    int64_t *ids;
    unsigned char *codes;              /* word starts: 0, 1 (> 0), 2 (-1), 3 (< -1) */
    Py_ssize_t n;
    Py_ssize_t *sent, n_sent;          /* sentence starts */
    Py_ssize_t *ub, *ue, n_units;      /* whole-word units [ub, ue) */
} Stream;

typedef struct {
    Py_ssize_t seq, reuse, total, goal, alpha, beta, n_cum;
    int64_t sep, cls;
    double cum[MAX_SPAN_TABLE];        /* xlnet_masking._SPAN_CUMULATIVE */
} Recipe;

/* A part's units in record positions and which are taken. */
typedef struct {
    Py_ssize_t *b, *e, n;
    unsigned char *taken;
} Part;

typedef struct {
    Part reuse, rest;
    Py_ssize_t *free, *lengths;        /* top_up's free units; counts by length <= goal */
    unsigned char *reach, *is_masked, *seg, *input, *target;
} Work;

/* _xlnet.c: rng.random(); int(x * n) as an index below n; bisect.bisect_left. */
int xlnet_draw(Rng *r, double *out);
int xlnet_pick_index(double x, Py_ssize_t n, Py_ssize_t *out);
Py_ssize_t xlnet_bisect_left(const Py_ssize_t *a, Py_ssize_t n, Py_ssize_t x);

/* xlnet_mask.c: choose_is_masked over w->reuse and w->rest into w->is_masked:
   1 chosen, 0 too few words (the record is dropped), -1 error. */
int xlnet_choose_is_masked(const Recipe *rc, Work *w, Rng *r);

/* xlnet_encode.c: the serialized record of one window (XLNetEncoder.encode);
   *max_id = its largest id. */
PyObject *xlnet_encode_record(const Stream *s, const Recipe *rc, Work *w, Py_ssize_t window,
                              Py_ssize_t a_end, Py_ssize_t b_begin, Py_ssize_t b_end, int label,
                              int64_t *max_id);
#endif
