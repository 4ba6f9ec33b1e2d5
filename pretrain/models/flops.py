"""Pretraining compute per example, in FLOPs (2 per multiply-add) of the matmuls.

Forward + backward = 3 x forward (the backward pass does two matmuls for every one
of the forward pass). Counted: dense layers, attention scores and mixing, the output
layers over the vocab. Left out, as in the usual 6·N·T estimate: layer norms,
softmaxes, activations, sampling and embedding lookups. A family's count is its
registry entry's `training_flops` (the masked-LM families' below, the others' in their
folders); all take
(config, seq_length, max_predictions, sentence_head=..., span_boundary=...).

Plain Python over the config's fields: no TensorFlow.
"""


def encoder_forward_flops(hidden_size, intermediate_size, num_layers, seq_length):
    """Forward FLOPs of one sequence through `num_layers` transformer layers: Q, K, V and
    output projections, the two feed-forward layers, and the S x S scores and mixing."""
    per_token = 2 * (4 * hidden_size * hidden_size + 2 * hidden_size * intermediate_size)
    attention = 2 * 2 * seq_length * hidden_size  # QK^T and AV, per token
    return seq_length * num_layers * (per_token + attention)


def masked_lm_training_flops(config, seq_length, max_predictions, sentence_head=False,
                             span_boundary=False):
    """BERT / RoBERTa / ALBERT (either layout): encoder, ALBERT's embedding projection,
    the MLM head at `max_predictions` positions, and the optional sentence (pooler +
    2-way output) and span boundary heads. ALBERT's shared layers cost what separate
    ones cost: sharing saves parameters, not compute."""
    h, v, e = config.hidden_size, config.vocab_size, config.word_embedding_width
    forward = encoder_forward_flops(h, config.intermediate_size, config.num_hidden_layers,
                                    seq_length)
    if e != h:
        forward += seq_length * 2 * e * h            # embedding_hidden_mapping_in
    google_albert = config.is_albert and config.albert_layout == "google"
    transform_width = e if google_albert else h       # cls/predictions/transform/dense
    per_prediction = 2 * h * transform_width + 2 * transform_width * v
    if config.is_albert and not google_albert:
        per_prediction += 2 * h * e                   # brightmart: back through word_embeddings_2
    forward += max_predictions * per_prediction
    if sentence_head:
        forward += 2 * h * h + 2 * h * 2              # pooler, seq_relationship
    if span_boundary:  # MLP over [left; right; position] -> E, then the tied output layer
        forward += max_predictions * (2 * 3 * h * h + 2 * h * e + 2 * e * v)
    return 3 * forward
