"""The flags only --mode=xlnet reads, and their checks (GenerationConfig inherits XLNetFlags)."""
import dataclasses

from common.cli_options import option


@dataclasses.dataclass
class XLNetFlags:
    """--mode=xlnet ignores --masked_lm_prob, --masking, --ngram, --short_seq_prob and
    --pack_within_document: it predicts exactly --max_predictions_per_seq positions."""
    reuse_length: int = option(0, "xlnet mode: tokens of each record carried over from the "
                               "token stream before its A segment (0 = max_seq_length // 2).")
    mask_alpha: int = option(6, "xlnet mode: a span of n words to predict is placed in a context "
                             "of mask_alpha * n / mask_beta tokens (zihangdai/xlnet's default 6).")
    mask_beta: int = option(1, "xlnet mode: see --mask_alpha (zihangdai/xlnet's default 1).")
    eod_token: str = option("[unused1]", "xlnet mode with --vocab_file: the vocab token written "
                            "between documents (upstream's <eod>); never predicted.")
    spm_model_file: str = option("", "xlnet mode: a sentencepiece model (e.g. the spiece.model of "
                                 "hfl/chinese-xlnet-base) instead of --vocab_file; its pieces "
                                 "<sep> <cls> <eod> <mask> <pad> <unk> are the special tokens. "
                                 "Needs `pip install sentencepiece`.")

    def xlnet_reuse_length(self):
        """--reuse_length, 0 meaning half of --max_seq_length."""
        return self.reuse_length or self.max_seq_length // 2


def flag_checks(config, active):
    """(ok, message) of the xlnet-only flags: in range in xlnet mode, unset otherwise."""
    if not active:
        return [(not config.spm_model_file,
                 f"--spm_model_file is used by --mode=xlnet only (--mode={config.mode}); "
                 "drop it or pass --vocab_file"),
                (config.reuse_length == 0,
                 f"--reuse_length is used by --mode=xlnet only (--mode={config.mode})")]
    seq, reuse = config.max_seq_length, config.xlnet_reuse_length()
    predictions = config.max_predictions_per_seq
    return [
        (not (config.vocab_file and config.spm_model_file),
         "--vocab_file and --spm_model_file: give one tokenizer, not both"),
        (config.masking == "auto",
         f"--masking={config.masking}: --mode=xlnet chooses whole-word spans as "
         "zihangdai/xlnet does (--mask_alpha, --mask_beta); drop --masking"),
        (not config.similar_words_file, "--similar_words_file is not used by --mode=xlnet"),
        (not config.train_time_masking, "--train_time_masking is for the masked-LM modes "
         "(roberta, albert, bert); --mode=xlnet draws its permutations at train time already"),
        (config.mask_beta >= 1, f"--mask_beta={config.mask_beta}: must be >= 1"),
        (config.mask_alpha >= config.mask_beta,
         f"--mask_alpha={config.mask_alpha}: must be >= --mask_beta={config.mask_beta} (a span "
         "of n words sits in a context of mask_alpha * n / mask_beta >= n tokens)"),
        (1 <= reuse <= seq - 5,
         f"--reuse_length={config.reuse_length}: must be in [1, max_seq_length - 5 = "
         f"{seq - 5}]: a record holds the reused tokens, then A, <sep>, B, <sep>, <cls> "
         "with at least one token in A and in B"),
        (predictions - predictions // 2 <= reuse and predictions // 2 <= seq - reuse - 3,
         f"--max_predictions_per_seq={predictions}: xlnet predicts "
         f"{predictions - predictions // 2} of the {reuse} reused tokens (--reuse_length) "
         f"and {predictions // 2} of the "
         f"{seq - reuse - 3} tokens of A and B; lower it or change --reuse_length"),
    ]
