"""XLNet's pretraining compute per example (pretrain.models.flops counts alike)."""


def training_flops(config, seq_length, max_predictions, sentence_head=False,
                         span_boundary=False):
    """XLNet without memory: the content stream over `seq_length` tokens (with the r
    projection of the 2S relative positions and the position scores, S x 2S per
    head, per layer), the query stream at `max_predictions` positions (its q and o
    projections, scores against the S keys and positions, feed-forward), and the tied LM
    head at the predictions. No sentence or span heads; the flags are accepted for a
    common signature."""
    del sentence_head, span_boundary
    d, inner, layers_, v = config.d_model, config.d_inner, config.n_layer, config.n_token
    width = config.n_head * config.d_head
    s, p = seq_length, max_predictions
    content = s * (2 * 4 * d * width + 2 * 2 * d * inner + 2 * 2 * s * width)
    content += 2 * s * 2 * d * width + s * 2 * (2 * s) * width  # r projection, position scores
    query = p * (2 * 2 * d * width + 2 * 2 * d * inner + 2 * 2 * s * width
                 + 2 * (2 * s) * width)
    forward = layers_ * (content + query) + p * 2 * d * v
    return 3 * forward
