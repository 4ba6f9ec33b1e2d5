"""Pretraining heads (masked LM, 2-way sentence task) and their loss.

Fine-tuning heads (sequence and token classification) are in pretrain.models.task_heads;
the heads' eval metrics in pretrain.training.pretraining_model_fn.

Heads run entirely in float32 (their inputs are cast), so logits and losses
are float32 whatever the encoder's compute type. Variable names follow
google-research/bert: `cls/predictions/...`, `cls/seq_relationship/...`.
"""
import tensorflow.compat.v1 as tf

from pretrain import cpu_kernels
from pretrain.models import layers


def gather_indexes(sequence_tensor, positions):
    """Gathers the vectors at `positions` of each example.

    Args:
      sequence_tensor: [B, S, W].
      positions: [B, P] int positions into S.
    Returns:
      [B*P, W].
    """
    batch_size, seq_length, width = layers.get_shape_list(sequence_tensor, 3,
                                                          "sequence_tensor")
    positions = tf.cast(positions, tf.int32)
    offsets = tf.reshape(tf.range(batch_size, dtype=tf.int32) * seq_length, [-1, 1])
    flat_positions = tf.reshape(positions + offsets, [-1])
    flat_sequence = tf.reshape(sequence_tensor, [-1, width])
    return tf.gather(flat_sequence, flat_positions)


def prefers_one_hot_cross_entropy(tensor):
    """Which cross-entropy formulation suits the device `tensor` is computed on.

    one-hot: on TPU (Google's choice there; no sparse gather) and on CPU with
    oneDNN kernels; the fused sparse op: on GPU and on CPU with Eigen kernels.
    The device is the tensor's placement, else the default placement
    (a GPU when one is visible, as TensorFlow places ops).
    """
    if _in_tpu_computation():
        return True
    device = (tensor.device or "").upper()
    if not device:
        device = "GPU" if tf.config.list_logical_devices("GPU") else "CPU"
    if "GPU" in device:
        return False
    return cpu_kernels.onednn_enabled()


def _in_tpu_computation():
    from tensorflow.python.tpu import tpu_function  # pylint: disable=import-outside-toplevel
    return tpu_function.get_tpu_context().number_of_shards is not None


def cross_entropy(logits, log_probs, label_ids, one_hot):
    """Per-row cross-entropy of [N, V] logits against [N] int labels -> [N].

    Two formulations of the same value, chosen by speed for the device
    (`prefers_one_hot_cross_entropy`): with oneDNN CPU kernels,
    `-sum(one_hot * log_softmax)` is faster (its ops are multi-threaded);
    with Eigen kernels the fused sparse op is, since it avoids an [N, V]
    one-hot and several passes over the logits. On the [640, 21128] MLM head
    of batch 32 x 20 predictions, forward + backward: 110 vs 129 ms (oneDNN)
    and 183 vs 162 ms (Eigen).
    """
    label_ids = tf.cast(label_ids, tf.int32)
    if one_hot:
        depth = layers.get_shape_list(logits, 2, "logits")[1]
        labels = tf.one_hot(label_ids, depth=depth, dtype=log_probs.dtype)
        return -tf.reduce_sum(labels * log_probs, axis=-1)
    return tf.nn.sparse_softmax_cross_entropy_with_logits(labels=label_ids, logits=logits)


def _mlm_transform_width(config):
    if config.is_albert and config.albert_layout == "google":
        return config.embedding_size
    return config.hidden_size


def get_masked_lm_output(config, input_tensor, output_weights, positions, label_ids,
                         label_weights, output_projection=None):
    """Masked-LM head and loss, under `cls/predictions`.

    transform = LayerNorm(act(dense(gather(input_tensor, positions)))) to width H
    (Google ALBERT: E); for the brightmart layout the transform is projected
    back to E with `word_embeddings_2` transposed, as albert_zh does;
    logits = transform @ output_weights^T + output_bias.

    Args:
      input_tensor: [B, S, H] sequence output (any float dtype).
      output_weights: [V, E] tied embedding table (model.get_embedding_table()).
      positions, label_ids: [B, P] int.
      label_weights: [B, P] float, 1.0 real prediction / 0.0 padding.
      output_projection: [E, H] (brightmart only; model.get_embedding_projection()).
        When None it is taken from the graph collection the model fills.
    Returns:
      (loss scalar, per_example_loss [B*P], log_probs [B*P, V]), float32.
    """
    vocab_size = config.vocab_size
    hidden = gather_indexes(tf.cast(input_tensor, tf.float32), positions)
    with tf.variable_scope("cls/predictions"):
        with tf.variable_scope("transform"):
            hidden = layers.dense(hidden, _mlm_transform_width(config), "dense",
                                  activation=layers.get_activation(config.hidden_act),
                                  initializer_range=config.initializer_range)
            hidden = layers.layer_norm(hidden, "LayerNorm")
        if config.is_albert and config.albert_layout == "brightmart":
            if output_projection is None:
                found = tf.get_collection(layers.EMBEDDING_PROJECTION_COLLECTION)
                if not found:
                    raise ValueError("brightmart ALBERT MLM head needs output_projection="
                                     "model.get_embedding_projection()")
                output_projection = found[-1]
            hidden = tf.matmul(hidden, tf.cast(output_projection, tf.float32),
                               transpose_b=True)
        output_bias = tf.get_variable("output_bias", shape=[vocab_size],
                                      initializer=tf.zeros_initializer())
        logits = tf.matmul(hidden, tf.cast(output_weights, tf.float32), transpose_b=True)
        logits = tf.nn.bias_add(logits, output_bias)
        loss, per_example_loss, log_probs = weighted_prediction_loss(logits, label_ids,
                                                                     label_weights)
    return loss, per_example_loss, log_probs


def weighted_prediction_loss(logits, label_ids, label_weights):
    """Cross-entropy of token predictions, averaged over the real ones.

    Args:
      logits: [N, V] float32 (N = B*P predictions).
      label_ids: [B, P] (or [N]) int; label_weights: [B, P] (or [N]), 1.0 real / 0.0 padding.
    Returns:
      (loss = sum(w * ce) / (sum(w) + 1e-5), per_example_loss [N], log_probs [N, V]).
    """
    log_probs = tf.nn.log_softmax(logits, axis=-1)

    label_ids = tf.reshape(label_ids, [-1])
    label_weights = tf.cast(tf.reshape(label_weights, [-1]), tf.float32)
    per_example_loss = cross_entropy(logits, log_probs, label_ids,
                                     one_hot=prefers_one_hot_cross_entropy(logits))
    numerator = tf.reduce_sum(label_weights * per_example_loss)
    denominator = tf.reduce_sum(label_weights) + 1e-5
    loss = numerator / denominator
    return loss, per_example_loss, log_probs


def get_sentence_output(config, pooled_output, labels):
    """2-way sentence head (NSP or SOP), under `cls/seq_relationship`.

    Args:
      pooled_output: [B, H].
      labels: [B] or [B, 1] int in {0, 1}.
    Returns:
      (mean loss, per_example_loss [B], log_probs [B, 2]), float32.
    """
    with tf.variable_scope("cls/seq_relationship"):
        output_weights = tf.get_variable(
            "output_weights", shape=[2, config.hidden_size],
            initializer=layers.create_initializer(config.initializer_range))
        output_bias = tf.get_variable("output_bias", shape=[2],
                                      initializer=tf.zeros_initializer())
        logits = tf.matmul(tf.cast(pooled_output, tf.float32), output_weights,
                           transpose_b=True)
        logits = tf.nn.bias_add(logits, output_bias)
        log_probs = tf.nn.log_softmax(logits, axis=-1)
        labels = tf.reshape(labels, [-1])
        one_hot_labels = tf.one_hot(labels, depth=2, dtype=tf.float32)
        per_example_loss = -tf.reduce_sum(one_hot_labels * log_probs, axis=-1)
        loss = tf.reduce_mean(per_example_loss)
    return loss, per_example_loss, log_probs
