"""The masked-LM modes (roberta, albert, bert): instances (instances.py), the masking
recipes (masking.py; MacBERT's similar words, similar_words.py), their chunk processor
(mlm_processing.py) and flags (mlm_flags.py). The hooks of data_gen.modes.registry."""
from data_gen.modes.mlm.mlm_flags import MaskedLMFlags as FLAGS  # noqa: F401 (a hook)
from data_gen.modes.mlm.mlm_flags import flag_checks  # noqa: F401 (a hook)

inspector = None  # BERT-style records: data_gen.tools.inspect_records formats them itself


def make_processor(mode, config, use_native=None):
    """The MaskedLMChunkProcessor of `config`."""
    from data_gen.modes.mlm.mlm_processing import MaskedLMChunkProcessor  # noqa
    return MaskedLMChunkProcessor(mode, config, use_native)


def load_vocabulary(mode, config, localize=lambda path: path):
    """--vocab_file's RunVocabulary; with --train_time_masking its sidecar fields say what
    run_pretraining needs to draw the masks (masking.train_time_sidecar)."""
    from data_gen.text.vocabulary import load_wordpiece  # noqa
    from data_gen.modes.mlm.masking import train_time_sidecar  # noqa
    vocab, vocabulary = load_wordpiece(config, localize)
    if config.train_time_masking:
        vocabulary.sidecar.update(train_time_sidecar(vocab))
    return vocabulary


def report_lines(account):
    """No lines of its own: the shared report says all."""
    del account
    return []
