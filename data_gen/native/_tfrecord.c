/* C fast path of data_gen.records.tfrecord_writer.frame_records: TFRecord framing of
 * many records into one bytes object.
 *
 * Per record (little-endian): u64 length, u32 masked CRC-32C of those 8
 * bytes, the data, u32 masked CRC-32C of the data. CRC-32C (Castagnoli,
 * reflected polynomial 0x82F63B78) uses the SSE4.2 crc32 instruction when the
 * CPU has it and an 8-table software version otherwise; both give the same
 * values as google_crc32c.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

static uint32_t table[8][256];

static void build_tables(void)
{
    for (uint32_t byte = 0; byte < 256; byte++) {
        uint32_t crc = byte;
        for (int bit = 0; bit < 8; bit++)
            crc = (crc >> 1) ^ (0x82F63B78u & (0u - (crc & 1u)));
        table[0][byte] = crc;
    }
    /* table[k][b]: the register after b is followed by k zero bytes. */
    for (int k = 1; k < 8; k++)
        for (int byte = 0; byte < 256; byte++)
            table[k][byte] = (table[k - 1][byte] >> 8) ^ table[0][table[k - 1][byte] & 0xFF];
}

static uint32_t crc_software(uint32_t crc, const unsigned char *p, size_t n)
{
    for (; n >= 8; n -= 8, p += 8) {
        uint32_t low, high;
        memcpy(&low, p, 4);
        memcpy(&high, p + 4, 4);
        low ^= crc;  /* little-endian byte order (checked at import) */
        crc = table[7][low & 0xFF] ^ table[6][(low >> 8) & 0xFF] ^
              table[5][(low >> 16) & 0xFF] ^ table[4][low >> 24] ^
              table[3][high & 0xFF] ^ table[2][(high >> 8) & 0xFF] ^
              table[1][(high >> 16) & 0xFF] ^ table[0][high >> 24];
    }
    while (n--)
        crc = (crc >> 8) ^ table[0][(crc ^ *p++) & 0xFF];
    return crc;
}

#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("sse4.2")))
static uint32_t crc_hardware(uint32_t crc, const unsigned char *p, size_t n)
{
    uint64_t c = crc;
    for (; n >= 8; n -= 8, p += 8) {
        uint64_t word;
        memcpy(&word, p, 8);
        c = __builtin_ia32_crc32di(c, word);
    }
    crc = (uint32_t)c;
    while (n--)
        crc = __builtin_ia32_crc32qi(crc, *p++);
    return crc;
}
#define HAVE_HARDWARE 1
#else
#define HAVE_HARDWARE 0
#endif

static int use_hardware;

static uint32_t masked_crc(const unsigned char *p, size_t n)
{
    uint32_t crc = 0xFFFFFFFFu;
#if HAVE_HARDWARE
    crc = use_hardware ? crc_hardware(crc, p, n) : crc_software(crc, p, n);
#else
    crc = crc_software(crc, p, n);
#endif
    crc ^= 0xFFFFFFFFu;
    return ((crc >> 15) | (crc << 17)) + 0xA282EAD8u;
}

static void put_u32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i));
}

/* frame_records(records: list of bytes) -> bytes, every record framed, in order. */
static PyObject *frame_records(PyObject *module, PyObject *records)
{
    (void)module;
    if (!PyList_CheckExact(records)) {
        PyErr_SetString(PyExc_TypeError, "frame_records() takes a list of bytes");
        return NULL;
    }
    Py_ssize_t count = PyList_GET_SIZE(records), total = 0;
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *item = PyList_GET_ITEM(records, i);
        if (!PyBytes_CheckExact(item)) {
            PyErr_Format(PyExc_TypeError, "frame_records(): item %zd is %.100s, not bytes",
                         i, Py_TYPE(item)->tp_name);
            return NULL;
        }
        total += PyBytes_GET_SIZE(item) + 16;
    }
    PyObject *out = PyBytes_FromStringAndSize(NULL, total);
    if (out == NULL) return NULL;
    unsigned char *p = (unsigned char *)PyBytes_AS_STRING(out);
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *item = PyList_GET_ITEM(records, i);
        uint64_t length = (uint64_t)PyBytes_GET_SIZE(item);
        for (int b = 0; b < 8; b++) p[b] = (unsigned char)(length >> (8 * b));
        put_u32(p + 8, masked_crc(p, 8));
        memcpy(p + 12, PyBytes_AS_STRING(item), (size_t)length);
        put_u32(p + 12 + length, masked_crc(p + 12, (size_t)length));
        p += 16 + length;
    }
    return out;
}

/* masked_crc32c(data: bytes) -> int, for tests against the Python version. */
static PyObject *py_masked_crc32c(PyObject *module, PyObject *data)
{
    (void)module;
    Py_buffer view;
    if (PyObject_GetBuffer(data, &view, PyBUF_SIMPLE) < 0) return NULL;
    uint32_t value = masked_crc(view.buf, (size_t)view.len);
    PyBuffer_Release(&view);
    return PyLong_FromUnsignedLong(value);
}

/* set_hardware(flag) -> bool actually in use (tests run both CRC paths). */
static PyObject *set_hardware(PyObject *module, PyObject *flag)
{
    (void)module;
    int wanted = PyObject_IsTrue(flag);
    if (wanted < 0) return NULL;
#if HAVE_HARDWARE
    __builtin_cpu_init();
    use_hardware = wanted && __builtin_cpu_supports("sse4.2");
#else
    use_hardware = 0;
#endif
    return PyBool_FromLong(use_hardware);
}

static PyMethodDef methods[] = {
    {"frame_records", frame_records, METH_O,
     "frame_records(records) -> bytes: TFRecord framing of every record, concatenated"},
    {"masked_crc32c", py_masked_crc32c, METH_O, "masked_crc32c(data) -> int"},
    {"set_hardware", set_hardware, METH_O,
     "set_hardware(flag) -> bool: use the SSE4.2 CRC instruction when available"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "data_gen.native._tfrecord", "TFRecord framing in C.", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__tfrecord(void)
{
#if PY_BIG_ENDIAN
    PyErr_SetString(PyExc_ImportError, "_tfrecord assumes a little-endian CPU");
    return NULL;
#endif
    build_tables();
    PyObject *yes = PyBool_FromLong(1);
    PyObject *state = set_hardware(NULL, yes);
    Py_DECREF(yes);
    if (state == NULL) return NULL;
    Py_DECREF(state);
    return PyModule_Create(&module_def);
}
