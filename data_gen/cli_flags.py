"""absl flag definitions of `python -m data_gen.create_pretraining_data`.

Names and meanings of google-research/bert's flags are kept, so existing
scripts only change the module name. Defaults come from GenerationConfig.
"""
from data_gen.config import GenerationConfig
from data_gen.corpus_reader import DECODE_ERROR_POLICIES
from data_gen.instances import MODES
from data_gen.segmentation import SEGMENTERS
from data_gen.tfrecord_writer import COMPRESSIONS

_defined = False


def define_flags():
    """Defines the flags once (idempotent)."""
    global _defined
    if _defined:
        return
    _defined = True
    from absl import flags
    d = GenerationConfig.__dataclass_fields__

    def default(name):
        return d[name].default

    flags.DEFINE_string("input_file", None, "Input text, comma-separated files or globs: "
                        "one sentence per line, blank line between documents.")
    flags.DEFINE_string("output_file", None, "Output TFRecord file(s), comma-separated; or a "
                        "prefix when --num_output_shards > 0.")
    flags.DEFINE_string("vocab_file", None, "BERT vocab file (one token per line).")
    flags.DEFINE_enum("mode", default("mode"), list(MODES),
                      "roberta: full-sentence packing, no sentence task; albert: sentence-order "
                      "prediction + n-gram masking + token_boundary; bert: next-sentence prediction.")
    flags.DEFINE_bool("do_lower_case", default("do_lower_case"),
                      "Lower-case and strip accents (use with uncased/Chinese vocabs).")
    flags.DEFINE_integer("max_seq_length", default("max_seq_length"), "Maximum sequence length.")
    flags.DEFINE_integer("max_predictions_per_seq", default("max_predictions_per_seq"),
                         "Maximum number of masked LM predictions per sequence.")
    flags.DEFINE_float("masked_lm_prob", default("masked_lm_prob"), "Masked LM probability.")
    flags.DEFINE_integer("random_seed", default("random_seed"), "Seed for data generation.")
    flags.DEFINE_integer("dupe_factor", default("dupe_factor"),
                         "Number of times to duplicate the input data (with different masks).")
    flags.DEFINE_float("short_seq_prob", default("short_seq_prob"),
                       "Probability of creating sequences shorter than the maximum (albert/bert).")
    flags.DEFINE_bool("do_whole_word_mask", default("do_whole_word_mask"),
                      "Mask whole words: jieba words for Chinese, WordPiece words otherwise.")
    flags.DEFINE_integer("ngram", default("ngram"),
                         "albert mode: largest n of n-gram masking over whole words (P(n) ~ 1/n).")
    flags.DEFINE_integer("num_workers", default("num_workers"),
                         "Worker processes (0 = all cores). Output is identical for any value.")
    flags.DEFINE_integer("num_output_shards", default("num_output_shards"),
                         "If > 0, write PREFIX-0000i-of-0000n shards with --output_file as prefix.")
    flags.DEFINE_enum("segmenter", default("segmenter"), list(SEGMENTERS),
                      "Chinese word segmenter for whole-word masking ('none': per character).")
    flags.DEFINE_string("jieba_user_dict", default("jieba_user_dict"),
                        "Optional jieba user dictionary file.")
    flags.DEFINE_bool("jieba_hmm", default("jieba_hmm"),
                      "Let jieba find unknown words with its HMM (slower, jieba's default).")
    flags.DEFINE_enum("compression", default("compression"), list(COMPRESSIONS),
                      "Output compression (gzip: read with compression_type='GZIP').")
    flags.DEFINE_bool("pack_within_document", default("pack_within_document"),
                      "roberta mode: never pack sentences of two documents together.")
    flags.DEFINE_bool("full_width_to_half", default("full_width_to_half"),
                      "Map full-width ASCII variants (e.g. ＡＢＣ１２３，) to half-width.")
    flags.DEFINE_enum("on_decode_error", default("on_decode_error"), list(DECODE_ERROR_POLICIES),
                      "Lines that are not UTF-8: 'error' stops naming file and byte offset; "
                      "'skip' skips and counts them.")
    flags.DEFINE_integer("max_sentences_per_document", default("max_sentences_per_document"),
                         "A document is cut after this many sentences (files without blank lines).")
    flags.DEFINE_integer("chunk_chars", default("chunk_chars"),
                         "Characters per work unit. Changes the output (chunk = seed unit).")
    flags.DEFINE_bool("progress", default("progress"), "Print a progress line on stderr.")
    flags.mark_flags_as_required(["input_file", "output_file", "vocab_file"])
