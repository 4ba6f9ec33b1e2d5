"""--mode=xlnet: one chunk of documents -> XLNet's serialized records (pure Python).

Tokenization is ChunkProcessor's (WordPiece ids and whole-word starts, in C when
built) or, with --spm_model_file, data_gen.spm_tokenization's. The records are
data_gen.xlnet_instances' (windows, A and B, targets) with xlnet_masking's
positions to predict, encoded as record_schema.XLNET_FEATURES. Everything random
is drawn from the chunk's generator, so the output does not depend on the runner.
"""
import collections

from data_gen.chunk_processing import ChunkProcessor, ChunkResult, chunk_rng
from data_gen.example_proto import int64_example, varint_table
from data_gen.vocabulary import xlnet_wordpiece_ids
from data_gen.xlnet_instances import XLNetRecipe, chunk_instances


class XLNetEncoder:
    """Serializes (input, target, seg_id, is_masked, label) as record_schema.XLNET_FEATURES."""

    def __init__(self, max_seq_length, vocab_size):
        self.max_seq_length = max_seq_length
        self._varints = varint_table(max(vocab_size, 3))

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

    def __init__(self, config, use_native=None):  # pylint: disable=super-init-not-called
        # The reading side only: XLNet's records need none of the masked-LM state.
        self._setup_reading(config, use_native, wordpiece=not config.spm_model_file)
        self.uses_c_accelerators = False  # the records are made in Python
        self.spm = None
        if config.spm_model_file:
            from data_gen.spm_tokenization import SpmTokenizer  # an optional extra
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
        built = chunk_instances(tokenized, self.recipe, self.config.dupe_factor, rng, counts,
                                self.config.do_whole_word_mask)
        encode = self.encoder.encode
        records = [encode(*instance) for instance in built]
        labels_1 = sum(instance[4] for instance in built)
        for key, value in (("labels_1", labels_1), ("labels_0", len(built) - labels_1)):
            if value:
                counts[key] += value
        return ChunkResult(chunk_index, records,
                           [self.recipe.max_predictions] * len(built),
                           [max(max(instance[0]), max(instance[1])) for instance in built],
                           counts)
