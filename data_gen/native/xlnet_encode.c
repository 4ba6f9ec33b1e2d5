/* XLNetEncoder.encode: one record as example_proto.int64_example writes it (see xlnet.h). */
#include "xlnet.h"

static size_t varint_size(uint64_t v)
{
    size_t n = 1;
    for (; v >= 0x80; v >>= 7) n++;
    return n;
}

static unsigned char *put_varint(unsigned char *p, uint64_t v)
{
    for (; v >= 0x80; v >>= 7) *p++ = (unsigned char)(v | 0x80);
    *p++ = (unsigned char)v;
    return p;
}

/* One `feature` map entry (example_proto._feature_entry, int64 list): the size of
   its content after the entry's tag and length... */
static size_t entry_content(size_t name_len, size_t payload_len)
{
    size_t list = 1 + varint_size(payload_len) + payload_len;
    size_t feature = 1 + varint_size(list) + list;
    return 1 + varint_size(name_len) + name_len + 1 + varint_size(feature) + feature;
}

static size_t entry_size(size_t name_len, size_t payload_len)
{
    size_t content = entry_content(name_len, payload_len);
    return 1 + varint_size(content) + content;
}

/* ...and its bytes: key = name, value = Feature{int64_list = packed payload}. */
static unsigned char *put_entry(unsigned char *p, const char *name, const unsigned char *payload,
                                size_t payload_len)
{
    size_t name_len = strlen(name);
    size_t list = 1 + varint_size(payload_len) + payload_len;
    *p++ = 0x0a;
    p = put_varint(p, entry_content(name_len, payload_len));
    *p++ = 0x0a;
    p = put_varint(p, name_len);
    memcpy(p, name, name_len);
    p += name_len;
    *p++ = 0x12;
    p = put_varint(p, 1 + varint_size(list) + list);
    *p++ = 0x1a;
    p = put_varint(p, list);
    *p++ = 0x0a;
    p = put_varint(p, payload_len);
    memcpy(p, payload, payload_len);
    return p + payload_len;
}

/* Varints of ids[begin, end) at p; *max_id is raised to their largest. */
static unsigned char *put_ids(unsigned char *p, const int64_t *ids, Py_ssize_t begin,
                              Py_ssize_t end, int64_t *max_id)
{
    for (Py_ssize_t i = begin; i < end; i++) {
        if (ids[i] > *max_id) *max_id = ids[i];
        p = put_varint(p, (uint64_t)ids[i]);
    }
    return p;
}

PyObject *xlnet_encode_record(const Stream *s, const Recipe *rc, Work *w, Py_ssize_t window,
                               Py_ssize_t a_end, Py_ssize_t b_begin, Py_ssize_t b_end,
                               int label, int64_t *max_id)
{
    int64_t special[3] = {rc->sep, rc->sep, rc->cls}, closing[2] = {rc->cls, rc->cls};
    Py_ssize_t length = (a_end - window) + (b_end - b_begin) + 3;
    if (length != rc->seq) {
        PyErr_Format(PyExc_ValueError, "an XLNet record must be %zd tokens long, not %zd",
                     rc->seq, length);
        return NULL;
    }
    *max_id = 0;
    unsigned char *in = put_ids(w->input, s->ids, window, a_end, max_id);
    in = put_ids(in, special, 0, 1, max_id);
    in = put_ids(in, s->ids, b_begin, b_end, max_id);
    in = put_ids(in, special, 1, 3, max_id);
    unsigned char *tg = put_ids(w->target, s->ids, window + 1, a_end + 1, max_id);
    tg = put_ids(tg, s->ids, b_begin, b_end + 1, max_id);
    tg = put_ids(tg, closing, 0, 2, max_id);
    Py_ssize_t a_seg = a_end - window + 1;  /* the window, A and the first <sep> */
    memset(w->seg, 0, (size_t)a_seg);
    memset(w->seg + a_seg, 1, (size_t)(b_end - b_begin + 1));
    w->seg[rc->seq - 1] = 2;
    unsigned char label_byte = (unsigned char)label;
    size_t seq = (size_t)rc->seq, in_len = (size_t)(in - w->input);
    size_t tg_len = (size_t)(tg - w->target);
    size_t body = entry_size(5, in_len) + entry_size(9, seq) + entry_size(5, 1) +
                  entry_size(6, seq) + entry_size(6, tg_len);
    PyObject *record = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(1 + varint_size(body) + body));
    if (record == NULL) return NULL;
    unsigned char *p = (unsigned char *)PyBytes_AS_STRING(record);
    *p++ = 0x0a;
    p = put_varint(p, body);
    p = put_entry(p, "input", w->input, in_len);  /* sorted key order */
    p = put_entry(p, "is_masked", w->is_masked, seq);
    p = put_entry(p, "label", &label_byte, 1);
    p = put_entry(p, "seg_id", w->seg, seq);
    put_entry(p, "target", w->target, tg_len);
    return record;
}

