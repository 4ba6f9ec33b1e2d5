"""A model family is a plug-in: a toy family registered here (a bag-of-embeddings encoder and
a masked-LM objective, declared in this file only) trains and evaluates through
run_pretraining, passes the learning check's baselines, exports as a SavedModel through
export_hf --format=saved_model, and is refused a transformers export with a message: no
module of the toolkit names it."""
import json

import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from common.cli_options import UserError
from pretrain import run_pretraining
from pretrain.interop import export_hf
from pretrain.models import config as config_lib
from pretrain.models import eval_metrics, heads, layers, registry
from pretrain.models.family import EvalHead, MASKED_LM_HEAD, ModelFamily
from tests.testutil.pretrain_data import make_examples, run_options, write_records

SEQ, PREDS, BATCH, VOCAB = 16, 4, 8, 50


class ToyConfig(config_lib.KeywordConfig):
    """vocab_size, hidden_size, max_position_embeddings: nothing else."""

    def __init__(self, vocab_size, hidden_size=16, max_position_embeddings=32,
                 model_type="toy"):
        if model_type != "toy":
            raise config_lib.ConfigError("a ToyConfig needs model_type \"toy\"")
        self.vocab_size, self.hidden_size = vocab_size, hidden_size
        self.max_position_embeddings, self.model_type = max_position_embeddings, model_type
        self.type_vocab_size = 2

    @property
    def max_sequence_length(self):
        return self.max_position_embeddings

    def to_dict(self):
        return {"model_type": "toy", "vocab_size": self.vocab_size,
                "hidden_size": self.hidden_size,
                "max_position_embeddings": self.max_position_embeddings}

    def to_json_string(self):
        return json.dumps(self.to_dict(), indent=2, sort_keys=True) + "\n"


class ToyEncoder:
    """Token + position embeddings, one tanh layer: [B, S] ids -> [B, S, H]."""

    def __init__(self, config, is_training, input_ids, input_mask=None, token_type_ids=None,
                 **unused):
        del is_training, input_mask, token_type_ids, unused
        with tf.variable_scope("toy"):
            self.table = tf.get_variable("word_embeddings", [config.vocab_size,
                                                             config.hidden_size],
                                         initializer=layers.create_initializer(0.1))
            positions = tf.get_variable("position_embeddings",
                                        [config.max_position_embeddings, config.hidden_size],
                                        initializer=layers.create_initializer(0.1))
            seq_length = layers.get_shape_list(input_ids, 2)[1]
            hidden = tf.gather(self.table, input_ids) + positions[:seq_length]
            # tf.layers.dense's layer (Glorot uniform kernel) without Keras
            self.sequence = layers.dense(hidden, config.hidden_size, "mix", activation=tf.tanh,
                                         kernel_initializer=tf.glorot_uniform_initializer())
            self.pooled = self.sequence[:, 0]

    def get_sequence_output(self):
        return self.sequence

    def get_pooled_output(self):
        return self.pooled

    def get_embedding_table(self):
        return self.table


def toy_objective(config, features, is_training, use_sentence_head, **unused):
    """Masked LM over the toy encoder, with the outputs the shared masked-LM metrics read."""
    del use_sentence_head, unused
    model = ToyEncoder(config, is_training, features["input_ids"])
    hidden = heads.gather_indexes(model.get_sequence_output(),
                                  features["masked_lm_positions"])       # [B*P, H]
    logits = tf.matmul(hidden, model.get_embedding_table(), transpose_b=True)
    log_probs = tf.nn.log_softmax(logits, axis=-1)                       # [B*P, V]
    labels = tf.reshape(features["masked_lm_ids"], [-1])
    weights = tf.reshape(tf.cast(features["masked_lm_weights"], tf.float32), [-1])
    example_loss = -tf.reduce_sum(log_probs * tf.one_hot(labels, config.vocab_size), axis=-1)
    loss = tf.reduce_sum(example_loss * weights) / (tf.reduce_sum(weights) + 1e-5)
    return {"loss": loss, "masked_lm_loss": loss, "masked_lm_example_loss": example_loss,
            "masked_lm_log_probs": log_probs}


def toy_flops(config, seq_length, max_predictions, sentence_head=False, span_boundary=False):
    del sentence_head, span_boundary
    h = config.hidden_size
    return 3 * (seq_length * 2 * h * h + max_predictions * 2 * h * config.vocab_size)


TOY = ModelFamily(
    "toy", (), ToyConfig, f"{__name__}:ToyEncoder", f"{__name__}:toy_objective",
    "pretrain.models.eval_metrics:masked_lm_eval_metrics", lambda config: None,
    "a test's toy family", eval_heads=(MASKED_LM_HEAD,), logged_losses=("loss",
                                                                         "masked_lm_loss"),
    sentence_and_span_heads=False, training_flops=f"{__name__}:toy_flops",
    pooler_scope="toy/pooler/", vocab_tables=("toy/word_embeddings",), vocab_biases=())


@pytest.fixture
def toy():
    registry.register(TOY)
    yield TOY
    registry.unregister("toy")


def test_register_refuses_a_taken_name_and_what_is_not_a_family(toy):
    with pytest.raises(config_lib.ConfigError, match="model_type toy is already registered"):
        registry.register(toy)
    with pytest.raises(config_lib.ConfigError, match="takes a ModelFamily"):
        registry.register("toy")
    assert registry.model_types()[-1] == "toy"
    assert isinstance(EvalHead, type) and MASKED_LM_HEAD in registry.declared("eval_heads")


def test_a_toy_family_trains_evaluates_and_exports_through_the_same_commands(toy, tmp_path):
    config_file = tmp_path / "toy.json"
    config_file.write_text(json.dumps({"model_type": "toy", "vocab_size": VOCAB}))
    records = write_records(tmp_path / "data.tfrecord",
                            make_examples(BATCH, SEQ, PREDS, VOCAB, sentence_task="none"),
                            mode="roberta")
    out = tmp_path / "out"
    result = run_pretraining.run(run_options(SEQ, PREDS, BATCH, **{
        "bert_config_file": str(config_file), "input_file": records, "output_dir": str(out),
        "do_eval": True, "learning_rate": 3e-2, "num_train_steps": 80,
        "log_every_n_steps": 40, "max_seq_length": None, "max_predictions_per_seq": None}))
    assert result["global_step"] == 80 and result["sentence_head"] is False
    written = result["eval_results"]
    assert written["masked_lm_num_targets"] == BATCH * PREDS
    # The toy sees no other position, only its own: it learns which token each position
    # holds, well above the labels' own unigram baseline (0.125 on these records).
    assert written["masked_lm_accuracy"] > written["masked_lm_unigram_accuracy"] + 0.15, written
    assert written["masked_lm_loss"] < written["masked_lm_unigram_loss"], written
    assert not result.get("not_learned")
    names = dict(tf.train.list_variables(str(out)))
    assert names["toy/word_embeddings"] == [VOCAB, 16] and not any(
        name.startswith(("bert/", "cls/")) for name in names)
    assert json.loads((out / "bert_config.json").read_text())["model_type"] == "toy"

    saved = tmp_path / "saved"
    export_hf.export_model(str(out), output_dir=str(saved), format="saved_model")
    with tf.Graph().as_default(), tf.Session() as session:
        meta = tf.saved_model.loader.load(session, ["serve"], str(saved))
        signature = meta.signature_def["serving_default"]
        ids = np.arange(2 * SEQ).reshape(2, SEQ) % VOCAB
        feed = {signature.inputs[name].name: value for name, value in (
            ("input_ids", ids), ("input_mask", np.ones_like(ids)),
            ("segment_ids", np.zeros_like(ids)))}
        output = session.run(signature.outputs["sequence_output"].name, feed)
    assert output.shape == (2, SEQ, 16) and np.isfinite(output).all()

    with pytest.raises(UserError, match="model_type 'toy' cannot be exported to transformers"):
        export_hf.export_model(str(out), output_dir=str(tmp_path / "hf"))
    assert not (tmp_path / "hf").exists()
