"""What a data mode (--mode) is to the rest of data_gen: a DataMode and its room's hooks.

A room (a sub-package of data_gen.modes) implements one or more modes and offers, as
module-level names:
  FLAGS                                 a dataclass of the flags only it reads
                                        (GenerationConfig inherits every room's FLAGS)
  flag_checks(config, active)           [(ok, message)]; active: config.mode is one of its modes
  make_processor(mode, config, use_native)  the chunk processor of a worker
  load_vocabulary(mode, config, localize)   text.vocabulary.RunVocabulary of the run
  report_lines(account)                 its lines of the end-of-run report ([] if none)
  inspector                             None (BERT-style records) or an object with
                                        problems(record, meta) and format(record, names, meta)
"""
import dataclasses


@dataclasses.dataclass(frozen=True)
class DataMode:
    """One --mode.

    summary: its line in --mode's help. sentence_task: what the records' sentence
    label means ("none" | "sop" | "nsp", the sidecar's field). masking: the recipe
    --masking=auto means. features: the records' record_schema.Feature table.
    token_boundary: records carry token_boundary. room: the module of its room (see
    the module doc).
    needs: what the corpus must give to make a record (the empty-output message).
    tokenizer_flag: another flag that may stand in for --vocab_file, or "".
    """
    name: str
    summary: str
    sentence_task: str
    masking: str
    features: tuple
    room: object
    token_boundary: bool = False
    needs: str = ""
    tokenizer_flag: str = ""

    def make_processor(self, config, use_native=None):
        """The chunk processor of `config` (a worker builds one)."""
        return self.room.make_processor(self, config, use_native)

    def load_vocabulary(self, config, localize=lambda path: path):
        """text.vocabulary.RunVocabulary of `config`; VocabError naming the flag and file."""
        return self.room.load_vocabulary(self, config, localize)

    def required_names(self):
        """Names of the features every record of this mode has."""
        return [feature.name for feature in self.features if not feature.optional]
