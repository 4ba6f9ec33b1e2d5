/* C fast path of one --mode=xlnet pass: the records of
data_gen.modes.xlnet.xlnet_instances.stream_instances, masked by xlnet_masking.choose_is_masked
and serialized by xlnet_processing.XLNetEncoder, in one loop.

stream_records() makes the same records, byte for byte, with the same
rng.random() and rng.getrandbits() calls in the same order as the Python
reference (randint as random.py's _randbelow): Python keeps the generator, C
only calls it. Inputs it does not take (see read_stream) make it return
NotImplemented before any draw, and the caller runs the Python reference; the
caller also checks that rng draws as a plain random.Random.
*/
#include "xlnet.h"
#include "py_random.h"

#define MAX_SEQ (1 << 20)

static PyObject *str_random, *str_getrandbits;

/* ---- random.py ---------------------------------------------------------- */

int xlnet_draw(Rng *r, double *out) { return py_random_draw(r->random, out); }

static int below(Rng *r, Py_ssize_t n, Py_ssize_t *out)
{
    return py_random_below(r->getrandbits, n, out);
}

/* int(x * n) as a list index below n (IndexError where Python's would raise). */
int xlnet_pick_index(double x, Py_ssize_t n, Py_ssize_t *out)
{
    *out = (Py_ssize_t)(x * (double)n);
    if (*out >= 0 && *out < n) return 0;
    PyErr_SetString(PyExc_IndexError, "list index out of range");
    return -1;
}

/* ---- bisect, as _bisect does it (so equal answers on any list) ----------- */

Py_ssize_t xlnet_bisect_left(const Py_ssize_t *a, Py_ssize_t n, Py_ssize_t x)
{
    Py_ssize_t lo = 0, hi = n;
    while (lo < hi) {
        Py_ssize_t mid = ((size_t)lo + hi) / 2;
        if (a[mid] < x) lo = mid + 1; else hi = mid;
    }
    return lo;
}

static Py_ssize_t bisect_right(const Py_ssize_t *a, Py_ssize_t n, Py_ssize_t x)
{
    Py_ssize_t lo = 0, hi = n;
    while (lo < hi) {
        Py_ssize_t mid = ((size_t)lo + hi) / 2;
        if (x < a[mid]) hi = mid; else lo = mid + 1;
    }
    return lo;
}

/* A plain int in [0, high), or -1. */
static long long id_value(PyObject *item, long long high)
{
    int overflow = 0;
    if (!PyLong_Check(item)) return -1;
    long long v = PyLong_AsLongLongAndOverflow(item, &overflow);
    return overflow || v < 0 || v >= high ? -1 : v;
}

/* A start's kind: 0, 1 (positive), 2 (-1) or 3 (other negative); -1 if not an int. */
static int start_code(PyObject *item)
{
    int overflow = 0;
    if (!PyLong_Check(item)) return -1;
    long long v = PyLong_AsLongLongAndOverflow(item, &overflow);
    if (overflow) return overflow > 0 ? 1 : 3;
    return v == 0 ? 0 : v == -1 ? 2 : v > 0 ? 1 : 3;
}

/* The (ids, starts) lists of a sentence, or 0 if not for the C path. */
static int sentence_lists(PyObject *sentence, PyObject **ids, PyObject **starts)
{
    if ((!PyTuple_CheckExact(sentence) && !PyList_CheckExact(sentence)) ||
        PySequence_Fast_GET_SIZE(sentence) != 2)
        return 0;
    *ids = PySequence_Fast_ITEMS(sentence)[0];
    *starts = PySequence_Fast_ITEMS(sentence)[1];
    return PyList_CheckExact(*ids) && PyList_CheckExact(*starts) &&
           PyList_GET_SIZE(*ids) == PyList_GET_SIZE(*starts);
}

/* Whole-word units of the start codes (masking.whole_word_units). */
static void find_units(Stream *s, int whole_words)
{
    Py_ssize_t m = 0, open = -1;
    int kept = 0;
    for (Py_ssize_t i = 0; i < s->n; i++) {
        int code = s->codes[i];
        if (!whole_words) {
            if (code <= 1) { s->ub[m] = i; s->ue[m++] = i + 1; }
        } else if (code) {  /* a nonzero start opens a unit; one opened by -1 is dropped */
            if (open >= 0 && kept) { s->ub[m] = open; s->ue[m++] = i; }
            open = i;
            kept = code != 2;
        }
    }
    if (whole_words && open >= 0 && kept) { s->ub[m] = open; s->ue[m++] = s->n; }
    s->n_units = m;
}

/* XLNetStream(documents, eod, whole_words): ids, sentence starts and units. 1: read;
   0: not for the C path (not a list of lists of (ids, starts) lists of equal length and
   plain ints, an id not below table_size, a first document without sentences); -1: error. */
static int read_stream(PyObject *documents, long long eod, int whole_words,
                       long long table_size, Stream *s)
{
    PyObject *ids = NULL, *starts = NULL;
    Py_ssize_t n = 0, n_sent = 0, n_docs, pos = 0, j = 0;
    if (!PyList_CheckExact(documents) || (n_docs = PyList_GET_SIZE(documents)) == 0 ||
        !PyList_CheckExact(PyList_GET_ITEM(documents, 0)) ||
        PyList_GET_SIZE(PyList_GET_ITEM(documents, 0)) == 0)
        return 0;
    for (Py_ssize_t d = 0; d < n_docs; d++) {
        PyObject *doc = PyList_GET_ITEM(documents, d);
        if (!PyList_CheckExact(doc)) return 0;
        for (Py_ssize_t k = 0; k < PyList_GET_SIZE(doc); k++) {
            if (!sentence_lists(PyList_GET_ITEM(doc, k), &ids, &starts)) return 0;
            n += PyList_GET_SIZE(ids);
        }
        n += 1;
        n_sent += PyList_GET_SIZE(doc);
    }
    s->n = n;
    s->n_sent = n_sent;
    s->ids = PyMem_Malloc(sizeof(int64_t) * (size_t)n);
    s->codes = PyMem_Malloc((size_t)n);
    s->sent = PyMem_Malloc(sizeof(Py_ssize_t) * (size_t)n_sent);
    s->ub = PyMem_Malloc(sizeof(Py_ssize_t) * (size_t)n);
    s->ue = PyMem_Malloc(sizeof(Py_ssize_t) * (size_t)n);
    if (!s->ids || !s->codes || !s->sent || !s->ub || !s->ue) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t d = 0; d < n_docs; d++) {
        PyObject *doc = PyList_GET_ITEM(documents, d);
        for (Py_ssize_t k = 0; k < PyList_GET_SIZE(doc); k++) {
            sentence_lists(PyList_GET_ITEM(doc, k), &ids, &starts);
            s->sent[j++] = pos;
            for (Py_ssize_t i = 0; i < PyList_GET_SIZE(ids); i++, pos++) {
                long long id = id_value(PyList_GET_ITEM(ids, i), table_size);
                int code = start_code(PyList_GET_ITEM(starts, i));
                if (id < 0 || code < 0) return 0;
                s->ids[pos] = id;
                s->codes[pos] = (unsigned char)code;
            }
        }
        s->ids[pos] = eod;
        s->codes[pos++] = 2;
    }
    find_units(s, whole_words);
    return 1;
}

/* ---- split_a_and_b ------------------------------------------------------- */

static int split_a_and_b(const Stream *s, Py_ssize_t begin, Py_ssize_t total, Rng *r,
                         Py_ssize_t *a_end, Py_ssize_t *b_begin, Py_ssize_t *b_end)
{
    const Py_ssize_t *st = s->sent, ns = s->n_sent, size = s->n;
    Py_ssize_t low = bisect_right(st, ns, begin), high = xlnet_bisect_left(st, ns, begin + total);
    Py_ssize_t n_cuts = high > low ? high - low : 0, a, pick, bb, be;
    double x;
    if (n_cuts) {
        if (xlnet_draw(r, &x) < 0) return -1;
        if (x >= 0.5) {  /* B continues the stream */
            if (xlnet_draw(r, &x) < 0 || xlnet_pick_index(x, n_cuts, &pick) < 0) return -1;
            *a_end = *b_begin = st[low + pick];
            *b_end = begin + total;
            return 0;
        }
        if (xlnet_draw(r, &x) < 0 || xlnet_pick_index(x, n_cuts, &pick) < 0) return -1;
        a = st[low + pick];
    } else {
        a = high < ns ? st[high] : size;
    }
    Py_ssize_t b_length = total - (a - begin) > 1 ? total - (a - begin) : 1;
    if (size - b_length <= 0) {
        PyErr_SetString(PyExc_ValueError, "empty range for randrange()");
        return -1;
    }
    if (below(r, size - b_length, &bb) < 0) return -1;
    be = bb + b_length;
    Py_ssize_t index = bisect_right(st, ns, bb) - 1;
    bb = st[index < 0 ? index + ns : index];
    if (be < size - 1) {
        Py_ssize_t following = xlnet_bisect_left(st, ns, be);
        Py_ssize_t next = following < ns ? st[following] : size;
        be = next < size - 1 ? next : size - 1;
    }
    Py_ssize_t a_length = a - begin, bl = be - bb;
    while (a_length + bl > total) {  /* the longer loses its last token */
        if (a_length > bl) a_length--; else bl--;
    }
    *a_end = begin + a_length;
    *b_begin = bb;
    *b_end = bb + bl;
    return 0;
}

/* Appends XLNetStream.units_within(begin, end, shift) to the part. */
static void add_units(const Stream *s, Py_ssize_t begin, Py_ssize_t end, Py_ssize_t shift,
                      Part *p)
{
    Py_ssize_t lo = xlnet_bisect_left(s->ub, s->n_units, begin);
    Py_ssize_t hi = bisect_right(s->ue, s->n_units, end);
    for (Py_ssize_t i = lo; i < hi; i++) {
        p->b[p->n] = s->ub[i] + shift;
        p->e[p->n++] = s->ue[i] + shift;
    }
}

/* ---- the pass ----------------------------------------------------------------- */

static int alloc_work(Work *w, Py_ssize_t seq, Py_ssize_t goal)
{
    size_t n = (size_t)seq + 1, words = sizeof(Py_ssize_t) * n;
    Part *parts[2] = {&w->reuse, &w->rest};
    for (int k = 0; k < 2; k++) {
        parts[k]->b = PyMem_Malloc(words);
        parts[k]->e = PyMem_Malloc(words);
        parts[k]->taken = PyMem_Malloc(n);
    }
    w->free = PyMem_Malloc(words);
    w->lengths = PyMem_Malloc(sizeof(Py_ssize_t) * ((size_t)goal + 2));
    w->reach = PyMem_Malloc((size_t)goal + 2);
    w->is_masked = PyMem_Malloc(n);
    w->seg = PyMem_Malloc(n);
    w->input = PyMem_Malloc(10 * n);
    w->target = PyMem_Malloc(10 * n);
    if (w->reuse.b && w->reuse.e && w->reuse.taken && w->rest.b && w->rest.e && w->rest.taken &&
        w->free && w->lengths && w->reach && w->is_masked && w->seg && w->input && w->target)
        return 0;
    PyErr_NoMemory();
    return -1;
}

static void free_all(Stream *s, Work *w)
{
    void *blocks[] = {s->ids, s->codes, s->sent, s->ub, s->ue, w->reuse.b, w->reuse.e,
                      w->reuse.taken, w->rest.b, w->rest.e, w->rest.taken, w->free, w->lengths,
                      w->reach, w->is_masked, w->seg, w->input, w->target};
    for (size_t i = 0; i < sizeof blocks / sizeof blocks[0]; i++) PyMem_Free(blocks[i]);
}

/* The span-length table: a list or tuple of 1..MAX_SPAN_TABLE floats, or 0. */
static int read_cumulative(PyObject *table, Recipe *rc)
{
    if (!PyList_CheckExact(table) && !PyTuple_CheckExact(table)) return 0;
    PyObject *fast = PySequence_Fast(table, "");
    if (fast == NULL) return 0;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
    int ok = n >= 1 && n <= MAX_SPAN_TABLE;
    for (Py_ssize_t i = 0; i < n && ok; i++) {
        PyObject *item = PySequence_Fast_GET_ITEM(fast, i);
        ok = PyFloat_CheckExact(item);
        rc->cum[i] = ok ? PyFloat_AS_DOUBLE(item) : 0.0;
    }
    rc->n_cum = n;
    Py_DECREF(fast);
    return ok;
}

/* The records of one window after another, as stream_instances makes them. */
static PyObject *run_pass(const Stream *s, const Recipe *rc, Work *w, Rng *r)
{
    PyObject *records = PyList_New(0), *max_ids = PyList_New(0), *out = NULL;
    Py_ssize_t window = 0, labels_1 = 0, skipped = 0;
    if (records == NULL || max_ids == NULL) goto done;
    while (window + rc->reuse + rc->total < s->n) {
        Py_ssize_t begin = window + rc->reuse, a_end, b_begin, b_end;
        if (split_a_and_b(s, begin, rc->total, r, &a_end, &b_begin, &b_end) < 0) goto done;
        w->reuse.n = w->rest.n = 0;
        add_units(s, window, begin, -window, &w->reuse);
        add_units(s, begin, a_end, rc->reuse - begin, &w->rest);
        add_units(s, b_begin, b_end, rc->reuse + (a_end - begin) + 1 - b_begin, &w->rest);
        int chosen = xlnet_choose_is_masked(rc, w, r);
        if (chosen < 0) goto done;
        if (chosen) {
            int64_t max_id;
            int label = b_begin == a_end;
            PyObject *record = xlnet_encode_record(s, rc, w, window, a_end, b_begin, b_end,
                                                   label, &max_id);
            PyObject *largest = record ? PyLong_FromLongLong(max_id) : NULL;
            int failed = largest == NULL || PyList_Append(records, record) < 0 ||
                         PyList_Append(max_ids, largest) < 0;
            Py_XDECREF(record);
            Py_XDECREF(largest);
            if (failed) goto done;
            labels_1 += label;
        } else {
            skipped++;
        }
        window += rc->reuse;
    }
    out = Py_BuildValue("(OnOnnn)", records, labels_1, max_ids, skipped, window, s->n);
done:
    Py_XDECREF(records);
    Py_XDECREF(max_ids);
    return out;
}

/* stream_records(documents, eod_id, whole_words, max_seq_length, reuse_length,
                  max_predictions, sep_id, cls_id, mask_alpha, mask_beta, span_cumulative,
                  vocab_size, rng) */
static PyObject *py_stream_records(PyObject *module, PyObject *args)
{
    PyObject *documents, *cumulative, *rng, *out = NULL;
    long long eod, sep, cls, table_size;
    int whole_words, ok = 0;
    Recipe rc;
    Stream s;
    Work w;
    Rng r = {NULL, NULL};
    (void)module;
    memset(&s, 0, sizeof s);
    memset(&w, 0, sizeof w);
    if (!PyArg_ParseTuple(args, "OLpnnnLLnnOLO", &documents, &eod, &whole_words, &rc.seq,
                          &rc.reuse, &rc.goal, &sep, &cls, &rc.alpha, &rc.beta, &cumulative,
                          &table_size, &rng))
        return NULL;
    rc.total = rc.seq - rc.reuse - 3;
    rc.sep = sep;
    rc.cls = cls;
    if (rc.reuse < 1 || rc.total < 1 || rc.seq > MAX_SEQ || rc.goal < 1 || rc.goal > rc.seq ||
        rc.beta < 1 || rc.alpha < 0 || rc.alpha > MAX_SEQ || sep < 0 || sep >= table_size ||
        cls < 0 || cls >= table_size || eod < 0 || eod >= table_size ||
        !read_cumulative(cumulative, &rc))
        Py_RETURN_NOTIMPLEMENTED;
    ok = read_stream(documents, eod, whole_words, table_size, &s);
    if (ok == 1 && alloc_work(&w, rc.seq, rc.goal) == 0 &&
        (r.random = PyObject_GetAttr(rng, str_random)) != NULL &&
        (r.getrandbits = PyObject_GetAttr(rng, str_getrandbits)) != NULL)
        out = run_pass(&s, &rc, &w, &r);
    Py_XDECREF(r.random);
    Py_XDECREF(r.getrandbits);
    free_all(&s, &w);
    if (ok == 0) Py_RETURN_NOTIMPLEMENTED;
    return out;
}

static PyMethodDef methods[] = {
    {"stream_records", py_stream_records, METH_VARARGS,
     "stream_records(documents, eod_id, whole_words, max_seq_length, reuse_length,"
     " max_predictions, sep_id, cls_id, mask_alpha, mask_beta, span_cumulative, vocab_size,"
     " rng) -> (records, labels_1, max_ids, skipped, end of the last window, stream"
     " length), or"
     " NotImplemented (before any draw) for inputs left to the Python path."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "data_gen.native._xlnet",
    "C fast path of one --mode=xlnet pass (data_gen.modes.xlnet.xlnet_instances; same draws and bytes).",
    -1, methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__xlnet(void)
{
    if (str_random == NULL &&
        ((str_random = PyUnicode_InternFromString("random")) == NULL ||
         (str_getrandbits = PyUnicode_InternFromString("getrandbits")) == NULL))
        return NULL;
    return PyModule_Create(&module_def);
}
