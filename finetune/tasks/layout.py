"""Where a model family wants its special tokens in a fine-tuning record, written once.

    "bert"  (BERT, RoBERTa, ALBERT, ELECTRA): [CLS] a [SEP] (b [SEP]), segments 0 ... 1 ...
    "xlnet" (zihangdai/xlnet's classifier_utils): a [SEP] (b [SEP]) [CLS], segments 0 ... 1 ...
            and 2 for [CLS], whose final state is the summary the classifier reads.

The layout is the model family's (pretrain.models.family.InputLayout, a ModelFamily's input_layout).
Padding goes on the right for both, with input_mask 1 on real tokens: upstream XLNet pads
on the left and takes the last position, while this toolkit's XLNet takes the last real
token (pretrain.models.xlnet.modeling.XLNetModel.get_pooled_output); relative positions do
not move with padding and padded keys are blocked, so the two give the same summary.
Padding positions hold the tokenizer's `pad_id` (a sentencepiece model's <pad>, as
transformers' XLNetTokenizer pads; zihangdai/xlnet pads with 0, its <unk>), else id 0 as
google-research/bert pads; under input_mask 0 the id changes no real token's output.
"""
from pretrain.models import family as family_lib

BERT_LAYOUT = family_lib.BERT_LAYOUT


def special_token_count(num_texts):
    """[CLS] and one [SEP] per text, in either layout."""
    return 1 + num_texts


def wrap(texts_tokens, layout=BERT_LAYOUT):
    """texts_tokens: one or two token lists -> (tokens, segment_ids) laid out as `layout`
    (a pretrain.models.family.InputLayout: the model family's) says."""
    tokens, segment_ids = (["[CLS]"], [layout.cls_segment]) if layout.cls_first else ([], [])
    for segment, text_tokens in enumerate(texts_tokens):
        tokens += list(text_tokens) + ["[SEP]"]
        segment_ids += [segment] * (len(text_tokens) + 1)
    if not layout.cls_first:
        tokens.append("[CLS]")
        segment_ids.append(layout.cls_segment)
    return tokens, segment_ids


def pad_id(tokenizer):
    """The id padding positions hold: the tokenizer's `pad_id` (data_gen.text.spm_tokenization.
    SpmFullTokenizer: <pad>), else 0 (a WordPiece vocab's [PAD], BERT's padding)."""
    return getattr(tokenizer, "pad_id", 0)


def first_text_position(layout=BERT_LAYOUT):
    """Position of the first text token: 1 after [CLS], else 0."""
    return 1 if layout.cls_first else 0
