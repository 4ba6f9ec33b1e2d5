"""--mode=xlnet: one chunk of documents -> XLNet's serialized records.

Tokenization is ChunkProcessor's (WordPiece ids and whole-word starts, in C when
built) or, with --spm_model_file, data_gen.text.spm_tokenization's. The records are
data_gen.modes.xlnet.xlnet_instances' (windows, A and B, targets) with xlnet_masking's
positions to predict, encoded as xlnet_records.XLNET_FEATURES. Everything random
is drawn from the chunk's generator, so the output does not depend on the runner.
A pass is made by the C module data_gen.native._xlnet when built (same draws,
same bytes; `use_native` as in data_gen.native.resolve), else in Python.
"""
import collections

from data_gen import native
from data_gen.runner.chunk_processing import ChunkProcessor, ChunkResult, chunk_rng
from data_gen.records.example_proto import int64_example, varint_table
from data_gen.modes.mlm.instances import _plain_random
from data_gen.modes.xlnet.xlnet_instances import (XLNetRecipe, XLNetStream, count_pass, pass_documents,
                                      stream_instances)
from data_gen.modes.xlnet.xlnet_masking import _SPAN_CUMULATIVE
from data_gen.modes.xlnet.xlnet_vocabulary import xlnet_wordpiece_ids


class XLNetEncoder:
    """Serializes (input, target, seg_id, is_masked, label) as xlnet_records.XLNET_FEATURES."""

    def __init__(self, max_seq_length, vocab_size):
        self.max_seq_length = max_seq_length
        self.table_size = max(vocab_size, 3)
        self._varints = varint_table(self.table_size)

    def encode(self, inputs, target, seg_id, is_masked, label):
        length = self.max_seq_length
        if not len(inputs) == len(target) == len(seg_id) == len(is_masked) == length:
            raise ValueError(f"an XLNet record must be {length} tokens long, not "
                             f"{len(inputs)}/{len(target)}/{len(seg_id)}/{len(is_masked)}")
        varints = self._varints
        return int64_example({
            "input": b"".join([varints[token] for token in inputs]),
            "target": b"".join([varints[token] for token in target]),
            "seg_id": bytes(seg_id),  # values below 128 are one-byte varints
            "is_masked": bytes(is_masked),
            "label": varints[label],
        })


class XLNetChunkProcessor(ChunkProcessor):
    """ChunkProcessor's reading and tokenizing, XLNet's records (see the module doc)."""

    def __init__(self, config, use_native=None):
        super().__init__(config, use_native, wordpiece=not config.spm_model_file)
        self._xlnet_native = native.resolve("_xlnet", use_native)
        self.uses_c_accelerators = self._xlnet_native is not None
        self.spm = None
        if config.spm_model_file:
            from data_gen.text.spm_tokenization import SpmTokenizer  # an optional extra
            self.spm = SpmTokenizer(config.spm_model_file, config.do_lower_case,
                                    config.do_whole_word_mask)
            special = self.spm.special
            vocab_size = self.spm.processor.GetPieceSize()
        else:
            vocab = self.tokenizer.vocab
            special = xlnet_wordpiece_ids(vocab, config.eod_token, config.vocab_file)
            vocab_size = len(vocab)
        self.recipe = XLNetRecipe(config.max_seq_length, config.xlnet_reuse_length(),
                                  config.max_predictions_per_seq, special, config.mask_alpha,
                                  config.mask_beta)
        self.encoder = XLNetEncoder(config.max_seq_length, vocab_size)

    def tokenize_sentence(self, sentence):
        """(ids, starts) of one sentence (see masking.py for starts)."""
        if self.spm is not None:
            return self.spm.tokenize(sentence, self.segmenter)
        return super().tokenize_sentence(sentence)

    def _process(self, chunk_index, documents):
        counts = collections.Counter()
        rng = chunk_rng(self.config.random_seed, chunk_index)
        tokenized = self.tokenize_documents(documents, counts)
        records, labels_1, max_ids = [], 0, []
        for ordered in pass_documents(tokenized, self.config.dupe_factor, rng):
            made = pass_records(ordered, self.recipe, self.encoder, self.config.do_whole_word_mask,
                                rng, counts, self._xlnet_native)
            records.extend(made[0])
            labels_1 += made[1]
            max_ids.extend(made[2])
        for key, value in (("labels_1", labels_1), ("labels_0", len(records) - labels_1)):
            if value:
                counts[key] += value
        return ChunkResult(chunk_index, records, [self.recipe.max_predictions] * len(records),
                           max_ids, counts)


def pass_records(documents, recipe, encoder, whole_words, rng, counts, module=None):
    """(records, how many have label 1, each record's largest id) of one pass over
    `documents` (in the pass's order); its counts go to `counts`. Made by `module`
    (data_gen.native._xlnet) when given and it takes the inputs, else in Python: the
    same records, counts and draws either way."""
    if module is not None and _plain_random(rng) and all(
            type(value) is int for value in (recipe.max_seq_length, recipe.reuse_length,
                                             recipe.max_predictions, recipe.mask_alpha,
                                             recipe.mask_beta)):
        made = module.stream_records(
            documents, recipe.special["eod"], whole_words, recipe.max_seq_length,
            recipe.reuse_length, recipe.max_predictions, recipe.special["sep"],
            recipe.special["cls"], recipe.mask_alpha, recipe.mask_beta, _SPAN_CUMULATIVE,
            encoder.table_size, rng)
        if made is not NotImplemented:
            records, labels_1, max_ids, skipped, window_end, stream_length = made
            count_pass(counts, stream_length, window_end, skipped)
            return records, labels_1, max_ids
    stream = XLNetStream(documents, recipe.special["eod"], whole_words)
    built = stream_instances(stream, recipe, rng, counts)
    return ([encoder.encode(*instance) for instance in built],
            sum(instance[4] for instance in built),
            [max(max(instance[0]), max(instance[1])) for instance in built])
