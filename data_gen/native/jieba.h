/* Private header of data_gen.native._jieba: the Cutter object, the state of one
 * cut() call, character classes, the trie lookup and the word output shared by
 * its translation units (jieba_dict.c, jieba_route.c, jieba_hmm.c and
 * data_gen/native/_jieba.c). Not a public API. */
#ifndef ZJ_JIEBA_H
#define ZJ_JIEBA_H

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

/* Shared between the module's files, not exported from the shared object. */
#if defined(__GNUC__)
#define ZJ_INTERNAL __attribute__((visibility("hidden")))
#else
#define ZJ_INTERNAL
#endif

/* math.log, for counts the fast path does not cover (set at module init) */
ZJ_INTERNAL extern PyObject *zj_math_log;

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

static inline uint32_t trie_child(const Cutter *s, uint32_t parent, Py_UCS4 c) {
    size_t i = slot_hash(parent, c) & s->node_mask;
    for (;; i = (i + 1) & s->node_mask) {
        uint32_t key = s->nodes[i].key;
        if (key == 0) return NO_NODE;
        if ((key & CP_MASK) == c && s->nodes[i].parent == parent) return (uint32_t)i;
    }
}

/* ---- output ---- */

static inline int append_new(PyObject *list, PyObject *item) {
    int rc;
    if (item == NULL) return -1;
    rc = PyList_Append(list, item);
    Py_DECREF(item);
    return rc;
}

static inline int emit_word(Ctx *ctx, Py_ssize_t a, Py_ssize_t b) { /* text[a:b] as one word */
    return append_new(ctx->words, PyUnicode_Substring(ctx->text, a, b));
}

static inline int emit_chars(Ctx *ctx, Py_ssize_t a, Py_ssize_t b) { /* one word per character */
    for (; a < b; a++)
        if (append_new(ctx->words, PyUnicode_FromOrdinal(CHAR(ctx, a))) < 0) return -1;
    return 0;
}

/* jieba_dict.c: the FREQ trie, and FREQ itself for K_SLOW nodes */
ZJ_INTERNAL int zj_trie_build(Cutter *self);
ZJ_INTERNAL int zj_slow_count(Ctx *ctx, Py_ssize_t a, Py_ssize_t b, int want_log, int *truth,
                              double *lg);
/* jieba_hmm.c: finalseg.cut(text[a:b]) */
ZJ_INTERNAL int zj_hmm_cut(Ctx *ctx, Py_ssize_t a, Py_ssize_t b);
/* jieba_route.c: the words of text[0:n] */
ZJ_INTERNAL int zj_cut_text(Ctx *ctx, Py_ssize_t n, int hmm);

#endif
