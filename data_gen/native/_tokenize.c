/* data_gen.native._tokenize: C twin of ChunkProcessor.tokenize_sentence.
 *
 * Tokenizer(normalize_entry, class_entry, word_entries, word_entry) keeps
 * per-code-point caches in two-level page tables and asks the Python side
 * whenever it meets something new, so the results are exactly those of the
 * pure-Python path:
 *   normalize_entry(cp) -> str        normalized text of chr(cp) ("" drops it)
 *   class_entry(cp)     -> "o" "c" "p" or " "   class of a normalized char
 *   word_entries        dict word -> (ids tuple, starts tuple, is_one_cjk_char)
 *   word_entry(word)    -> that tuple (called on a miss; it fills the dict)
 * Tokenizer.tokenize(sentence, segmenter) -> (ids list, starts list); the
 * segmenter is None or has .words(normalized_text) -> iterable of str.
 * All of these are pure functions of their argument, so caching them here
 * cannot change a result.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>
#if PY_VERSION_HEX < 0x030A0000  /* Python 3.9: Py_NewRef is 3.10+ */
static inline PyObject *Py_NewRef(PyObject *o) { Py_INCREF(o); return o; }
#endif

#define PAGE_BITS 8
#define PAGE_SIZE (1 << PAGE_BITS)
#define NUM_PAGES (0x110000 >> PAGE_BITS)

static PyObject *str_words;  /* interned "words" */

typedef struct {
    PyObject_HEAD
    PyObject *normalize_entry, *class_entry, *word_entries, *word_entry;
    PyObject *expansions;  /* list: normalized strs of more than one char */
    PyObject *zero;        /* int 0 */
    /* Pages of PAGE_SIZE items, allocated on first use:
     * norm (int32_t): 0 unknown, -1 dropped, cp + 1 (one char), -2 - i (expansions[i]);
     * cls (char): 0 unknown, else the class letter;
     * words (Word): the one-character word, unused while .entry is NULL. */
    void *norm[NUM_PAGES], *cls[NUM_PAGES], *words[NUM_PAGES];
} Tokenizer;

/* The page of cp in `pages`, allocated (zeroed) when missing; NULL on error. */
static void *page(void **pages, Py_UCS4 cp, size_t item_size)
{
    void **slot = &pages[cp >> PAGE_BITS];
    if (*slot == NULL) {
        *slot = PyMem_Calloc(PAGE_SIZE, item_size);
        if (*slot == NULL)
            PyErr_NoMemory();
    }
    return *slot;
}

/* Calls callable(cp) -> new reference, which must be a str. */
static PyObject *call_with_code_point(PyObject *callable, Py_UCS4 cp, const char *what)
{
    PyObject *arg = PyLong_FromUnsignedLong(cp);
    if (arg == NULL)
        return NULL;
    PyObject *result = PyObject_CallOneArg(callable, arg);
    Py_DECREF(arg);
    if (result != NULL && !PyUnicode_Check(result)) {
        PyErr_Format(PyExc_TypeError, "%s(%lu) returned %.100s, not str", what,
                     (unsigned long)cp, Py_TYPE(result)->tp_name);
        Py_CLEAR(result);
    }
#if PY_VERSION_HEX < 0x030C0000
    if (result != NULL && PyUnicode_READY(result) < 0)
        Py_CLEAR(result);
#endif
    return result;
}

/* The norm code of cp (see Tokenizer), or 0 with an exception set. */
static int32_t norm_code(Tokenizer *self, Py_UCS4 cp)
{
    int32_t *codes = self->norm[cp >> PAGE_BITS];
    if (codes != NULL && codes[cp & (PAGE_SIZE - 1)] != 0)
        return codes[cp & (PAGE_SIZE - 1)];
    PyObject *text = call_with_code_point(self->normalize_entry, cp, "normalize_entry");
    if (text == NULL)
        return 0;
    int32_t code;
    Py_ssize_t length = PyUnicode_GET_LENGTH(text);
    if (length == 0) {
        code = -1;
    } else if (length == 1) {
        code = (int32_t)PyUnicode_READ_CHAR(text, 0) + 1;
    } else {
        code = -2 - (int32_t)PyList_GET_SIZE(self->expansions);
        if (PyList_Append(self->expansions, text) < 0)
            code = 0;
    }
    Py_DECREF(text);
    if (code == 0 || (codes = page(self->norm, cp, sizeof(int32_t))) == NULL)
        return 0;
    codes[cp & (PAGE_SIZE - 1)] = code;
    return code;
}

/* The class letter of normalized char cp, or 0 with an exception set. */
static char class_code(Tokenizer *self, Py_UCS4 cp)
{
    char *letters = self->cls[cp >> PAGE_BITS];
    if (letters != NULL && letters[cp & (PAGE_SIZE - 1)] != 0)
        return letters[cp & (PAGE_SIZE - 1)];
    PyObject *text = call_with_code_point(self->class_entry, cp, "class_entry");
    if (text == NULL)
        return 0;
    Py_UCS4 letter = PyUnicode_GET_LENGTH(text) == 1 ? PyUnicode_READ_CHAR(text, 0) : 0;
    Py_DECREF(text);
    if (letter != 'o' && letter != 'c' && letter != 'p' && letter != ' ') {
        PyErr_Format(PyExc_ValueError, "class_entry(%lu) must return 'o', 'c', 'p' or ' '",
                     (unsigned long)cp);
        return 0;
    }
    if ((letters = page(self->cls, cp, 1)) == NULL)
        return 0;
    letters[cp & (PAGE_SIZE - 1)] = (char)letter;
    return (char)letter;
}

/* A word entry unpacked so that the common cases need not touch the tuples. */
typedef struct {
    PyObject *entry;  /* owned (ids tuple, starts tuple, is_one_cjk_char) */
    PyObject *first_id;     /* ids[0] (borrowed), NULL if there is none */
    PyObject *first_start;  /* starts[0] (borrowed) of a one-id one-start entry, else NULL */
    int one_cjk;
} Word;

/* word_entries[word] or word_entry(word), checked and unpacked; -1 on error. */
static int word_entry(Tokenizer *self, PyObject *word, Word *out)
{
    PyObject *entry = PyDict_GetItemWithError(self->word_entries, word);
    if (entry != NULL)
        Py_INCREF(entry);
    else if (PyErr_Occurred())
        return -1;
    else if ((entry = PyObject_CallOneArg(self->word_entry, word)) == NULL)
        return -1;
    if (!PyTuple_Check(entry) || PyTuple_GET_SIZE(entry) != 3 ||
        !PyTuple_Check(PyTuple_GET_ITEM(entry, 0)) ||
        !PyTuple_Check(PyTuple_GET_ITEM(entry, 1))) {
        PyErr_Format(PyExc_TypeError, "word entry of %R must be a tuple "
                     "(ids tuple, starts tuple, is_one_cjk_char)", word);
        Py_DECREF(entry);
        return -1;
    }
    PyObject *entry_ids = PyTuple_GET_ITEM(entry, 0), *entry_starts = PyTuple_GET_ITEM(entry, 1);
    if ((out->one_cjk = PyObject_IsTrue(PyTuple_GET_ITEM(entry, 2))) < 0) {
        Py_DECREF(entry);
        return -1;
    }
    int one_piece = PyTuple_GET_SIZE(entry_ids) == 1 && PyTuple_GET_SIZE(entry_starts) == 1;
    out->first_id = PyTuple_GET_SIZE(entry_ids) > 0 ? PyTuple_GET_ITEM(entry_ids, 0) : NULL;
    out->first_start = one_piece ? PyTuple_GET_ITEM(entry_starts, 0) : NULL;
    out->entry = entry;
    return 0;
}

/* The cached Word of the one-character word chr(cp); NULL on error. */
static const Word *char_word(Tokenizer *self, Py_UCS4 cp)
{
    Word *words = self->words[cp >> PAGE_BITS];
    if (words != NULL && words[cp & (PAGE_SIZE - 1)].entry != NULL)
        return &words[cp & (PAGE_SIZE - 1)];
    PyObject *text = PyUnicode_FromOrdinal((int)cp);
    if (text == NULL)
        return NULL;
    Word word;
    int failed = word_entry(self, text, &word);
    Py_DECREF(text);
    if (failed)
        return NULL;
    if ((words = page(self->words, cp, sizeof(Word))) == NULL) {
        Py_DECREF(word.entry);
        return NULL;
    }
    /* A callback may have re-entered tokenize and filled the slot meanwhile. */
    Py_XDECREF(words[cp & (PAGE_SIZE - 1)].entry);
    words[cp & (PAGE_SIZE - 1)] = word;
    return &words[cp & (PAGE_SIZE - 1)];
}

/* A growable array of owned references (the ids or the starts). */
typedef struct {
    PyObject **items;
    Py_ssize_t size, capacity;
} Items;

static int items_push(Items *items, PyObject *item)
{
    if (items->size == items->capacity) {
        Py_ssize_t capacity = items->capacity * 2 + 16;
        PyObject **grown = PyMem_Realloc(items->items, (size_t)capacity * sizeof(PyObject *));
        if (grown == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        items->items = grown;
        items->capacity = capacity;
    }
    Py_INCREF(item);
    items->items[items->size++] = item;
    return 0;
}

static int items_extend(Items *items, PyObject *tuple)
{
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(tuple); i++)
        if (items_push(items, PyTuple_GET_ITEM(tuple, i)) < 0)
            return -1;
    return 0;
}

/* Moves the references into a new list (items emptied); NULL on error. */
static PyObject *items_to_list(Items *items)
{
    PyObject *list = PyList_New(items->size);
    if (list == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < items->size; i++)
        PyList_SET_ITEM(list, i, items->items[i]);
    items->size = 0;
    return list;
}

static void items_free(Items *items)
{
    for (Py_ssize_t i = 0; i < items->size; i++)
        Py_DECREF(items->items[i]);
    PyMem_Free(items->items);
}

/* Appends a word's ids and starts; `later`: it continues a jieba word. */
static int emit(Tokenizer *self, const Word *word, int later, Items *ids, Items *starts)
{
    if (word->one_cjk && later) {  /* a later character of a jieba word */
        if (word->first_id == NULL) {
            PyErr_SetString(PyExc_IndexError, "word entry has no ids");
            return -1;
        }
        return items_push(ids, word->first_id) < 0 ? -1 : items_push(starts, self->zero);
    }
    if (word->first_start != NULL)
        return items_push(ids, word->first_id) < 0 ? -1 : items_push(starts, word->first_start);
    return items_extend(ids, PyTuple_GET_ITEM(word->entry, 0)) < 0 ? -1
        : items_extend(starts, PyTuple_GET_ITEM(word->entry, 1));
}

/* Marks in starts[0..length] the offsets where the segmenter's words begin. */
static int mark_word_starts(PyObject *segmenter, const Py_UCS4 *text, Py_ssize_t length,
                            unsigned char *starts)
{
    PyObject *normalized = PyUnicode_FromKindAndData(PyUnicode_4BYTE_KIND, text, length);
    if (normalized == NULL)
        return -1;
    PyObject *words = PyObject_CallMethodOneArg(segmenter, str_words, normalized);
    Py_DECREF(normalized);
    if (words == NULL)
        return -1;
    PyObject *sequence = PySequence_Fast(words, "segmenter.words() must return an iterable");
    Py_DECREF(words);
    if (sequence == NULL)
        return -1;
    Py_ssize_t offset = 0;
    starts[0] = 1;
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(sequence); i++) {
        PyObject *word = PySequence_Fast_GET_ITEM(sequence, i);
        Py_ssize_t size = PyUnicode_Check(word) ? PyUnicode_GET_LENGTH(word)
                                                : PyObject_Size(word);
        if (size < 0) {
            Py_DECREF(sequence);
            return -1;
        }
        /* Offsets past the text cannot begin a word: saturate at length + 1. */
        offset = size > length - offset ? length + 1 : offset + size;
        if (offset <= length)
            starts[offset] = 1;
    }
    Py_DECREF(sequence);
    return 0;
}

static PyObject *tokenize(Tokenizer *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "tokenize(sentence, segmenter) takes 2 arguments");
        return NULL;
    }
    PyObject *sentence = args[0], *segmenter = args[1];
    if (!PyUnicode_Check(sentence)) {
        PyErr_Format(PyExc_TypeError, "sentence must be str, not %.100s",
                     Py_TYPE(sentence)->tp_name);
        return NULL;
    }
    if (self->expansions == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "Tokenizer was cleared");
        return NULL;
    }
#if PY_VERSION_HEX < 0x030C0000
    if (PyUnicode_READY(sentence) < 0)
        return NULL;
#endif
    Py_ssize_t length = PyUnicode_GET_LENGTH(sentence), size = 0, capacity = length + 16;
    int kind = PyUnicode_KIND(sentence);
    const void *data = PyUnicode_DATA(sentence);
    Py_UCS4 *text = PyMem_Malloc((size_t)capacity * sizeof(Py_UCS4));
    unsigned char *classes = NULL, *word_starts = NULL;
    Items ids = {NULL, 0, 0}, starts = {NULL, 0, 0};
    PyObject *result = NULL;
    if (text == NULL)
        return PyErr_NoMemory();

    /* 1. normalize, char by char (a char may become none or several) */
    for (Py_ssize_t i = 0; i < length; i++) {
        int32_t code = norm_code(self, PyUnicode_READ(kind, data, i));
        if (code == 0)
            goto done;
        if (code == -1)
            continue;
        PyObject *expansion = code > 0 ? NULL : PyList_GET_ITEM(self->expansions, -2 - code);
        Py_ssize_t count = code > 0 ? 1 : PyUnicode_GET_LENGTH(expansion);
        if (size + count > capacity) {
            capacity = 2 * (size + count);
            Py_UCS4 *grown = PyMem_Realloc(text, (size_t)capacity * sizeof(Py_UCS4));
            if (grown == NULL) {
                PyErr_NoMemory();
                goto done;
            }
            text = grown;
        }
        if (code > 0)
            text[size++] = (Py_UCS4)(code - 1);
        else
            for (Py_ssize_t j = 0; j < count; j++)
                text[size++] = PyUnicode_READ_CHAR(expansion, j);
    }

    /* 2. classify the normalized chars */
    int any_word = 0;
    if ((classes = PyMem_Malloc((size_t)size + 1)) == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < size; i++) {
        if ((classes[i] = (unsigned char)class_code(self, text[i])) == 0)
            goto done;
        any_word |= classes[i] != ' ';
    }
    if (!any_word) {
        result = Py_BuildValue("([],[])");
        goto done;
    }

    /* 3. jieba word starts, by offset in the normalized text */
    if (segmenter != Py_None) {
        if ((word_starts = PyMem_Calloc((size_t)size + 1, 1)) == NULL) {
            PyErr_NoMemory();
            goto done;
        }
        if (mark_word_starts(segmenter, text, size, word_starts) < 0)
            goto done;
    }

    /* 4. basic words ("o" runs; each "c" or "p" alone) -> ids and starts */
    for (Py_ssize_t begin = 0, end; begin < size; begin = end) {
        end = begin + 1;
        if (classes[begin] == ' ')
            continue;
        if (classes[begin] == 'o')
            while (end < size && classes[end] == 'o')
                end++;
        if (end - begin == 1) {
            const Word *word = char_word(self, text[begin]);
            if (word == NULL || emit(self, word, word_starts && !word_starts[begin],
                                     &ids, &starts) < 0)
                goto done;
        } else {
            PyObject *text_word = PyUnicode_FromKindAndData(PyUnicode_4BYTE_KIND,
                                                            text + begin, end - begin);
            Word word;
            if (text_word == NULL)
                goto done;
            int failed = word_entry(self, text_word, &word) < 0;
            Py_DECREF(text_word);
            if (failed)
                goto done;
            failed = emit(self, &word, word_starts && !word_starts[begin], &ids, &starts) < 0;
            Py_DECREF(word.entry);
            if (failed)
                goto done;
        }
    }

    PyObject *id_list = items_to_list(&ids);
    PyObject *start_list = id_list == NULL ? NULL : items_to_list(&starts);
    if (start_list != NULL)
        result = PyTuple_Pack(2, id_list, start_list);
    Py_XDECREF(id_list);
    Py_XDECREF(start_list);
done:
    PyMem_Free(text);
    PyMem_Free(classes);
    PyMem_Free(word_starts);
    items_free(&ids);
    items_free(&starts);
    return result;
}

static PyObject *Tokenizer_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    static char *keywords[] = {"normalize_entry", "class_entry", "word_entries", "word_entry",
                               NULL};
    PyObject *normalize_entry, *class_entry, *word_entries, *word_entry_fn;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOO!O:Tokenizer", keywords,
                                     &normalize_entry, &class_entry, &PyDict_Type,
                                     &word_entries, &word_entry_fn))
        return NULL;
    if (!PyCallable_Check(normalize_entry) || !PyCallable_Check(class_entry) ||
        !PyCallable_Check(word_entry_fn)) {
        PyErr_SetString(PyExc_TypeError,
                        "normalize_entry, class_entry and word_entry must be callable");
        return NULL;
    }
    Tokenizer *self = (Tokenizer *)type->tp_alloc(type, 0);  /* zeroed */
    if (self == NULL)
        return NULL;
    if ((self->expansions = PyList_New(0)) == NULL ||
        (self->zero = PyLong_FromLong(0)) == NULL) {
        Py_DECREF(self);
        return NULL;
    }
    self->normalize_entry = Py_NewRef(normalize_entry);
    self->class_entry = Py_NewRef(class_entry);
    self->word_entries = Py_NewRef(word_entries);
    self->word_entry = Py_NewRef(word_entry_fn);
    return (PyObject *)self;
}

static int Tokenizer_traverse(Tokenizer *self, visitproc visit, void *arg)
{
    Py_VISIT(self->normalize_entry);
    Py_VISIT(self->class_entry);
    Py_VISIT(self->word_entries);
    Py_VISIT(self->word_entry);
    Py_VISIT(self->expansions);
    for (int p = 0; p < NUM_PAGES; p++)
        if (self->words[p] != NULL)
            for (int i = 0; i < PAGE_SIZE; i++)
                Py_VISIT(((Word *)self->words[p])[i].entry);
    return 0;
}

static int Tokenizer_clear(Tokenizer *self)
{
    Py_CLEAR(self->normalize_entry);
    Py_CLEAR(self->class_entry);
    Py_CLEAR(self->word_entries);
    Py_CLEAR(self->word_entry);
    Py_CLEAR(self->expansions);  /* tokenize refuses to run from here on */
    for (int p = 0; p < NUM_PAGES; p++)
        if (self->words[p] != NULL)
            for (int i = 0; i < PAGE_SIZE; i++)
                Py_CLEAR(((Word *)self->words[p])[i].entry);
    return 0;
}

static void Tokenizer_dealloc(Tokenizer *self)
{
    PyObject_GC_UnTrack(self);
    Tokenizer_clear(self);
    Py_CLEAR(self->zero);
    for (int p = 0; p < NUM_PAGES; p++) {
        PyMem_Free(self->norm[p]);
        PyMem_Free(self->cls[p]);
        PyMem_Free(self->words[p]);
    }
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyMethodDef Tokenizer_methods[] = {
    {"tokenize", (PyCFunction)(void (*)(void))tokenize, METH_FASTCALL,
     "tokenize(sentence, segmenter) -> (ids, starts), as ChunkProcessor.tokenize_sentence"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject TokenizerType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "data_gen.native._tokenize.Tokenizer",
    .tp_basicsize = sizeof(Tokenizer),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "Tokenizer(normalize_entry, class_entry, word_entries, word_entry)",
    .tp_new = Tokenizer_new,
    .tp_traverse = (traverseproc)Tokenizer_traverse,
    .tp_clear = (inquiry)Tokenizer_clear,
    .tp_dealloc = (destructor)Tokenizer_dealloc,
    .tp_methods = Tokenizer_methods,
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    .m_name = "data_gen.native._tokenize",
    .m_doc = "C twin of ChunkProcessor.tokenize_sentence (see chunk_processing.py).",
    .m_size = -1,
};

PyMODINIT_FUNC PyInit__tokenize(void)
{
    if (str_words == NULL && (str_words = PyUnicode_InternFromString("words")) == NULL)
        return NULL;
    if (PyType_Ready(&TokenizerType) < 0)
        return NULL;
    PyObject *module = PyModule_Create(&module_def);
    if (module == NULL)
        return NULL;
    Py_INCREF(&TokenizerType);
    if (PyModule_AddObject(module, "Tokenizer", (PyObject *)&TokenizerType) < 0) {
        Py_DECREF(&TokenizerType);
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
