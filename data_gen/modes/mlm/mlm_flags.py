"""The flags only the masked-LM modes (roberta, albert, bert) read, and their checks
(GenerationConfig inherits MaskedLMFlags)."""
import dataclasses

from common.cli_options import option
from data_gen.modes.mlm.masking import MASKINGS


@dataclasses.dataclass
class MaskedLMFlags:
    """Masked-LM instances and masking recipes."""
    masked_lm_prob: float = option(0.15, "Masked LM probability.")
    short_seq_prob: float = option(0.1, "Probability of creating sequences shorter than the "
                                   "maximum (albert/bert).")
    masking: str = option("auto", "Masking recipe over whole words. auto: wwm (roberta, bert) or "
                          "ngram (albert); wwm: whole words, 80/10/10 per token; ngram: ALBERT "
                          "n-grams, P(n) ~ 1/n up to --ngram; span: SpanBERT spans of "
                          "Geometric(0.2) words (at most 10), one 80/10/10 decision per span, "
                          "records carry span boundaries; macbert: n-grams of 1-4 words "
                          "(40/30/20/10%), 80% similar words (--similar_words_file), 10% random, "
                          "10% kept.", choices=MASKINGS)
    similar_words_file: str = option("", "macbert masking: TSV of a word, then its similar words "
                                     "(python -m data_gen.tools.build_similar_words makes one).")
    ngram: int = option(3, "albert mode: largest n of n-gram masking over whole words "
                        "(P(n) ~ 1/n).")
    train_time_masking: bool = option(False, "Write the records unmasked, with each token's "
                                      "whole word (word_ids): run_pretraining draws new "
                                      "whole-word masks each time it reads one (--mlm_probability"
                                      ", a rate schedule), so --dupe_factor=1 is enough. "
                                      "--masking=wwm only (auto means wwm then).")
    pack_within_document: bool = option(False, "roberta mode: never pack sentences of two "
                                        "documents together.")


def _default(config, name):
    """The default of flag `name` of the config's class."""
    return next(field.default for field in dataclasses.fields(config) if field.name == name)


def flag_checks(config, active):
    """(ok, message) of the masking flags (whatever the mode: another mode refuses them)."""
    del active
    return [
        (0.0 < config.masked_lm_prob <= 1.0,
         f"--masked_lm_prob={config.masked_lm_prob}: must be in (0, 1]"),
        (0.0 <= config.short_seq_prob <= 1.0,
         f"--short_seq_prob={config.short_seq_prob}: must be in [0, 1]"),
        (config.ngram >= 1, f"--ngram={config.ngram}: must be >= 1"),
        (config.masking in MASKINGS,
         f"--masking={config.masking!r}: choose one of {', '.join(MASKINGS)}"),
        (config.masking_recipe() != "macbert" or bool(config.similar_words_file),
         "--masking=macbert needs --similar_words_file (a TSV of a word, then its similar "
         "words; python -m data_gen.tools.build_similar_words makes one from word vectors)"),
        (bool(config.similar_words_file) <= (config.masking_recipe() == "macbert"),
         f"--similar_words_file is used by --masking=macbert only (--masking={config.masking})"),
        (config.masking_recipe() in ("wwm", "ngram") or config.do_whole_word_mask,
         f"--masking={config.masking} works over whole words: drop --nodo_whole_word_mask"),
        (not config.train_time_masking or config.masking_recipe() == "wwm",
         f"--train_time_masking draws whole-word masks (wwm) at train time; --masking="
         f"{config.masking} draws its spans when the data is made: drop one of the two"),
        (not config.train_time_masking
         or config.masked_lm_prob == _default(config, "masked_lm_prob"),
         f"--masked_lm_prob={config.masked_lm_prob} sets the rate of masks drawn now; with "
         "--train_time_masking the rate is run_pretraining's --mlm_probability: drop it"),
        (not config.train_time_masking or config.max_predictions_per_seq
         == _default(config, "max_predictions_per_seq"),
         f"--max_predictions_per_seq={config.max_predictions_per_seq}: records made with "
         "--train_time_masking have no prediction slots (run_pretraining sizes them for its "
         "rate): drop it, or give it to run_pretraining"),
        (not (config.train_time_masking and config.mode == "roberta")
         or max(config.dupe_factor, config.eval_dupe_factor) == 1,
         f"--train_time_masking with --mode=roberta: --dupe_factor={config.dupe_factor} / "
         f"--eval_dupe_factor={config.eval_dupe_factor} would write identical copies (the "
         "masks are drawn at train time); give --dupe_factor=1 and train longer instead"),
    ]
