"""Old import paths of modules that moved into data_gen's rooms, kept as aliases.

Before data_gen/ had rooms, code imported `from data_gen import tokenization` (as users
of google-research/bert import `tokenization`); `import data_gen.masking`,
`from data_gen.tokenization import FullTokenizer` and the like keep working: the old
name is a module whose attributes are the new module's (common.moved_modules). The
entry points (`python -m data_gen.build_vocab`, ...) are kept as files instead.
New code imports the new path (MOVED's values).
"""
from common.moved_modules import MovedModules

MOVED = {f"data_gen.{old}": f"data_gen.{room}.{old}" for room, olds in {
    "text": ("tokenization", "spm_tokenization", "segmentation", "jieba_fast",
             "jieba_dictionary_cache", "vocabulary", "vocab_gaps", "corpus_reader",
             "unreadable_input", "document_split"),
    "records": ("record_schema", "metadata", "example_proto", "tfrecord_writer",
                "tfrecord_scan", "shard_pieces"),
    "runner": ("chunk_processing", "parallel", "ordered_writes", "worker_profile", "beam_dask",
               "corpus_chunks"),
    "tools": ("lcqmc_format",),
    "modes.mlm": ("instances", "masking", "similar_words"),
    "modes.xlnet": ("xlnet_processing", "xlnet_instances", "xlnet_masking"),
}.items() for old in olds}

_ALIASES = MovedModules("data_gen", MOVED)
install = _ALIASES.install
alias = _ALIASES.alias
