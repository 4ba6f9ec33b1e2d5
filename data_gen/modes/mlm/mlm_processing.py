"""The masked-LM modes' chunk processor: a chunk's tokenized documents -> instances
(packed, or sentence pairs for the mode's sentence task), masked by the run's recipe
and encoded as record_schema.FEATURES (in C when built; same bytes either way).
"""
import collections
import os

from data_gen.modes.mlm import instances as instance_lib
from data_gen.modes.mlm import masking
from data_gen.modes.mlm.similar_words import load_similar_words_cached
from data_gen.records.example_proto import InstanceEncoder, WordIdsEncoder, records_module
from data_gen.runner.chunk_processing import ChunkProcessor, ChunkResult, chunk_rng


class MaskedLMChunkProcessor(ChunkProcessor):
    """ChunkProcessor's reading plus the masking config and the encoder of one of
    data_gen.modes' masked-LM modes (`mode`, a DataMode)."""

    def __init__(self, mode, config, use_native=None):
        super().__init__(config, use_native)
        self.mode = mode
        vocab = self.tokenizer.vocab
        self.special = instance_lib.SpecialIds(vocab["[CLS]"], vocab["[SEP]"])
        recipe = config.masking_recipe()
        similar = None
        if recipe == "macbert":
            vocab_stat = os.stat(config.vocab_file)
            tokenizer_key = (f"{os.path.abspath(config.vocab_file)}|{vocab_stat.st_size}|"
                             f"{vocab_stat.st_mtime_ns}|{config.do_lower_case}|"
                             f"{config.full_width_to_half}")
            similar, self.similar_words_counts = load_similar_words_cached(
                config.similar_words_file, self.word_ids, tokenizer_key)
        self.masking_config = masking.MaskingConfig(
            config.masked_lm_prob, config.max_predictions_per_seq, vocab["[MASK]"],
            masking.replacement_ids(vocab), config.do_whole_word_mask,
            config.ngram_for_masking(), recipe, similar)
        self.encoder = InstanceEncoder(config.max_seq_length, config.max_predictions_per_seq,
                                       len(vocab), with_token_boundary=mode.token_boundary,
                                       use_native=use_native,
                                       with_span_boundaries=self.masking_config.span_boundaries)
        # One call per instance: masking, token_boundary (albert), encoding.
        self._mask_and_encode = masking.make_mask_and_encode(
            self.masking_config, self.encoder, use_native=use_native)
        # The Python path reuses whole-word units across roberta's dupes; the
        # C path recomputes them inside its call, cheaper than holding tuples.
        python_records = records_module(use_native) is None
        # (train-time masking numbers the words from the starts as it encodes: no units)
        self._precompute_units = python_records and not config.train_time_masking
        # The tokenizer and the masking + encoding ran in C (the bulk of the work).
        self.uses_c_accelerators = self._native is not None and not python_records
        # --train_time_masking: records unmasked, with word_ids (run_pretraining masks them).
        self._unmasked = (WordIdsEncoder(config.max_seq_length, len(vocab), use_native)
                          if config.train_time_masking else None)

    def build_instances(self, documents, rng, counts):
        """All dupe passes of the chunk, shuffled with the chunk's generator.

        Returns tuples (ids, starts, segment_ids, label, units). Roberta
        packing does not depend on the generator, so it is built once and the
        dupes differ only by their masks.
        """
        config = self.config
        whole_word = config.do_whole_word_mask
        if self.mode.sentence_task == "none":  # full-sentence packing
            packed = instance_lib.create_roberta_instances(
                documents, config.max_seq_length, self.special, config.pack_within_document)
            if self._precompute_units:
                built = [instance + (masking.whole_word_units(instance[1], whole_word),)
                         for instance in packed]
            else:
                built = [instance + (None,) for instance in packed]
            built *= config.dupe_factor
        else:
            task = self.mode.sentence_task
            built = instance_lib.create_all_pair_instances(
                documents, config.dupe_factor, config.max_seq_length, config.short_seq_prob,
                self.special, rng, task, counts, use_native=self._use_native)
            if self._precompute_units:  # whole_word_units draws nothing: order is free
                built = [instance + (masking.whole_word_units(instance[1], whole_word),)
                         for instance in built]
            else:
                built = [instance + (None,) for instance in built]
        instance_lib.shuffle(built, rng, use_native=self._use_native)
        return built

    def _process(self, chunk_index, documents):
        counts = collections.Counter()
        rng = chunk_rng(self.config.random_seed, chunk_index)
        tokenized = self.tokenize_documents(documents, counts)
        mask_and_encode = self._mask_and_encode
        records, masked, max_ids = [], [], []
        labels_1 = 0
        built = self.build_instances(tokenized, rng, counts)
        for ids, starts, segment_ids, label, units in built:
            if self._unmasked is None:
                record, num_masked, max_id = mask_and_encode(ids, starts, segment_ids, label,
                                                             units, rng)
            else:
                record, num_masked, max_id = self._encode_unmasked(ids, starts, segment_ids,
                                                                   label, units)
            records.append(record)
            masked.append(num_masked)
            max_ids.append(max_id)
            labels_1 += label
        for key, value in (("labels_1", labels_1), ("labels_0", len(built) - labels_1)):
            if value:
                counts[key] += value
        return ChunkResult(chunk_index, records, masked, max_ids, counts)

    def _encode_unmasked(self, ids, starts, segment_ids, label, units):
        """(record, 0 masked, largest id) of an instance for train-time masking."""
        del units  # the encoder numbers the same units from the starts
        record = self._unmasked.encode(ids, segment_ids, starts, label,
                                       self.config.do_whole_word_mask)
        return record, 0, max(ids)
