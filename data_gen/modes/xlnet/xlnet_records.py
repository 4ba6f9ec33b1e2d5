"""The features of an XLNet pretraining record (--mode=xlnet), declared once: the xlnet
room's encoder writes them (its C twin data_gen.native._xlnet the same bytes),
pretrain.models.xlnet reads them, data_gen.tools.inspect_records checks them.
"""
from data_gen.records.record_schema import SEQ, Feature

# XLNet's pretraining records (data_gen --mode=xlnet), as zihangdai/xlnet's data_utils
# writes them: R reused tokens, A, <sep>, B, <sep>, <cls> (R = the sidecar's
# reuse_length); every feature is exactly as long as its table says (no padding).
XLNET_FEATURES = (
    Feature("input", "int64", SEQ, "token ids: reuse window, A, <sep>, B, <sep>, <cls>"),
    Feature("target", "int64", SEQ, "the stream's next token of each position (after A's "
            "last token the stream's, at the first <sep> B's first; <cls> at the last two)"),
    Feature("seg_id", "int64", SEQ, "0 for the reuse window, A and the first <sep>; 1 for B "
            "and the second <sep>; 2 for <cls>"),
    Feature("is_masked", "int64", SEQ, "1 at the positions to predict (exactly "
            "max_predictions_per_seq, whole words, never <sep>/<cls>/<eod>)"),
    Feature("label", "int64", 1, "1 = B continues A in the stream, 0 = B is random text "
            "(not trained)"),
)
XLNET_LABEL_MEANING = "1 = B continues A, 0 = B is random text (no head trains it)"


def xlnet_feature_lengths(max_seq_length):
    """{name: (dtype, length)} of an XLNet record, in the table's order."""
    sizes = {SEQ: max_seq_length, 1: 1}
    return {feature.name: (feature.dtype, sizes[feature.length]) for feature in XLNET_FEATURES}
