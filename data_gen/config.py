"""Settings of one data generation run (the CLI flags as a plain dataclass)."""
import dataclasses
import os

from common import model_limits
from common.file_utils import missing_file_message
from common.model_configs import resolve_config_file
from common.cli_options import UserError, option, required
from data_gen import modes
from data_gen.runner.corpus_chunks import DEFAULT_CHUNK_BYTES
from data_gen.text.corpus_reader import DECODE_ERROR_POLICIES
from data_gen.text.document_split import default_eval_paths
from data_gen.text.segmentation import SEGMENTERS
from data_gen.records.tfrecord_writer import COMPRESSIONS


class ConfigError(UserError):
    """A flag value is out of range or inconsistent with another."""


@dataclasses.dataclass
class GenerationConfig(*modes.FLAG_GROUPS):
    """Flags of create_pretraining_data; names and meanings follow google-research/bert's.

    The flags only some modes read come from their rooms (data_gen.modes.FLAG_GROUPS)."""
    input_file: str = required("Input text, comma-separated files or globs: one sentence per "
                               "line, blank line between documents.")
    output_file: str = required("Output TFRecord file(s), comma-separated; or a prefix when "
                                "--num_output_shards > 0.")
    vocab_file: str = option("", "BERT vocab file (one token per line). Required, unless the "
                             "mode takes another tokenizer (--spm_model_file).")
    mode: str = option(next(iter(modes.MODES)), modes.mode_help(), choices=tuple(modes.MODES))
    do_lower_case: bool = option(True, "Lower-case and strip accents (use with uncased/Chinese "
                                 "vocabs).")
    max_seq_length: int = option(128, "Maximum sequence length.")
    bert_config_file: str = option("", "Optional: the model config (bert_config.json, or "
                                   "a shipped config's name) the records are for; when given, --max_seq_length is checked "
                                   "against it before any work.")
    max_predictions_per_seq: int = option(20, "Maximum number of masked LM predictions per "
                                          "sequence.")
    random_seed: int = option(12345, "Seed for data generation.")
    dupe_factor: int = option(10, "Number of times to duplicate the input data (with different "
                              "masks).")
    do_whole_word_mask: bool = option(True, "Mask whole words: jieba words for Chinese, "
                                      "WordPiece words otherwise.")
    num_workers: int = option(0, "Worker processes (0 = all cores). Output is identical for any "
                              "value.")
    num_output_shards: int = option(0, "If > 0, write PREFIX-0000i-of-0000n shards with "
                                    "--output_file as prefix.")
    segmenter: str = option("jieba", "Chinese word segmenter for whole-word masking ('none': "
                            "per character).", choices=SEGMENTERS)
    jieba_user_dict: str = option("", "Optional jieba user dictionary file.")
    jieba_hmm: bool = option(True, "Let jieba find unknown words with its HMM (slower, jieba's "
                             "default).")
    compression: str = option("none", "Output compression (gzip: read with "
                              "compression_type='GZIP').", choices=COMPRESSIONS)
    full_width_to_half: bool = option(False, "Map full-width ASCII variants (e.g. ＡＢＣ１２３，) "
                                      "to half-width.")
    on_decode_error: str = option("error", "Lines that are not UTF-8: 'error' stops naming file, "
                                  "line and (GB18030/Big5) the conversion; 'skip' drops and "
                                  "counts them, up to --max_unreadable_share.",
                                  choices=DECODE_ERROR_POLICIES)
    max_unreadable_share: float = option(0.01, "With --on_decode_error=skip, the run fails if "
                                         "more than this share of its non-blank lines were "
                                         "not UTF-8 (nothing is written).")
    max_sentences_per_document: int = option(2000, "A document is cut after this many sentences "
                                              "(files without blank lines).")
    chunk_bytes: int = option(DEFAULT_CHUNK_BYTES, "Input bytes per work unit (the seed unit; "
                              "chunk k starts at the first blank line after byte k*chunk_bytes "
                              "of the inputs laid end to end). Changes the output.")
    eval_share: float = option(0.0, "Hold out this share of the documents for evaluation: "
                               "their records go to --eval_output_file, never to the training "
                               "files. A document's split follows a hash of its text and "
                               "--random_seed (the same for any worker count; copies of a "
                               "document stay together). 0: no held-out files.")
    eval_output_file: str = option("", "With --eval_share: where the held-out records go, as "
                                   "--output_file (default: an eval/ folder beside each output "
                                   "file, same names).")
    eval_dupe_factor: int = option(1, "With --eval_share: masking passes over the held-out "
                                   "documents (one suffices to score a model).")
    progress: bool = option(True, "Print a progress line on stderr.")
    profile_workers: bool = option(False, "End with where the time went: each worker's busy, "
                                   "waiting-for-offsets, writing and idle seconds, and the "
                                   "parent's serial seconds at start and end.")

    def validate(self):
        """Raises ConfigError naming the flag when a value is unusable."""
        try:
            mode = modes.get(self.mode)
        except ValueError as error:
            raise ConfigError(str(error)) from None
        checks = [
            (self.segmenter in SEGMENTERS,
             f"--segmenter={self.segmenter!r}: choose one of {', '.join(SEGMENTERS)}"),
            (self.compression in COMPRESSIONS,
             f"--compression={self.compression!r}: choose one of {', '.join(COMPRESSIONS)}"),
            (self.on_decode_error in DECODE_ERROR_POLICIES,
             f"--on_decode_error={self.on_decode_error!r}: choose one of "
             f"{', '.join(DECODE_ERROR_POLICIES)}"),
            (0.0 <= self.max_unreadable_share <= 1.0,
             f"--max_unreadable_share={self.max_unreadable_share}: must be in [0, 1]"),
            (self.max_seq_length >= 5, f"--max_seq_length={self.max_seq_length}: must be >= 5"),
            (self.max_predictions_per_seq >= 1,
             f"--max_predictions_per_seq={self.max_predictions_per_seq}: must be >= 1"),
            (self.dupe_factor >= 1, f"--dupe_factor={self.dupe_factor}: must be >= 1"),
            (0.0 <= self.eval_share < 1.0,
             f"--eval_share={self.eval_share}: must be in [0, 1) (e.g. 0.05 holds out 5% of "
             "the documents)"),
            (self.eval_share > 0 or not self.eval_output_file,
             "--eval_output_file needs --eval_share > 0 (the share of documents to hold out)"),
            (self.eval_dupe_factor >= 1,
             f"--eval_dupe_factor={self.eval_dupe_factor}: must be >= 1"),
            (self.num_workers >= 0, f"--num_workers={self.num_workers}: must be >= 0 (0 = all cores)"),
            (self.chunk_bytes >= 1024, f"--chunk_bytes={self.chunk_bytes}: must be >= 1024"),
            (self.num_output_shards >= 0,
             f"--num_output_shards={self.num_output_shards}: must be >= 0"),
            (0 <= self.random_seed < 2 ** 63, f"--random_seed={self.random_seed}: must be in [0, 2**63)"),
            (bool(self.input_file), "--input_file is required"),
            (bool(self.output_file), "--output_file is required"),
            (bool(self.vocab_file) or bool(self.spm_model_file),
             "--vocab_file is required" + (f" (or {mode.tokenizer_flag})" if mode.tokenizer_flag
                                           else "") + ": the vocab of the model the data is "
             "for, e.g. the vocab.txt beside its checkpoint (import_hf and run_pretraining "
             "write one there), or a new one from python -m data_gen.tools.build_vocab"),
        ]
        for ok, message in checks + modes.flag_checks(self):
            if not ok:
                raise ConfigError(message)
        for flag, path, usual_name in (("--vocab_file", self.vocab_file, "vocab.txt"),
                                       ("--spm_model_file", self.spm_model_file, "spiece.model"),
                                       ("--similar_words_file", self.similar_words_file, None)):
            if path and not os.path.isfile(path):
                raise ConfigError(missing_file_message(flag, path, usual_name))
        if self.bert_config_file:
            self._check_against_model()

    def _check_against_model(self):
        """--max_seq_length fits the model of --bert_config_file (common.model_limits)."""
        try:
            model = model_limits.read_config(resolve_config_file(self.bert_config_file))
        except ValueError as err:
            raise ConfigError(f"--bert_config_file: {err}") from None
        too_long = model_limits.length_error(self.max_seq_length, model,
                                             f"--bert_config_file={self.bert_config_file}")
        if too_long:
            raise ConfigError(too_long)

    def resolved_num_workers(self):
        return self.num_workers or (os.cpu_count() or 1)

    def output_paths(self):
        """The output files: a comma-separated list, or PREFIX-0000i-of-0000n shards."""
        if self.num_output_shards:
            count = self.num_output_shards
            return [f"{self.output_file}-{i:05d}-of-{count:05d}" for i in range(count)]
        paths = [p.strip() for p in self.output_file.split(",") if p.strip()]
        if len(set(paths)) != len(paths):
            raise ConfigError(f"--output_file lists a file twice: {self.output_file}")
        return paths

    def eval_output_paths(self):
        """The held-out files of --eval_share, one per output file (--eval_output_file, else
        an eval/ folder beside each); [] without --eval_share."""
        if not self.eval_share:
            return []
        outputs = self.output_paths()
        if not self.eval_output_file:
            return default_eval_paths(outputs)
        held_out = dataclasses.replace(self, output_file=self.eval_output_file).output_paths()
        if len(held_out) != len(outputs):
            raise ConfigError(f"--eval_output_file names {len(held_out)} file(s) but "
                              f"--output_file {len(outputs)}: give as many")
        overlap = set(held_out) & set(outputs)
        if overlap:
            raise ConfigError(f"--eval_output_file and --output_file both name "
                              f"{sorted(overlap)[0]}: the held-out records need files of "
                              "their own")
        return held_out

    def masking_recipe(self):
        """The masking recipe: --masking, or when auto wwm with --train_time_masking, else
        the mode's own (DataMode.masking)."""
        if self.masking != "auto":
            return self.masking
        if self.train_time_masking:
            return "wwm"
        return modes.get(self.mode).masking

    def masking_account(self):
        """The end-of-run report's word for the masking: the recipe, and when it is drawn."""
        recipe = self.masking_recipe()
        return (f"{recipe}, drawn at train time (the records carry word_ids, no masks)"
                if self.train_time_masking else recipe)

    def ngram_for_masking(self):
        """--ngram applies to the ngram recipe (albert's default) only."""
        return self.ngram if self.masking_recipe() == "ngram" else 1

    def as_flags(self):
        return dataclasses.asdict(self)
