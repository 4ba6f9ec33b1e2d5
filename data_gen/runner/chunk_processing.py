"""Turns one chunk of documents into serialized, masked training instances.

Runs inside a worker process (or in-process for --num_workers=1). A chunk is
processed with a generator seeded from (random_seed, chunk_index) only, so the
output does not depend on how many workers share the chunks.
"""
import array
import collections
import gc
import itertools
import random

from data_gen import native
from data_gen.text.corpus_reader import CorpusAccount, CorpusReader
from data_gen.text.segmentation import make_segmenter
from data_gen.records.tfrecord_writer import frame_records_joined
from data_gen.text.tokenization import FullTokenizer, UNK_TOKEN, is_cjk_char
from data_gen.text.vocab_gaps import VocabGaps


def chunk_rng(random_seed, chunk_index):
    """The generator of one chunk (Python's Mersenne Twister, platform-stable)."""
    return random.Random(random_seed * 1000003 + chunk_index)


class ChunkResult:
    """The framed records of one chunk, in output order, plus counters.

    framed: bytes, every TFRecord-framed Example back to back; ends: array of
    int, ends[i] = offset just past record i; masked, max_ids: arrays of int
    (real predictions and largest id of each record); counts: Counter of the
    account. One blob crosses the process boundary far faster than a list of
    small bytes objects.
    """

    def __init__(self, chunk_index, records=(), masked=(), max_ids=(), counts=None):
        self.chunk_index = chunk_index
        records = list(records)
        self.framed = frame_records_joined(records)
        # Framing adds 16 bytes per record (length, its CRC, the data's CRC).
        self.ends = array.array("q", itertools.accumulate(len(data) + 16 for data in records))
        self.masked = array.array("q", masked)
        self.max_ids = array.array("q", max_ids)
        self.counts = counts if counts is not None else collections.Counter()

    def __len__(self):
        return len(self.ends)

    def select(self, first, step):
        """(framed bytes, instances, masked tokens, max id) of records first, first + step, ..."""
        if first == 0 and step == 1:
            return self.framed, len(self.ends), sum(self.masked), max(self.max_ids, default=0)
        view = memoryview(self.framed)
        ends = self.ends
        picked = range(first, len(ends), step)
        data = b"".join([view[ends[i - 1] if i else 0:ends[i]] for i in picked])
        return (data, len(picked), sum(self.masked[first::step]),
                max(self.max_ids[first::step], default=0))


class ChunkProcessor:
    """Holds the per-process state of reading and tokenizing: the segmenter, the word
    caches and (with `wordpiece`) the WordPiece tokenizer; a mode's processor
    (data_gen.modes, DataMode.make_processor) adds its instances and records in
    `_process(chunk_index, documents) -> ChunkResult`.

    use_native applies to every C accelerator the processor uses (jieba,
    tokenizer, and the mode's own): None = each when built and not disabled,
    False = pure Python, True = required, even if ZH_PRETRAIN_PURE_PYTHON is set
    (ImportError if not built); see data_gen.native.resolve. Both paths give the
    same records.
    """
    uses_c_accelerators = False  # the bulk of the work ran in C (counted per chunk)

    def __init__(self, config, use_native=None, wordpiece=True):
        """The segmenter, the word caches and, with `wordpiece`, the WordPiece tokenizer
        (C when built); without it, _native is None."""
        self.config = config
        self.segmenter = None
        if config.do_whole_word_mask:
            self.segmenter = make_segmenter(config.segmenter, config.jieba_user_dict or None,
                                            config.jieba_hmm, use_native=use_native)
        self._word_entries = {}
        self._use_native = use_native
        self.similar_words_counts = {}
        self._native = None
        self._gaps = None
        if wordpiece:
            self.tokenizer = FullTokenizer(config.vocab_file, config.do_lower_case,
                                           config.full_width_to_half)
            self.unk_id = self.tokenizer.vocab[UNK_TOKEN]
            self._native = self._native_tokenizer(use_native)
            self._gaps = VocabGaps(self.tokenizer, self.unk_id)

    def _native_tokenizer(self, use_native):
        """The C tokenizer over this processor's caches, or None for the Python path."""
        module = native.resolve("_tokenize", use_native)
        if module is None:
            return None
        basic = self.tokenizer.basic_tokenizer
        # The C object keeps the dict itself: _word_entries must not be rebound.
        return module.Tokenizer(basic.normalize_entry, basic.class_entry,
                                self._word_entries, self._word_entry)

    def _word_entry(self, word):
        """(ids, starts, is_one_cjk_char) of one basic word, cached."""
        tokenizer = self.tokenizer
        if len(word) == 1 and word in tokenizer.vocab:
            pieces = [word]
        else:
            pieces = tokenizer.wordpiece_tokenizer.tokenize_word(word)
        entry = (tuple(tokenizer.vocab.get(piece, self.unk_id) for piece in pieces),
                 tuple(0 if piece.startswith("##") else 1 for piece in pieces),
                 len(word) == 1 and is_cjk_char(word))
        if len(self._word_entries) < 500000:
            self._word_entries[word] = entry
        return entry

    def word_ids(self, word):
        """Token ids of one word (a similar-words entry), or None if any is [UNK].

        Only the ids matter here, so no word segmentation runs."""
        if self._native is not None:
            ids = self._native.tokenize(word, None)[0]
        else:
            vocab = self.tokenizer.vocab
            ids = [vocab.get(token, self.unk_id) for token in self.tokenizer.tokenize(word)]
        return None if not ids or self.unk_id in ids else ids

    def tokenize_sentence(self, sentence):
        """Returns (ids, starts) of one sentence (see masking.py for starts).

        A CJK character that does not begin a jieba word (by character
        position in the normalized text) continues the unit before it; other
        tokens follow WordPiece ("##" continues). Ids are always the plain
        token's id. Runs in C when the extension is in use (same result).
        """
        if self._native is not None:
            return self._native.tokenize(sentence, self.segmenter)
        return self._tokenize_sentence_python(sentence)

    def _tokenize_sentence_python(self, sentence):
        """The pure-Python tokenize_sentence (the reference the C path matches)."""
        normalized, words, word_offsets = self.tokenizer.basic_tokenizer.split_with_offsets(
            sentence)
        if not words:
            return [], []
        word_starts = None
        if self.segmenter is not None:
            word_starts = set(itertools.accumulate(
                map(len, self.segmenter.words(normalized)), initial=0))
        entries = self._word_entries
        ids = []
        starts = []
        for word, offset in zip(words, word_offsets):
            entry = entries.get(word) or self._word_entry(word)
            if entry[2] and word_starts is not None and offset not in word_starts:
                ids.append(entry[0][0])
                starts.append(0)  # later character of a jieba word
            else:
                ids.extend(entry[0])
                starts.extend(entry[1])
        return ids, starts

    def tokenize_documents(self, documents, counts):
        """Tokenizes (and segments) every sentence once; drops empty ones, counted. With a
        WordPiece vocab it also counts the characters the vocab maps to [UNK] (vocab_gaps)."""
        tokenized = []
        gaps = self._gaps
        for document in documents:
            sentences = []
            for sentence in document:
                ids, starts = self.tokenize_sentence(sentence)
                if gaps is not None:
                    gaps.count(sentence, ids, counts)
                if ids:
                    sentences.append((ids, starts))
                else:
                    counts["sentences_skipped_no_tokens"] += 1
            if sentences:
                tokenized.append(sentences)
            else:
                counts["documents_skipped_no_tokens"] += 1
        return tokenized

    def process_span(self, span, opener=None, document_split=None):
        """Reads chunk `span` (data_gen.runner.corpus_chunks.ChunkSpan) and processes it ->
        ChunkResult whose counts include what was read and skipped. document_split
        (data_gen.text.document_split.DocumentSplit): only that split's documents."""
        account = CorpusAccount()
        reader = CorpusReader((), self.config.on_decode_error,
                              self.config.max_sentences_per_document, account=account)
        documents = list(reader.read_span(span, opener))
        other = 0
        if document_split is not None:
            documents, other = document_split.keep(documents)
        result = self.process(span.index, documents)
        result.counts.update(account.counts)
        if other:
            result.counts["documents_in_other_split"] += other
        result.counts["chunks"] += 1
        if span.index == 0:  # counted once, whichever process makes chunk 0
            result.counts.update({f"similar_words_{key}": value
                                  for key, value in self.similar_words_counts.items() if value})
        if self.uses_c_accelerators:
            result.counts["chunks_made_in_c"] += 1
        return result

    def process(self, chunk_index, documents):
        """Tokenize, build, mask, serialize and frame one chunk -> ChunkResult.

        The cyclic garbage collector is paused meanwhile: a chunk allocates
        hundreds of thousands of lists and tuples, none of them in a cycle
        (reference counting frees them), and every collection would walk all
        of them again.
        """
        collecting = gc.isenabled()
        gc.disable()
        try:
            return self._process(chunk_index, documents)
        finally:
            if collecting:
                gc.enable()

    def _process(self, chunk_index, documents):
        """The mode's records of one chunk -> ChunkResult."""
        raise NotImplementedError
