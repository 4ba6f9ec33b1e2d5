"""XLNet's pretraining objective: the permutation language model on the query stream.

Each predicted position's query stream (which sees the positions before it in the
drawn factorisation order, not its own token) is scored against the vocabulary
through the tied LM head; the loss is the mean cross-entropy over real predictions
(target_weights 1).

Features (permutation.permutation_features, batched): input_ids [B, S], input_mask
[B, S] (1 = real), segment_ids [B, S], perm_mask [B, S, S], target_mapping [B, P, S],
target_ids [B, P], target_weights [B, P].
"""
import tensorflow.compat.v1 as tf

from pretrain.models.xlnet.modeling import XLNetModel, lm_logits


def xlnet_pretraining_losses(config, features, is_training, use_sentence_head=False,
                             use_one_hot_embeddings=False, compute_type=tf.float32,
                             span_boundary_objective=False):
    """Returns loss (= plm_loss), plm_loss, plm_example_loss [B*P], plm_log_probs [B*P, V],
    plm_ids [B*P] and plm_weights [B*P] (what the eval metrics read).

    The registry's objective signature; XLNet has no sentence or span boundary head,
    so asking for one is an error (run_pretraining turns them off for this family)."""
    if use_sentence_head or span_boundary_objective:
        raise ValueError("XLNet trains the permutation LM only: no sentence or span "
                         "boundary head")
    model = XLNetModel(config, is_training, features["input_ids"], features.get("input_mask"),
                       features.get("segment_ids"), perm_mask=features["perm_mask"],
                       target_mapping=features["target_mapping"],
                       use_one_hot_embeddings=use_one_hot_embeddings, compute_type=compute_type)
    logits = lm_logits(model.get_query_output(), model.get_embedding_table(), config)
    log_probs = tf.reshape(tf.nn.log_softmax(tf.cast(logits, tf.float32), axis=-1),
                           [-1, config.n_token])
    ids = tf.reshape(tf.cast(features["target_ids"], tf.int32), [-1])
    weights = tf.reshape(tf.cast(features["target_weights"], tf.float32), [-1])
    example_loss = -tf.reduce_sum(log_probs * tf.one_hot(ids, config.n_token), axis=-1)
    loss = tf.reduce_sum(example_loss * weights) / (tf.reduce_sum(weights) + 1e-5)
    return {"loss": loss, "plm_loss": loss, "plm_example_loss": example_loss,
            "plm_log_probs": log_probs, "plm_ids": ids, "plm_weights": weights}
