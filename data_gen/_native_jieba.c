/* data_gen._native_jieba: jieba's accurate-mode cut in C, giving the same words
 * as the Python reference data_gen/jieba_fast.py:FastJiebaCutter.
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
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>

enum { ST_B, ST_M, ST_E, ST_S };              /* HMM states */
enum { K_PREFIX = 1, K_ZERO, K_LOG, K_SLOW }; /* trie node kinds, see value_kind */
#define NO_NODE UINT32_MAX
#define ROOT (UINT32_MAX - 1)
#define CP_MASK 0xFFFFFFu

#if PY_VERSION_HEX < 0x030C0000
#define READY(s) PyUnicode_READY(s)
#define FREQ_STAMP(d) (((PyDictObject *)(d))->ma_version_tag) /* changes on any change */
#else
#define READY(s) 0
#define FREQ_STAMP(d) ((uint64_t)PyDict_Size(d))
#endif

static PyObject *math_log; /* math.log, for counts the fast path does not cover */

/* A trie node is the hash slot of the edge that leads to it. key holds the
 * edge's character and, in bits 24-31, the node's kind (0: empty slot). */
typedef struct { uint32_t parent, key; double lg; } Node;
typedef struct { Py_UCS4 c; int used; double p[4]; } EmitSlot;

typedef struct {
    PyObject_HEAD
    PyObject *freq, *force_split;
    Node *nodes;
    size_t node_mask;
    uint64_t freq_stamp;
    int busy; /* cut() calls running: no trie rebuild then */
    EmitSlot *emit;
    size_t emit_mask;
    double logtotal, low, start[4], trans[8];
} Cutter;

/* One cut() call: the text, the output list and scratch arrays. */
typedef struct {
    Cutter *self;
    PyObject *text, *words;
    int kind;
    const void *data;
    double *score;         /* score[i]: best log-probability of text[i:block end] */
    Py_ssize_t *best_end;  /* end of the word that starts at i on the best route */
    unsigned char *states; /* Viterbi back-pointers, then the state path */
} Ctx;

#define CHAR(ctx, i) PyUnicode_READ((ctx)->kind, (ctx)->data, (i))

static inline int is_han(Py_UCS4 c) { return c >= 0x4E00 && c <= 0x9FD5; }

static inline int is_ascii_alnum(Py_UCS4 c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

/* a character of jieba's re_han_default: [\u4E00-\u9FD5a-zA-Z0-9+#&\._%\-] */
static inline int is_block_char(Py_UCS4 c) {
    return is_han(c) || is_ascii_alnum(c) || c == '+' || c == '#' || c == '&' || c == '.' ||
           c == '_' || c == '%' || c == '-';
}

static inline size_t slot_hash(uint32_t parent, Py_UCS4 c) {
    return (size_t)(((((uint64_t)parent << 21) ^ c) * 0x9E3779B97F4A7C15ull) >> 32);
}

/* ---- the FREQ trie ---- */

static inline uint32_t trie_child(const Cutter *s, uint32_t parent, Py_UCS4 c) {
    size_t i = slot_hash(parent, c) & s->node_mask;
    for (;; i = (i + 1) & s->node_mask) {
        uint32_t key = s->nodes[i].key;
        if (key == 0) return NO_NODE;
        if ((key & CP_MASK) == c && s->nodes[i].parent == parent) return (uint32_t)i;
    }
}

/* How a FREQ value is used: K_ZERO (falsy), K_LOG (*lg = math.log(value),
 * which is libm's log of the int or float as a double), or K_SLOW (anything
 * else: looked up in FREQ and given to Python's math.log at cut time). */
static int value_kind(PyObject *value, double *lg) {
    double d;
    if (PyLong_CheckExact(value)) {
        d = PyLong_AsDouble(value);
        if (d == -1.0 && PyErr_Occurred()) { /* too large for a double */
            PyErr_Clear();
            return K_SLOW;
        }
    } else if (PyFloat_CheckExact(value)) {
        d = PyFloat_AS_DOUBLE(value);
    } else {
        return K_SLOW;
    }
    if (d == 0.0) return K_ZERO;
    if (!(d > 0.0) || isinf(d)) return K_SLOW; /* negative (math.log raises), nan, inf */
    *lg = log(d);
    return K_LOG;
}

/* Fills a zeroed table of mask + 1 slots: 0, or 1 if it gets over 3/4 full, -1 error. */
static int trie_fill(Node *nodes, size_t mask, PyObject *freq) {
    Py_ssize_t pos = 0, i, length;
    PyObject *word, *value;
    size_t used = 0;
    while (PyDict_Next(freq, &pos, &word, &value)) {
        uint32_t node = ROOT;
        int kind;
        const void *data;
        if (!PyUnicode_Check(word) || value == Py_None) continue; /* None: as if absent */
        if (READY(word) < 0) return -1;
        if ((length = PyUnicode_GET_LENGTH(word)) == 0) continue;
        kind = PyUnicode_KIND(word);
        data = PyUnicode_DATA(word);
        for (i = 0; i < length; i++) { /* find or add the nodes of every prefix */
            Py_UCS4 c = PyUnicode_READ(kind, data, i);
            size_t j = slot_hash(node, c) & mask;
            while (nodes[j].key && !((nodes[j].key & CP_MASK) == c && nodes[j].parent == node))
                j = (j + 1) & mask;
            if (!nodes[j].key) {
                if (++used > mask / 4 * 3) return 1;
                nodes[j].parent = node;
                nodes[j].key = c | (uint32_t)K_PREFIX << 24;
            }
            node = (uint32_t)j;
        }
        kind = value_kind(value, &nodes[node].lg);
        nodes[node].key = (nodes[node].key & CP_MASK) | (uint32_t)kind << 24;
    }
    return 0;
}

/* (Re)builds the trie from FREQ, doubling the table until it fits. */
static int trie_build(Cutter *self) {
    size_t size = 1024;
    while (size < (size_t)PyDict_Size(self->freq) * 2) size *= 2;
    for (;; size *= 2) {
        Node *nodes;
        int rc;
        if (size > ((size_t)1 << 31) || (nodes = PyMem_Calloc(size, sizeof(Node))) == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        if ((rc = trie_fill(nodes, size - 1, self->freq)) == 0) {
            PyMem_Free(self->nodes);
            self->nodes = nodes;
            self->node_mask = size - 1;
            self->freq_stamp = FREQ_STAMP(self->freq);
            return 0;
        }
        PyMem_Free(nodes);
        if (rc < 0) return -1;
    }
}

/* ---- output, and FREQ itself for K_SLOW nodes ---- */

static int append_new(PyObject *list, PyObject *item) {
    int rc;
    if (item == NULL) return -1;
    rc = PyList_Append(list, item);
    Py_DECREF(item);
    return rc;
}

static int emit_word(Ctx *ctx, Py_ssize_t a, Py_ssize_t b) { /* text[a:b] as one word */
    return append_new(ctx->words, PyUnicode_Substring(ctx->text, a, b));
}

static int emit_chars(Ctx *ctx, Py_ssize_t a, Py_ssize_t b) { /* one word per character */
    for (; a < b; a++)
        if (append_new(ctx->words, PyUnicode_FromOrdinal(CHAR(ctx, a))) < 0) return -1;
    return 0;
}

/* For a K_SLOW node, Python's own `count = FREQ.get(text[a:b])`, `if count:` and,
 * when want_log, `log(count)`. Returns -1 on error, 0 if missing (or None), 1. */
static int slow_count(Ctx *ctx, Py_ssize_t a, Py_ssize_t b, int want_log, int *truth, double *lg) {
    PyObject *key = PyUnicode_Substring(ctx->text, a, b), *count, *r;
    *truth = 0;
    if (key == NULL) return -1;
    count = PyDict_GetItemWithError(ctx->self->freq, key);
    Py_XINCREF(count);
    Py_DECREF(key);
    if (count == NULL || count == Py_None) {
        Py_XDECREF(count);
        return PyErr_Occurred() ? -1 : 0;
    }
    if ((*truth = PyObject_IsTrue(count)) > 0 && want_log) {
        if ((r = PyObject_CallOneArg(math_log, count)) != NULL) {
            *lg = PyFloat_AsDouble(r);
            Py_DECREF(r);
        }
        if (r == NULL || (*lg == -1.0 && PyErr_Occurred())) *truth = -1;
    }
    Py_DECREF(count);
    return *truth < 0 ? -1 : 1;
}

/* ---- best route: jieba's get_DAG and calc in one backward pass ----
 * From each start (the block's last first) the fragment grows while it is a
 * FREQ key; each key with a nonzero count ending at i is a candidate scored
 * log(count) - logtotal + score[i + 1]. The best wins, ties to the longer
 * word; with no candidate the character alone scores log(1) - logtotal + ... */
static int route(Ctx *ctx, Py_ssize_t begin, Py_ssize_t end) {
    const Cutter *s = ctx->self;
    Py_ssize_t start, i;
    ctx->score[end] = 0.0;
    for (start = end - 1; start >= begin; start--) {
        double best = 0.0, lg = 0.0;
        int have_best = 0, truth, kind = 0, found;
        Py_ssize_t best_i = start;
        uint32_t node = ROOT;
        for (i = start; i < end; i++) {
            node = trie_child(s, node, CHAR(ctx, i));
            if (node == NO_NODE || (kind = (int)(s->nodes[node].key >> 24)) == K_PREFIX) break;
            if ((truth = kind == K_LOG)) {
                lg = s->nodes[node].lg;
            } else if (kind == K_SLOW && (found = slow_count(ctx, start, i + 1, 1, &truth, &lg)) <= 0) {
                if (found < 0) return -1;
                break;
            }
            if (truth) {
                double candidate = lg - s->logtotal + ctx->score[i + 1];
                if (!have_best || candidate >= best) {
                    best = candidate;
                    best_i = i;
                    have_best = 1;
                }
            }
        }
        if (!have_best) best = 0.0 - s->logtotal + ctx->score[start + 1];
        ctx->score[start] = best;
        ctx->best_end[start] = best_i + 1;
    }
    return 0;
}

/* ---- HMM: jieba.finalseg.cut ---- */

static const double *emit_find(const Cutter *s, Py_UCS4 c) {
    size_t i = slot_hash(0, c) & s->emit_mask;
    for (; s->emit[i].used; i = (i + 1) & s->emit_mask)
        if (s->emit[i].c == c) return s->emit[i].p;
    return NULL;
}

/* an HMM word; split into characters when it is in Force_Split_Words */
static int emit_hmm_word(Ctx *ctx, Py_ssize_t a, Py_ssize_t b) {
    PyObject *word = PyUnicode_Substring(ctx->text, a, b), *force = ctx->self->force_split;
    int split;
    if (word == NULL) return -1;
    if (PySet_GET_SIZE(force) > 0 && (split = PySet_Contains(force, word)) != 0) {
        Py_DECREF(word);
        return split < 0 ? -1 : emit_chars(ctx, a, b);
    }
    return append_new(ctx->words, word);
}

/* Viterbi over B M E S on the Han run text[a:b], then its words. A back-pointer
 * byte holds 2 bits per state (B in bits 0-1 ... S in bits 6-7): the previous
 * state. Ties go to the later letter (S over E, M over B), as in jieba. */
static int viterbi_cut(Ctx *ctx, Py_ssize_t a, Py_ssize_t b) {
    const Cutter *s = ctx->self;
    const double low = s->low, *t = s->trans;
    unsigned char *st = ctx->states;
    Py_ssize_t n = b - a, i, begin = 0, next = 0;
    const double *e = emit_find(s, CHAR(ctx, a));
    double v_b = s->start[ST_B] + (e ? e[ST_B] : low), v_m = s->start[ST_M] + (e ? e[ST_M] : low);
    double v_e = s->start[ST_E] + (e ? e[ST_E] : low), v_s = s->start[ST_S] + (e ? e[ST_S] : low);
    int state, pb, pm, pe, ps;
    for (i = 1; i < n; i++) {
        double em_b, em_m, em_e, em_s, b_e, b_s, m_m, m_b, s_s, s_e, e_b, e_m;
        e = emit_find(s, CHAR(ctx, a + i));
        em_b = e ? e[ST_B] : low, em_m = e ? e[ST_M] : low;
        em_e = e ? e[ST_E] : low, em_s = e ? e[ST_S] : low;
        b_e = v_e + t[0] + em_b, b_s = v_s + t[1] + em_b; /* into B from E or S */
        m_m = v_m + t[2] + em_m, m_b = v_b + t[3] + em_m; /* into M from M or B */
        s_s = v_s + t[4] + em_s, s_e = v_e + t[5] + em_s; /* into S from S or E */
        e_b = v_b + t[6] + em_e, e_m = v_m + t[7] + em_e; /* into E from B or M */
        pb = b_s >= b_e ? ST_S : ST_E;
        pm = m_m >= m_b ? ST_M : ST_B;
        pe = e_m >= e_b ? ST_M : ST_B;
        ps = s_s >= s_e ? ST_S : ST_E;
        st[i] = (unsigned char)(pb | pm << 2 | pe << 4 | ps << 6);
        v_b = pb == ST_S ? b_s : b_e;
        v_m = pm == ST_M ? m_m : m_b;
        v_e = pe == ST_M ? e_m : e_b;
        v_s = ps == ST_S ? s_s : s_e;
    }
    /* walk back, replacing each back-pointer byte by its position's state */
    state = v_s >= v_e ? ST_S : ST_E;
    for (i = n - 1; i > 0; i--) {
        int pointers = st[i];
        st[i] = (unsigned char)state;
        state = (pointers >> (2 * state)) & 3;
    }
    st[0] = (unsigned char)state;
    for (i = 0; i < n; i++) { /* B opens a word, E closes it, S is one; M continues */
        if (st[i] == ST_B) {
            begin = i;
        } else if (st[i] == ST_E || st[i] == ST_S) {
            if (emit_hmm_word(ctx, a + (st[i] == ST_E ? begin : i), a + i + 1) < 0) return -1;
            next = i + 1;
        }
    }
    return next < n ? emit_hmm_word(ctx, a + next, b) : 0;
}

/* Non-Han text in the HMM: the non-empty pieces of
 * re.split('([a-zA-Z0-9]+(?:\.\d+)?%?)'): each match and each stretch between. */
static int hmm_other(Ctx *ctx, Py_ssize_t a, Py_ssize_t b) {
    Py_ssize_t q, r;
    for (; a < b; a = r) {
        for (q = a; q < b && !is_ascii_alnum(CHAR(ctx, q)); q++) {}
        if (q > a && emit_word(ctx, a, q) < 0) return -1;
        if (q == b) break;
        for (r = q + 1; r < b && is_ascii_alnum(CHAR(ctx, r)); r++) {}
        if (r + 1 < b && CHAR(ctx, r) == '.' && Py_UNICODE_ISDECIMAL(CHAR(ctx, r + 1)))
            for (r += 2; r < b && Py_UNICODE_ISDECIMAL(CHAR(ctx, r)); r++) {}
        if (r < b && CHAR(ctx, r) == '%') r++;
        if (emit_word(ctx, q, r) < 0) return -1;
    }
    return 0;
}

/* finalseg.cut(text[a:b]): Viterbi on runs of Han characters, hmm_other between */
static int hmm_cut(Ctx *ctx, Py_ssize_t a, Py_ssize_t b) {
    while (a < b) {
        int han = is_han(CHAR(ctx, a));
        Py_ssize_t q = a + 1;
        while (q < b && is_han(CHAR(ctx, q)) == han) q++;
        if ((han ? viterbi_cut(ctx, a, q) : hmm_other(ctx, a, q)) < 0) return -1;
        a = q;
    }
    return 0;
}

/* ---- blocks ---- */

/* A run text[a:b] of one-character words (HMM mode): a single character is a
 * word; a FREQ key with a nonzero count is split into characters; anything
 * else goes to the HMM. */
static int flush_buffer(Ctx *ctx, Py_ssize_t a, Py_ssize_t b) {
    const Cutter *s = ctx->self;
    uint32_t node = ROOT;
    Py_ssize_t i;
    int kind = 0, truth;
    double unused;
    if (b - a == 1) return emit_word(ctx, a, b);
    for (i = a; i < b && node != NO_NODE; i++) node = trie_child(s, node, CHAR(ctx, i));
    if (node != NO_NODE) kind = (int)(s->nodes[node].key >> 24);
    truth = kind == K_LOG;
    if (kind == K_SLOW && slow_count(ctx, a, b, 0, &truth, &unused) < 0) return -1;
    return truth ? emit_chars(ctx, a, b) : hmm_cut(ctx, a, b);
}

/* One re_han block text[a:b]: the words of the best route, where runs of
 * one-character words are buffered: all of them with the HMM (flush_buffer),
 * only ASCII letters and digits without it (joined into one word). */
static int cut_block(Ctx *ctx, Py_ssize_t a, Py_ssize_t b, int hmm) {
    Py_ssize_t x, y, buf = -1;
    if (route(ctx, a, b) < 0) return -1;
    for (x = a; x < b; x = y) {
        y = ctx->best_end[x];
        if (y - x == 1 && (hmm || is_ascii_alnum(CHAR(ctx, x)))) {
            if (buf < 0) buf = x;
            continue;
        }
        if (buf >= 0 && (hmm ? flush_buffer(ctx, buf, x) : emit_word(ctx, buf, x)) < 0) return -1;
        buf = -1;
        if (emit_word(ctx, x, y) < 0) return -1;
    }
    if (buf >= 0) return hmm ? flush_buffer(ctx, buf, b) : emit_word(ctx, buf, b);
    return 0;
}

/* re_han blocks are cut; any other character is a word by itself, except that
 * "\r\n" is one word (jieba's re_skip). */
static int cut_text(Ctx *ctx, Py_ssize_t n, int hmm) {
    Py_ssize_t p, q;
    for (p = 0; p < n; p = q) {
        Py_UCS4 c = CHAR(ctx, p);
        q = p + 1;
        if (is_block_char(c)) {
            while (q < n && is_block_char(CHAR(ctx, q))) q++;
            if (cut_block(ctx, p, q, hmm) < 0) return -1;
        } else {
            if (c == '\r' && q < n && CHAR(ctx, q) == '\n') q++;
            if (emit_word(ctx, p, q) < 0) return -1;
        }
    }
    return 0;
}

static PyObject *Cutter_cut(Cutter *self, PyObject *args) {
    Ctx ctx;
    Py_ssize_t n;
    int hmm, rc;
    char *scratch;
    if (!PyArg_ParseTuple(args, "Up:cut", &ctx.text, &hmm) || READY(ctx.text) < 0) return NULL;
    if (self->busy == 0 && FREQ_STAMP(self->freq) != self->freq_stamp && trie_build(self) < 0)
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
    rc = cut_text(&ctx, n, hmm);
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
        build_emit(self, emit) < 0 || trie_build(self) < 0)
        Py_CLEAR(self);
    return (PyObject *)self;
}

static PyMethodDef Cutter_methods[] = {
    {"cut", (PyCFunction)Cutter_cut, METH_VARARGS,
     "cut(text, hmm) -> the list of words of jieba.lcut(text, HMM=hmm)"},
    {NULL, NULL, 0, NULL}};

static PyTypeObject CutterType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "data_gen._native_jieba.Cutter",
    .tp_basicsize = sizeof(Cutter),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Cutter(freq, logtotal, start, trans, emit, min_float, force_split)",
    .tp_dealloc = (destructor)Cutter_dealloc,
    .tp_methods = Cutter_methods,
    .tp_new = Cutter_new,
};

static struct PyModuleDef native_jieba_module = {
    PyModuleDef_HEAD_INIT, "data_gen._native_jieba",
    "jieba's accurate-mode cut in C (see data_gen/jieba_fast.py).", -1, NULL, NULL, NULL, NULL,
    NULL};

PyMODINIT_FUNC PyInit__native_jieba(void) {
    PyObject *module, *math;
    if (math_log == NULL) {
        if ((math = PyImport_ImportModule("math")) == NULL) return NULL;
        math_log = PyObject_GetAttrString(math, "log");
        Py_DECREF(math);
        if (math_log == NULL) return NULL;
    }
    if ((module = PyModule_Create(&native_jieba_module)) != NULL &&
        PyModule_AddType(module, &CutterType) < 0)
        Py_CLEAR(module);
    return module;
}
