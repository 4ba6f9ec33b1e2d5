"""Settings of one data generation run (the CLI flags as a plain dataclass)."""
import dataclasses
import os

from data_gen.corpus_reader import DECODE_ERROR_POLICIES
from data_gen.instances import MODES
from data_gen.segmentation import SEGMENTERS
from data_gen.tfrecord_writer import COMPRESSIONS


class ConfigError(ValueError):
    """A flag value is out of range or inconsistent with another."""


@dataclasses.dataclass
class GenerationConfig:
    """Flag names and meanings follow google-research/bert's create_pretraining_data.py."""
    input_file: str
    output_file: str
    vocab_file: str
    mode: str = "roberta"
    do_lower_case: bool = True
    max_seq_length: int = 128
    max_predictions_per_seq: int = 20
    masked_lm_prob: float = 0.15
    random_seed: int = 12345
    dupe_factor: int = 10
    short_seq_prob: float = 0.1
    do_whole_word_mask: bool = True
    ngram: int = 3
    num_workers: int = 0  # 0 = all cores
    num_output_shards: int = 0  # 0 = output_file is a comma-separated list
    segmenter: str = "jieba"
    jieba_user_dict: str = ""
    jieba_hmm: bool = True
    compression: str = "none"
    pack_within_document: bool = False
    full_width_to_half: bool = False
    on_decode_error: str = "error"
    max_sentences_per_document: int = 2000
    chunk_chars: int = 40000
    progress: bool = True

    def validate(self):
        """Raises ConfigError naming the flag when a value is unusable."""
        checks = [
            (self.mode in MODES, f"--mode={self.mode!r}: choose one of {', '.join(MODES)}"),
            (self.segmenter in SEGMENTERS,
             f"--segmenter={self.segmenter!r}: choose one of {', '.join(SEGMENTERS)}"),
            (self.compression in COMPRESSIONS,
             f"--compression={self.compression!r}: choose one of {', '.join(COMPRESSIONS)}"),
            (self.on_decode_error in DECODE_ERROR_POLICIES,
             f"--on_decode_error={self.on_decode_error!r}: choose one of "
             f"{', '.join(DECODE_ERROR_POLICIES)}"),
            (self.max_seq_length >= 5, f"--max_seq_length={self.max_seq_length}: must be >= 5"),
            (self.max_predictions_per_seq >= 1,
             f"--max_predictions_per_seq={self.max_predictions_per_seq}: must be >= 1"),
            (0.0 < self.masked_lm_prob <= 1.0,
             f"--masked_lm_prob={self.masked_lm_prob}: must be in (0, 1]"),
            (0.0 <= self.short_seq_prob <= 1.0,
             f"--short_seq_prob={self.short_seq_prob}: must be in [0, 1]"),
            (self.dupe_factor >= 1, f"--dupe_factor={self.dupe_factor}: must be >= 1"),
            (self.ngram >= 1, f"--ngram={self.ngram}: must be >= 1"),
            (self.num_workers >= 0, f"--num_workers={self.num_workers}: must be >= 0 (0 = all cores)"),
            (self.num_output_shards >= 0,
             f"--num_output_shards={self.num_output_shards}: must be >= 0"),
            (0 <= self.random_seed < 2 ** 63, f"--random_seed={self.random_seed}: must be in [0, 2**63)"),
            (bool(self.input_file), "--input_file is required"),
            (bool(self.output_file), "--output_file is required"),
            (bool(self.vocab_file), "--vocab_file is required"),
        ]
        for ok, message in checks:
            if not ok:
                raise ConfigError(message)
        if not os.path.isfile(self.vocab_file):
            raise ConfigError(f"--vocab_file={self.vocab_file}: file not found")

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

    def ngram_for_mode(self):
        """N-gram masking is ALBERT's: other modes mask single units."""
        return self.ngram if self.mode == "albert" else 1

    def as_flags(self):
        return dataclasses.asdict(self)
