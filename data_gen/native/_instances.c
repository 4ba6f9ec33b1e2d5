/* C fast path of data_gen.modes.mlm.instances.create_pair_instances over a whole chunk.

build_pair_instances() runs every dupe pass over every document as the loop
in data_gen.modes.mlm.instances.create_all_pair_instances does, with the same
rng.random() and rng.getrandbits() calls in the same order (randint and
randrange are reproduced as random.py's _randbelow), and returns the same
list of (ids, starts, segment_ids, label) tuples; ids and starts hold the
very objects of the input lists. Inputs it does not take (documents that are
not lists/tuples of (ids, starts) pairs of equal-length lists of plain ints,
max_seq_length < 4) make it return NotImplemented BEFORE any draw, and the
caller then runs the Python reference; the caller also checks the other
arguments (rng a random.Random with no draw overridden, account a Counter or
dict). Sentences are views into the input lists, which no code run during
the call can resize: nothing is copied before an instance is assembled.
The cyclic collector is paused during the call (see py_build_pair_instances).
*/
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>
#include "py_random.h"
#if PY_VERSION_HEX < 0x030A0000  /* Python 3.9: no PyGC_Disable; the collector stays on */
#define PyGC_Disable() 0
#define PyGC_Enable() ((void)0)
#endif

static PyObject *zero, *one, *minus_one, *too_short_key;
static PyObject *str_random, *str_getrandbits;

/* A run of tokens: a sentence, a piece of a long sentence or a part of one. */
typedef struct {
    PyObject **ids, **starts;
    const unsigned char *codes; /* per start: 0, 1, or 2 (any other value) */
    Py_ssize_t len;
    int force;                  /* starts[0] reads as a new 1 */
} Piece;

/* Consecutive pieces read as one token sequence (_concat). */
typedef struct { const Piece *p; Py_ssize_t n, len; } Seq;

typedef struct {
    Piece *sents;            /* the document as given (NSP's random next) */
    Py_ssize_t n_sents;
    Py_ssize_t first, n;     /* its pieces after split_long_sentence */
} Doc;

typedef struct {
    Doc *docs;
    Py_ssize_t n_docs;
    Piece *sents, *pieces;
    unsigned char *codes;
    Py_ssize_t n_pieces, cap;
} Chunk;

typedef struct { PyObject *rng, *random, *getrandbits; } Rng;

/* ---- random.py ---------------------------------------------------------- */

static int draw(Rng *r, double *out) { return py_random_draw(r->random, out); }

static int below(Rng *r, Py_ssize_t n, Py_ssize_t *out)
{
    return py_random_below(r->getrandbits, n, out);
}

/* rng.randint(a, b); an empty range is left to random.py to raise its error. */
static int randint(Rng *r, Py_ssize_t a, Py_ssize_t b, Py_ssize_t *out)
{
    if (b < a) {
        PyObject *x = PyObject_CallMethod(r->rng, "randint", "nn", a, b);
        if (x != NULL) {
            Py_DECREF(x);
            PyErr_SetString(PyExc_RuntimeError, "randint() took an empty range");
        }
        return -1;
    }
    if (below(r, b - a + 1, out) < 0) return -1;
    *out += a;
    return 0;
}

/* ---- reading the chunk --------------------------------------------------- */

static int is_seq(PyObject *o) { return PyList_CheckExact(o) || PyTuple_CheckExact(o); }
#define SIZE PySequence_Fast_GET_SIZE
#define ITEMS PySequence_Fast_ITEMS

/* The (ids, starts) lists of a sentence, or 0 if not for the fast path. */
static int sentence_lists(PyObject *sentence, PyObject **ids, PyObject **starts)
{
    if (!is_seq(sentence) || SIZE(sentence) != 2) return 0;
    *ids = ITEMS(sentence)[0];
    *starts = ITEMS(sentence)[1];
    if (!PyList_CheckExact(*ids) || !PyList_CheckExact(*starts) ||
        PyList_GET_SIZE(*ids) != PyList_GET_SIZE(*starts))
        return 0;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(*ids); i++)
        if (!PyLong_CheckExact(PyList_GET_ITEM(*ids, i)) ||
            !PyLong_CheckExact(PyList_GET_ITEM(*starts, i)))
            return 0;
    return 1;
}

static unsigned char start_code(PyObject *start)  /* a plain int */
{
    int overflow = 0;
    if (start == zero) return 0;
    if (start == one) return 1;
    long value = PyLong_AsLongAndOverflow(start, &overflow);
    return overflow ? 2 : value == 0 ? 0 : value == 1 ? 1 : 2;
}

static int push(Chunk *c, Piece piece)
{
    if (c->n_pieces == c->cap) {
        Py_ssize_t cap = c->cap ? 2 * c->cap : 64;
        Piece *grown = PyMem_Realloc(c->pieces, (size_t)cap * sizeof(Piece));
        if (grown == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        c->pieces = grown;
        c->cap = cap;
    }
    c->pieces[c->n_pieces++] = piece;
    return 0;
}

/* _cut_point(starts, begin, limit), limit >= 1. */
static Py_ssize_t cut_point(const Piece *s, Py_ssize_t begin, Py_ssize_t limit)
{
    Py_ssize_t end = begin + limit, cut;
    if (end >= s->len) return s->len;
    for (cut = end; cut > begin && s->codes[cut] == 0; cut--) {}
    return cut > begin ? cut : end;
}

/* Reads the documents and splits their sentences as split_long_sentence
   does; 1 done, 0 not for the fast path, -1 error. */
static int read_chunk(PyObject *documents, Py_ssize_t limit, Chunk *c)
{
    Py_ssize_t n_sents = 0, n_tokens = 0, k = 0, t = 0;
    PyObject *ids, *starts;
    if (!is_seq(documents)) return 0;
    c->n_docs = SIZE(documents);
    for (Py_ssize_t d = 0; d < c->n_docs; d++) {
        PyObject *document = ITEMS(documents)[d];
        if (!is_seq(document)) return 0;
        for (Py_ssize_t j = 0; j < SIZE(document); j++) {
            if (!sentence_lists(ITEMS(document)[j], &ids, &starts)) return 0;
            n_tokens += PyList_GET_SIZE(ids);
        }
        n_sents += SIZE(document);
    }
    c->docs = PyMem_Calloc((size_t)c->n_docs + 1, sizeof(Doc));
    c->sents = PyMem_Calloc((size_t)n_sents + 1, sizeof(Piece));
    c->codes = PyMem_Malloc((size_t)n_tokens + 1);
    if (c->docs == NULL || c->sents == NULL || c->codes == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t d = 0; d < c->n_docs; d++) {
        PyObject *document = ITEMS(documents)[d];
        Doc *doc = &c->docs[d];
        doc->sents = &c->sents[k];
        doc->n_sents = SIZE(document);
        doc->first = c->n_pieces;
        for (Py_ssize_t j = 0; j < doc->n_sents; j++, k++) {
            Piece *s = &c->sents[k];
            sentence_lists(ITEMS(document)[j], &ids, &starts);
            s->ids = ((PyListObject *)ids)->ob_item;
            s->starts = ((PyListObject *)starts)->ob_item;
            s->len = PyList_GET_SIZE(ids);
            s->codes = c->codes + t;
            for (Py_ssize_t i = 0; i < s->len; i++) c->codes[t++] = start_code(s->starts[i]);
            if (s->len <= limit) {
                if (push(c, *s) < 0) return -1;
                continue;
            }
            for (Py_ssize_t begin = 0, cut; begin < s->len; begin = cut) {
                cut = cut_point(s, begin, limit);
                Piece piece = {s->ids + begin, s->starts + begin, s->codes + begin,
                               cut - begin, s->codes[begin] == 0};
                if (push(c, piece) < 0) return -1;
            }
        }
        doc->n = c->n_pieces - doc->first;
    }
    return 1;
}

/* ---- instances ------------------------------------------------------------ */

/* seq[front:front + length] into out_ids/out_starts, with _trimmed's first
   start made 1 if it is 0. New references. */
static void write_seq(const Seq *seq, Py_ssize_t front, Py_ssize_t length,
                      PyObject **out_ids, PyObject **out_starts)
{
    Py_ssize_t p = 0, j = front;
    for (Py_ssize_t k = 0; k < length; k++, j++) {
        while (j >= seq->p[p].len) {
            j -= seq->p[p].len;
            p++;
        }
        const Piece *piece = &seq->p[p];
        int forced = j == 0 && piece->force;
        PyObject *start = forced ? one : piece->starts[j];
        if (k == 0 && !forced && piece->codes[j] == 0) start = one;
        out_ids[k] = piece->ids[j];
        out_starts[k] = start;
        Py_INCREF(out_ids[k]);
        Py_INCREF(start);
    }
}

static void fill(PyObject **items, Py_ssize_t count, PyObject *value)
{
    for (Py_ssize_t k = 0; k < count; k++) {
        Py_INCREF(value);
        items[k] = value;
    }
}

/* truncate_seq_pair, then _assemble appended to out if A and B are left. */
static int add_instance(PyObject *out, Seq a, Seq b, Py_ssize_t max_tokens, int label, Rng *r,
                        PyObject *cls_id, PyObject *sep_id)
{
    Py_ssize_t la = a.len, lb = b.len, fa = 0, fb = 0;
    double d;
    while (la + lb > max_tokens) {
        if (la > lb) {
            la--;
            if (draw(r, &d) < 0) return -1;
            fa += d < 0.5;
        } else {
            lb--;
            if (draw(r, &d) < 0) return -1;
            fb += d < 0.5;
        }
    }
    if (la == 0 || lb == 0) return 0;
    Py_ssize_t total = la + lb + 3;
    PyObject *ids = PyList_New(total), *starts = PyList_New(total);
    PyObject *segments = PyList_New(total), *instance = NULL;
    if (ids == NULL || starts == NULL || segments == NULL) goto done;
    PyObject **i = ((PyListObject *)ids)->ob_item, **s = ((PyListObject *)starts)->ob_item;
    fill(i, 1, cls_id);
    fill(s, 1, minus_one);
    write_seq(&a, fa, la, i + 1, s + 1);
    fill(i + la + 1, 1, sep_id);
    fill(s + la + 1, 1, minus_one);
    write_seq(&b, fb, lb, i + la + 2, s + la + 2);
    fill(i + total - 1, 1, sep_id);
    fill(s + total - 1, 1, minus_one);
    fill(((PyListObject *)segments)->ob_item, la + 2, zero);
    fill(((PyListObject *)segments)->ob_item + la + 2, lb + 1, one);
    instance = PyTuple_Pack(4, ids, starts, segments, label ? one : zero);
done:
    Py_XDECREF(ids);
    Py_XDECREF(starts);
    Py_XDECREF(segments);
    if (instance == NULL) return -1;
    int status = PyList_Append(out, instance);
    Py_DECREF(instance);
    return status;
}

/* _split_inside: cut a piece of >= 2 tokens at a random unit boundary. */
static int split_inside(const Piece *piece, Rng *r, Piece *a, Piece *b)
{
    Py_ssize_t count = 0, pick, cut = 0;
    for (Py_ssize_t i = 1; i < piece->len; i++) count += piece->codes[i] == 1;
    if (below(r, count ? count : piece->len - 1, &pick) < 0) return -1;
    if (count == 0) {
        cut = pick + 1;
    } else {
        for (cut = 1; !(piece->codes[cut] == 1 && pick-- == 0); cut++) {}
    }
    *a = *piece;
    a->len = cut;
    *b = (Piece){piece->ids + cut, piece->starts + cut, piece->codes + cut, piece->len - cut, 1};
    return 0;
}

static Seq seq_of(const Piece *p, Py_ssize_t n)
{
    Seq seq = {p, n, 0};
    for (Py_ssize_t k = 0; k < n; k++) seq.len += p[k].len;
    return seq;
}

static int count_too_short(PyObject *account)  /* account[key] += 1 */
{
    PyObject *value = PyObject_GetItem(account, too_short_key), *sum = NULL;
    if (value != NULL) sum = PyNumber_InPlaceAdd(value, one);
    Py_XDECREF(value);
    int status = sum == NULL ? -1 : PyObject_SetItem(account, too_short_key, sum);
    Py_XDECREF(sum);
    return status;
}

/* create_pair_instances(documents, index, ...) appended to out. */
static int document_instances(const Chunk *c, Py_ssize_t index, Py_ssize_t max_tokens,
                              double short_seq_prob, int nsp, Rng *r, PyObject *account,
                              PyObject *cls_id, PyObject *sep_id, PyObject *out)
{
    const Piece *pieces = c->pieces + c->docs[index].first;
    Py_ssize_t n = c->docs[index].n, target = max_tokens, chunk = 0, length = 0, i;
    double d;
    if (draw(r, &d) < 0) return -1;
    if (d < short_seq_prob && randint(r, 2, max_tokens, &target) < 0) return -1;
    for (i = 0; i < n; i++) {
        length += pieces[i].len;
        if (i != n - 1 && length < target) continue;
        Py_ssize_t count = i - chunk + 1, a_end = 1, other = -1;
        int label = 0;
        Piece pa, pb;
        Seq a, b;
        if (nsp && c->n_docs >= 2) {  /* _other_document */
            if (below(r, c->n_docs - 1, &other) < 0) return -1;
            other += other >= index;
        }
        if (count == 1 && other < 0) {
            if (length < 2) {
                if (count_too_short(account) < 0) return -1;
                chunk = i + 1;
                length = 0;
                continue;
            }
            if (split_inside(&pieces[chunk], r, &pa, &pb) < 0) return -1;
            a = seq_of(&pa, 1);
            b = seq_of(&pb, 1);
            if (!nsp && draw(r, &d) < 0) return -1;
            if (!nsp && d < 0.5) {
                Seq t = a;
                a = b, b = t, label = 1;
            }
        } else {
            if (count >= 2 && randint(r, 1, count - 1, &a_end) < 0) return -1;
            a = seq_of(&pieces[chunk], a_end);
            int random_next = other >= 0;
            if (random_next && count != 1) {
                if (draw(r, &d) < 0) return -1;
                random_next = d < 0.5;
            }
            if (random_next) {
                const Doc *doc = &c->docs[other];
                Py_ssize_t start, j, picked = 0;
                label = 1;
                if (randint(r, 0, doc->n_sents - 1, &start) < 0) return -1;
                for (j = start; j < doc->n_sents; j++) {
                    picked += doc->sents[j].len;
                    if (picked >= target - a.len) break;
                }
                b = seq_of(&doc->sents[start], (j < doc->n_sents ? j + 1 : j) - start);
                i -= count - a_end;  /* unused segments are not wasted */
            } else {
                b = seq_of(&pieces[chunk + a_end], count - a_end);
                if (!nsp && draw(r, &d) < 0) return -1;
                if (!nsp && d < 0.5) {
                    Seq t = a;
                    a = b, b = t, label = 1;
                }
            }
        }
        if (add_instance(out, a, b, max_tokens, label, r, cls_id, sep_id) < 0) return -1;
        chunk = i + 1;
        length = 0;
    }
    return 0;
}

/* build_pair_instances(documents, dupe_factor, max_seq_length, short_seq_prob,
                        cls_id, sep_id, rng, nsp, account) */
static PyObject *py_build_pair_instances(PyObject *module, PyObject *args)
{
    PyObject *documents, *cls_id, *sep_id, *account, *out = NULL;
    Py_ssize_t dupe_factor, max_seq_length;
    double short_seq_prob;
    int nsp, ok, collecting;
    Rng r = {NULL, NULL, NULL};
    Chunk c;
    (void)module;
    memset(&c, 0, sizeof c);
    if (!PyArg_ParseTuple(args, "OnndOOOpO", &documents, &dupe_factor, &max_seq_length,
                          &short_seq_prob, &cls_id, &sep_id, &r.rng, &nsp, &account))
        return NULL;
    if (max_seq_length < 4) Py_RETURN_NOTIMPLEMENTED;
    ok = read_chunk(documents, max_seq_length - 3, &c);
    if (ok != 1 || (r.random = PyObject_GetAttr(r.rng, str_random)) == NULL ||
        (r.getrandbits = PyObject_GetAttr(r.rng, str_getrandbits)) == NULL ||
        (out = PyList_New(0)) == NULL)
        goto done;
    /* The new lists hold ints only and make no cycle: without this, the
       collections their allocation triggers cost 2-3x the building itself. */
    collecting = PyGC_Disable();
    for (Py_ssize_t pass = 0; pass < dupe_factor && out != NULL; pass++)
        for (Py_ssize_t index = 0; index < c.n_docs && out != NULL; index++)
            if (document_instances(&c, index, max_seq_length - 3, short_seq_prob, nsp, &r,
                                   account, cls_id, sep_id, out) < 0)
                Py_CLEAR(out);
    if (collecting) PyGC_Enable();
done:
    Py_XDECREF(r.random);
    Py_XDECREF(r.getrandbits);
    PyMem_Free(c.docs);
    PyMem_Free(c.sents);
    PyMem_Free(c.pieces);
    PyMem_Free(c.codes);
    if (ok == 0) Py_RETURN_NOTIMPLEMENTED;
    return out;
}

/* shuffle(items: list, rng): random.py's Random.shuffle, same draws. */
static PyObject *py_shuffle(PyObject *module, PyObject *args)
{
    PyObject *items;
    Rng r = {NULL, NULL, NULL};
    (void)module;
    if (!PyArg_ParseTuple(args, "O!O", &PyList_Type, &items, &r.rng)) return NULL;
    if ((r.getrandbits = PyObject_GetAttr(r.rng, str_getrandbits)) == NULL) return NULL;
    /* The draws may run Python code that resizes the list: re-read its size. */
    for (Py_ssize_t i = PyList_GET_SIZE(items) - 1; i >= 1; i--) {
        Py_ssize_t j;
        if (below(&r, i + 1, &j) < 0) {
            Py_DECREF(r.getrandbits);
            return NULL;
        }
        if (i >= PyList_GET_SIZE(items)) {
            Py_DECREF(r.getrandbits);
            PyErr_SetString(PyExc_RuntimeError, "shuffle(): list changed size");
            return NULL;
        }
        PyObject *swap = PyList_GET_ITEM(items, i);
        PyList_SET_ITEM(items, i, PyList_GET_ITEM(items, j));
        PyList_SET_ITEM(items, j, swap);
    }
    Py_DECREF(r.getrandbits);
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"shuffle", py_shuffle, METH_VARARGS,
     "shuffle(items, rng): shuffles the list in place with rng's draws, as rng.shuffle(items)"},
    {"build_pair_instances", py_build_pair_instances, METH_VARARGS,
     "build_pair_instances(documents, dupe_factor, max_seq_length, short_seq_prob, cls_id,"
     " sep_id, rng, nsp, account) -> list of (ids, starts, segment_ids, label), or"
     " NotImplemented (before any draw) for inputs left to the Python path."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "data_gen.native._instances",
    "C fast path of data_gen.modes.mlm.instances.create_all_pair_instances (same draws and values).",
    -1, methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__instances(void)
{
    if (zero == NULL &&
        ((zero = PyLong_FromLong(0)) == NULL || (one = PyLong_FromLong(1)) == NULL ||
         (minus_one = PyLong_FromLong(-1)) == NULL ||
         (too_short_key = PyUnicode_InternFromString("documents_too_short_for_pair")) == NULL ||
         (str_random = PyUnicode_InternFromString("random")) == NULL ||
         (str_getrandbits = PyUnicode_InternFromString("getrandbits")) == NULL))
        return NULL;
    return PyModule_Create(&module_def);
}
