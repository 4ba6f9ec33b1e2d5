"""Shared by the --mode=xlnet tests: a tiny sentencepiece model with zihangdai/xlnet's
special pieces, trained on the data_gen test sentences."""
import pathlib

from tests.testutil import data_gen_runs as util

# Upstream's ids 0-8: <unk> <s> </s> <cls> <sep> <pad> <mask> <eod> <eop>.
CONTROL_PIECES = ["<cls>", "<sep>", "<pad>", "<mask>"]
USER_PIECES = ["<eod>", "<eop>"]


def train_spm(directory, vocab_size=240):
    """Trains DIRECTORY/spiece.model on util.SENTENCES (plus a little English) -> path."""
    import sentencepiece  # pylint: disable=import-outside-toplevel
    directory = pathlib.Path(directory)
    text = directory / "spm_corpus.txt"
    text.write_text("\n".join(util.SENTENCES * 4 + ["hello world 2019, play running."]) + "\n",
                    encoding="utf-8")
    sentencepiece.SentencePieceTrainer.train(
        input=str(text), model_prefix=str(directory / "spiece"), vocab_size=vocab_size,
        model_type="unigram", control_symbols=CONTROL_PIECES, user_defined_symbols=USER_PIECES,
        character_coverage=1.0, hard_vocab_limit=False, minloglevel=2)
    return directory / "spiece.model"
