"""Pretraining objective of the masked-LM families (BERT/RoBERTa, ALBERT): masked LM, the
optional sentence head (NSP or SOP, by the data) and SpanBERT's span boundary objective.

Reached through `pretrain.models.registry` (a family's `pretraining_losses`), so the
training room never names a family's heads itself.
"""
import tensorflow.compat.v1 as tf

from pretrain.models import heads
from pretrain.models.bert import modeling, span_boundary


def masked_lm_pretraining_losses(bert_config, features, is_training, use_sentence_head,
                                 use_one_hot_embeddings=False, compute_type=tf.float32,
                                 span_boundary_objective=False):
    """Builds the encoder and the masked-LM family's heads; returns a dict of loss and
    eval tensors.

    Keys: loss (MLM + sentence [+ SBO]), masked_lm_loss, masked_lm_example_loss [B*P],
    masked_lm_log_probs [B*P, V], and with the sentence head sentence_loss,
    sentence_example_loss [B], sentence_log_probs [B, 2] (else sentence_loss 0).
    span_boundary_objective: also SpanBERT's SBO head (pretrain.models.bert.span_boundary; the
    features need masked_lm_span_left/right), weight 1 in the loss; adds
    span_boundary_loss, span_boundary_example_loss [B*P], span_boundary_log_probs [B*P, V].
    """
    # BertModel builds either family's encoder, as config.model_type says.
    model = modeling.BertModel(
        config=bert_config, is_training=is_training, input_ids=features["input_ids"],
        input_mask=features["input_mask"], token_type_ids=features["segment_ids"],
        use_one_hot_embeddings=use_one_hot_embeddings, compute_type=compute_type)
    mlm_loss, mlm_example_loss, mlm_log_probs = heads.get_masked_lm_output(
        bert_config, model.get_sequence_output(), model.get_embedding_table(),
        features["masked_lm_positions"], features["masked_lm_ids"],
        features["masked_lm_weights"], output_projection=model.get_embedding_projection())
    out = {"masked_lm_loss": mlm_loss, "masked_lm_example_loss": mlm_example_loss,
           "masked_lm_log_probs": mlm_log_probs}
    if use_sentence_head:
        s_loss, s_example_loss, s_log_probs = heads.get_sentence_output(
            bert_config, model.get_pooled_output(), features["next_sentence_labels"])
        out.update(sentence_loss=s_loss, sentence_example_loss=s_example_loss,
                   sentence_log_probs=s_log_probs)
        out["loss"] = mlm_loss + s_loss
    else:
        out["sentence_loss"] = tf.constant(0.0)
        out["loss"] = tf.identity(mlm_loss)
    if span_boundary_objective:
        sbo_loss, sbo_example_loss, sbo_log_probs = span_boundary.get_span_boundary_output(
            bert_config, model.get_sequence_output(), model.get_embedding_table(),
            features["masked_lm_positions"], features["masked_lm_span_left"],
            features["masked_lm_span_right"], features["masked_lm_ids"],
            features["masked_lm_weights"])
        out.update(span_boundary_loss=sbo_loss, span_boundary_example_loss=sbo_example_loss,
                   span_boundary_log_probs=sbo_log_probs)
        out["loss"] = out["loss"] + sbo_loss
    return out
