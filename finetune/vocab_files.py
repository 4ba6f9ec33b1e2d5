"""The tokenizer over the vocab a fine-tuning run uses (which vocab that is:
pretrain.checkpoints.vocab_choice.finetuning_vocab): data_gen.text.tokenization.FullTokenizer
or data_gen.text.spm_tokenization.SpmFullTokenizer (the same interface for the task layer;
the sentencepiece package is the optional spm extra).
"""
from data_gen.text import spm_tokenization
from data_gen.text.tokenization import FullTokenizer, VocabError
from pretrain.checkpoints.vocab_choice import VocabChoiceError


def make_tokenizer(assets, do_lower_case):
    """FullTokenizer of assets.vocab_file, or SpmFullTokenizer of assets.spm_model_file;
    a missing sentencepiece package or an unusable vocab stops with one line."""
    if not assets.spm_model_file:
        try:
            return FullTokenizer(assets.vocab_file, do_lower_case=do_lower_case)
        except VocabError as error:
            message = str(error)
            raise VocabChoiceError(message if assets.vocab_file in message
                                   else f"vocab {assets.vocab_file}: {message}") from None
    try:
        return spm_tokenization.SpmFullTokenizer(assets.spm_model_file, do_lower_case)
    except spm_tokenization.SpmUnavailable:
        raise VocabChoiceError(
            f"{assets.spm_model_file} is a sentencepiece model (the model's vocab), which needs "
            f"the sentencepiece package: {spm_tokenization.INSTALL_HINT}") from None
    except VocabError as error:
        raise VocabChoiceError(str(error)) from None
