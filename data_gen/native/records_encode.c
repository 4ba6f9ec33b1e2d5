/* data_gen.native._records, Example encoding: the serialized tf.train.Example
   of an instance, the same bytes as data_gen.records.example_proto.InstanceEncoder
   (masked) and WordIdsEncoder (unmasked, with word_ids). */
#include "records.h"
#include <string.h>

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

/* The ValueErrors of InstanceEncoder.encode. */
int zr_check_sizes(Py_ssize_t seq_len, Py_ssize_t num_masked, Py_ssize_t max_len,
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

/* InstanceEncoder.encode after zr_check_sizes: features in sorted key order. */
PyObject *zr_encode_instance(const Instance *in)
{
    static const char float_one[4] = {0x00, 0x00, (char)0x80, 0x3f};
    Py_ssize_t seq_len = in->input_ids.n, num_masked = in->positions.n, body = 0;
    Feature f[10] = {
        {"input_ids", 0x1a, in->input_ids.v, seq_len, NULL, 0, 0, pad(in->max_len, seq_len), {0}},
        {"input_mask", 0x1a, NULL, 0, "\x01", 1, seq_len, in->max_len - seq_len, {0}},
        {"masked_lm_ids", 0x1a, in->masked_ids.v, in->masked_ids.n, NULL, 0, 0,
         pad(in->max_pred, in->masked_ids.n), {0}},
        {"masked_lm_positions", 0x1a, in->positions.v, num_masked, NULL, 0, 0,
         pad(in->max_pred, num_masked), {0}},
        {"masked_lm_span_left", 0x1a, in->span_left.v, in->span_left.n, NULL, 0, 0,
         pad(in->max_pred, in->span_left.n), {0}},
        {"masked_lm_span_right", 0x1a, in->span_right.v, in->span_right.n, NULL, 0, 0,
         pad(in->max_pred, in->span_right.n), {0}},
        {"masked_lm_weights", 0x12, NULL, 0, float_one, 4, num_masked,
         4 * (in->max_pred - num_masked), {0}},
        {"next_sentence_labels", 0x1a, &in->label, 1, NULL, 0, 0, 0, {0}},
        {"segment_ids", 0x1a, in->segment_ids.v, in->segment_ids.n, NULL, 0, 0,
         pad(in->max_len, in->segment_ids.n), {0}},
        {"token_boundary", 0x1a, in->boundary.v, in->boundary.n, NULL, 0, 0,
         pad(in->max_len, in->boundary.n), {0}},
    };
    int on[10] = {1, 1, 1, 1, in->with_spans, in->with_spans, 1, 1, 1, in->with_boundary};
    for (int i = 0; i < 10; i++) body += on[i] ? feature_size(&f[i]) : 0;
    PyObject *out = PyBytes_FromStringAndSize(NULL, 1 + varint_len(body) + body);
    if (out == NULL) return NULL;
    char *p = PyBytes_AS_STRING(out);
    *p++ = 0x0a;
    p = put_varint(p, body);
    for (int i = 0; i < 10; i++) p = on[i] ? put_feature(p, &f[i]) : p;
    return out;
}

/* example_proto.word_ids_of: 1-based whole word of each position, 0 where no unit covers. */
void zr_word_ids(const i64 *starts, Py_ssize_t n, int whole_word, i64 *out)
{
    i64 count = 0, current = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (starts[i] < 0) current = 0;
        else if (starts[i] || !whole_word) current = ++count;
        out[i] = current;
    }
}

/* WordIdsEncoder.encode after its size check: features in sorted key order. */
PyObject *zr_encode_word_ids(const Ints *input_ids, const Ints *segment_ids,
                             const i64 *word_ids, i64 label, Py_ssize_t max_len)
{
    Py_ssize_t seq_len = input_ids->n, body = 0;
    Feature f[5] = {
        {"input_ids", 0x1a, input_ids->v, seq_len, NULL, 0, 0, pad(max_len, seq_len), {0}},
        {"input_mask", 0x1a, NULL, 0, "\x01", 1, seq_len, max_len - seq_len, {0}},
        {"next_sentence_labels", 0x1a, &label, 1, NULL, 0, 0, 0, {0}},
        {"segment_ids", 0x1a, segment_ids->v, segment_ids->n, NULL, 0, 0,
         pad(max_len, segment_ids->n), {0}},
        {"word_ids", 0x1a, word_ids, seq_len, NULL, 0, 0, pad(max_len, seq_len), {0}},
    };
    for (int i = 0; i < 5; i++) body += feature_size(&f[i]);
    PyObject *out = PyBytes_FromStringAndSize(NULL, 1 + varint_len(body) + body);
    if (out == NULL) return NULL;
    char *p = PyBytes_AS_STRING(out);
    *p++ = 0x0a;
    p = put_varint(p, body);
    for (int i = 0; i < 5; i++) p = put_feature(p, &f[i]);
    return out;
}
