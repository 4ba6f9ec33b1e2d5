"""init_from_checkpoint: released layouts, reports, errors, embedding surgery."""
import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from pretrain.checkpoints import checkpoint_loading
from pretrain.checkpoints.checkpoint_loading import CheckpointMismatchError, init_from_checkpoint
from pretrain.models import heads, registry
from pretrain.models.bert import modeling

from tests.testutil.float32_bounds import assert_close, encoder_ulps, magnitude, summation_ulps
from tests.testutil.tiny_models import (expected_variables, input_batch, random_tensors,
                                    random_weights, tiny_config, upstream_electra_case,
                                    with_upstream_optimizer_state, write_checkpoint)
from tests.testutil.numpy_bert import NumpyEncoder

BERT = tiny_config(model_type="bert")
GOOGLE = tiny_config(model_type="albert", albert_layout="google", embedding_size=8)
BRIGHTMART = tiny_config(model_type="albert", albert_layout="brightmart", embedding_size=8)


def _sequence_ulps(config):
    """Bound on two float32 evaluations of `config`'s sequence output on input_batch()'s
    [2, 8] (float32_bounds case 2): the encoder's longest chain of sums, and the ALBERT
    embedding projection where there is one."""
    extra = [config["embedding_size"]] if "embedding_size" in config else []
    return encoder_ulps(config["hidden_size"], config["intermediate_size"], 8,
                        config["num_attention_heads"], config["num_hidden_layers"], extra)


def build_with_heads(config_dict, ids=None, scope=None):
    config = modeling.BertConfig.from_dict(config_dict)
    ids = tf.constant(input_batch()[0]) if ids is None else ids
    model = registry.create_encoder(config, False, ids, scope=scope)
    mlm = heads.get_masked_lm_output(config, model.get_sequence_output(),
                                     model.get_embedding_table(), tf.constant([[1, 2]] * 2),
                                     tf.constant([[5, 6]] * 2), tf.constant([[1.0, 1.0]] * 2))
    heads.get_sentence_output(config, model.get_pooled_output(), tf.constant([0, 1]))
    return model, mlm


def load_and_run(config_dict, checkpoint, fetch_fn=None, **load_kwargs):
    """Builds model+heads, loads, returns (report, fetched values, variable values)."""
    with tf.Graph().as_default():
        model, mlm = build_with_heads(config_dict)
        report = init_from_checkpoint(checkpoint, log_fn=None, **load_kwargs)
        with tf.Session() as session:
            session.run(tf.global_variables_initializer())
            fetched = session.run(fetch_fn(model, mlm)) if fetch_fn else None
            values = {v.op.name: session.run(v) for v in tf.trainable_variables()}
    return report, fetched, values


@pytest.mark.parametrize("config", [BERT, GOOGLE, BRIGHTMART], ids=["bert", "google", "brightmart"])
def test_released_layout_loads_completely_and_matches_numpy(config, tmp_path):
    weights = random_weights(config, seed=3)
    weights["global_step"] = np.array(1000, np.int64)
    # Optimizer state as Google's code and our run_pretraining write it.
    optimizer_state = ["bert/embeddings/word_embeddings/adam_m",
                       "bert/embeddings/word_embeddings/AdamWeightDecay",
                       "bert/embeddings/word_embeddings/AdamWeightDecay_1",
                       "gradient_accumulation/bert/embeddings/word_embeddings",
                       "loss_scale/scale"]
    for name in optimizer_state:
        weights[name] = np.zeros_like(weights["bert/embeddings/word_embeddings"])
    prefix = write_checkpoint(tmp_path / "bert_model.ckpt", weights)
    report, (sequence, mlm_loss), values = load_and_run(
        config, prefix, lambda m, mlm: [m.get_sequence_output(), mlm[0]])
    assert report.missing_in_checkpoint == [] and report.unused_in_checkpoint == []
    assert report.shape_mismatches == []
    assert sorted(report.training_state) == sorted(optimizer_state + ["global_step"])
    assert len(report.loaded) == len(expected_variables(config))
    for name, value in values.items():
        np.testing.assert_array_equal(value, weights[name])  # loaded as stored: exact
    ids, mask, types = input_batch()
    ref, _, _ = NumpyEncoder(config, weights).forward(ids, np.ones_like(mask), np.zeros_like(types))
    # float32 graph against float64 NumPy: the graph's own rounding, bounded as two orders
    assert_close(sequence, ref, _sequence_ulps(config), err_msg="sequence")
    assert np.isfinite(mlm_loss)


def test_ymcui_checkpoint_without_cls_reports_heads_missing(tmp_path):
    weights = {k: v for k, v in random_weights(BERT, seed=4).items() if not k.startswith("cls/predictions/")}
    prefix = write_checkpoint(tmp_path / "bert_model.ckpt", weights)
    messages = []
    with tf.Graph().as_default():
        build_with_heads(BERT)
        report = init_from_checkpoint(prefix, log_fn=messages.append)
    assert sorted(report.missing_in_checkpoint) == [
        "cls/predictions/output_bias", "cls/predictions/transform/LayerNorm/beta",
        "cls/predictions/transform/LayerNorm/gamma", "cls/predictions/transform/dense/bias",
        "cls/predictions/transform/dense/kernel"]
    assert len(report.loaded) == len(weights)
    table = "\n".join(messages)
    assert "missing" in table and "cls/predictions/output_bias" in table
    assert "%d loaded, 5 missing" % len(weights) in table


def test_mismatched_vocab_fails_with_both_shapes(tmp_path):
    prefix = write_checkpoint(tmp_path / "m.ckpt", random_weights(dict(BERT, vocab_size=60)))
    with tf.Graph().as_default():
        build_with_heads(BERT)
        with pytest.raises(CheckpointMismatchError) as info:
            init_from_checkpoint(prefix, log_fn=None)
        message = str(info.value)
        assert "bert/embeddings/word_embeddings: model shape [50, 16], checkpoint shape [60, 16]" \
            in message
        assert "vocab_size" in message and "cls/predictions/output_bias" in message
        report = init_from_checkpoint(prefix, log_fn=None, allow_shape_mismatch=True)
    assert sorted(n for n, _, _ in report.shape_mismatches) == [
        "bert/embeddings/word_embeddings", "cls/predictions/output_bias"]
    assert [m[1:] for m in report.shape_mismatches if "word" in m[0]] == [([50, 16], [60, 16])]


def test_wrong_layout_gets_a_hint(tmp_path):
    prefix = write_checkpoint(tmp_path / "m.ckpt", random_weights(BRIGHTMART))
    messages = []
    with tf.Graph().as_default():
        build_with_heads(GOOGLE)
        report = init_from_checkpoint(prefix, log_fn=messages.append, allow_shape_mismatch=True)
    assert "set \"albert_layout\": \"brightmart\"" in messages[-1]
    assert "bert/encoder/transformer/group_0/inner_group_0/LayerNorm/gamma" in \
        report.missing_in_checkpoint
    assert "bert/encoder/layer_shared/output/dense/kernel" in report.unused_in_checkpoint
    with tf.Graph().as_default():
        modeling.BertModel(modeling.BertConfig.from_dict(BERT), False, tf.ones([1, 4], tf.int32))
        with pytest.raises(CheckpointMismatchError, match="layer_shared"):
            init_from_checkpoint(write_checkpoint(tmp_path / "enc.ckpt", {
                k: v for k, v in random_weights(BRIGHTMART).items() if "/encoder/" in k}),
                log_fn=None)


def test_outer_scope_and_module_prefix_and_directory_are_resolved(tmp_path):
    weights = random_weights(BERT, seed=5, heads=False)
    tf.io.gfile.makedirs(str(tmp_path / "hub"))
    write_checkpoint(tmp_path / "hub" / "model.ckpt-7",
                     {"module/" + k: v for k, v in weights.items()})
    with open(tmp_path / "hub" / "checkpoint", "w") as f:
        f.write('model_checkpoint_path: "model.ckpt-7"\n')
    with tf.Graph().as_default():
        with tf.variable_scope("classifier"):
            modeling.BertModel(modeling.BertConfig.from_dict(BERT), False,
                               tf.constant(input_batch()[0]))
        report = init_from_checkpoint(str(tmp_path / "hub"), log_fn=None)
        with tf.Session() as session:
            session.run(tf.global_variables_initializer())
            pooler = session.run(tf.global_variables("classifier/bert/pooler/dense/kernel")[0])
    assert report.checkpoint.endswith("model.ckpt-7")
    assert ("classifier/bert/pooler/dense/kernel", "module/bert/pooler/dense/kernel",
            [16, 16]) in report.loaded
    np.testing.assert_array_equal(pooler, weights["bert/pooler/dense/kernel"])  # as stored
    with pytest.raises(FileNotFoundError, match="no checkpoint found"):
        checkpoint_loading.resolve_checkpoint(str(tmp_path / "nothing"))


def test_keep_tokens_gives_full_model_outputs_on_kept_ids(tmp_path):
    """The encoder's outputs bit for bit; the MLM log-probabilities up to a per-row constant,
    to a bound (kernel-path sensitive: their output matmuls have other widths)."""
    weights = random_weights(BERT, seed=6)
    prefix = write_checkpoint(tmp_path / "full.ckpt", weights)
    keep = [0, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 40, 41]
    old_to_new = {old: new for new, old in enumerate(keep)}
    ids, mask, types = input_batch()
    new_ids = np.vectorize(old_to_new.get)(ids).astype(np.int32)

    def run(config, token_ids, **kwargs):
        with tf.Graph().as_default():
            model = modeling.BertModel(modeling.BertConfig.from_dict(config), False,
                                       tf.constant(token_ids), tf.constant(mask),
                                       tf.constant(types))
            config_obj = modeling.BertConfig.from_dict(config)
            _, _, log_probs = heads.get_masked_lm_output(
                config_obj, model.get_sequence_output(), model.get_embedding_table(),
                tf.constant([[1, 3]] * 2), tf.constant([[0, 0]] * 2), tf.constant([[1.0] * 2] * 2))
            report = init_from_checkpoint(prefix, log_fn=None, **kwargs)
            with tf.Session() as session:
                session.run(tf.global_variables_initializer())
                return report, session.run([model.get_sequence_output(), log_probs])

    _, (full_sequence, full_log_probs) = run(BERT, ids)
    report, (small_sequence, small_log_probs) = run(dict(BERT, vocab_size=len(keep)), new_ids,
                                                    keep_tokens=keep)
    # The gathers read bit-identical rows (the kept ones), and the encoder runs the same
    # ops on the same shapes after them: bit-identical.
    np.testing.assert_array_equal(small_sequence, full_sequence)
    full_logits_kept = full_log_probs[:, keep]
    # log-softmax over a subset differs by a per-row constant only. Each log-prob is its
    # logit (a dot of 16 terms, in a matmul of another width: another order maybe) minus
    # the row's max and log-sum-exp (per-row constants, whatever their error), with two
    # roundings; shift[:, j] - shift[:, 0] takes four of them.
    shift = full_logits_kept - small_log_probs
    assert_close(shift, shift[:, :1] * np.ones_like(shift), 4 * (summation_ulps(16) + 2),
                 scale=magnitude([magnitude(full_logits_kept), magnitude(small_log_probs)]),
                 err_msg="log-prob shift")
    assert set(report.surgery) == {"bert/embeddings/word_embeddings",
                                   "cls/predictions/output_bias"}


def test_compound_tokens_append_mean_rows(tmp_path):
    weights = random_weights(BERT, seed=7)
    prefix = write_checkpoint(tmp_path / "full.ckpt", weights)
    keep = list(range(48))
    compound = [[3, 4], ([5, 6, 7], [1.0, 1.0, 2.0])]
    _, _, values = load_and_run(dict(BERT, vocab_size=50), prefix, keep_tokens=keep,
                                compound_tokens=compound)
    table = values["bert/embeddings/word_embeddings"]
    source = weights["bert/embeddings/word_embeddings"]
    np.testing.assert_array_equal(table[:48], source[:48])  # copied rows: exact
    # A compound row is NumPy's (weighted) mean in float32 or float64, cast to float32:
    # its sum's two orders, the weights' products, the divide and the cast, against the
    # float64 mean here.
    source = source.astype(np.float64)
    plain = (source[3] + source[4]) / 2
    weighted = (source[5] + source[6] + 2 * source[7]) / 4
    assert_close(table[48], plain, summation_ulps(2) + 2, err_msg="mean of 3, 4")
    assert_close(table[49], weighted, summation_ulps(3) + 3, err_msg="weighted mean of 5, 6, 7")
    bias = values["cls/predictions/output_bias"]
    assert_close(bias[48], weights["cls/predictions/output_bias"][[3, 4]].astype(np.float64).mean(),
                 summation_ulps(2) + 2, err_msg="bias mean of 3, 4")


def test_surgery_with_wrong_row_count_is_a_shape_error(tmp_path):
    prefix = write_checkpoint(tmp_path / "full.ckpt", random_weights(BERT))
    with tf.Graph().as_default():
        build_with_heads(BERT)
        with pytest.raises(CheckpointMismatchError, match=r"model shape \[50, 16\], "
                                                          r"checkpoint shape \[10, 16\]"):
            init_from_checkpoint(prefix, log_fn=None, keep_tokens=list(range(10)))
        with pytest.raises(ValueError, match="outside the checkpoint vocab of 50"):
            init_from_checkpoint(prefix, log_fn=None, keep_tokens=[0, 99])


# --- ELECTRA: google-research/electra's and HFL's checkpoints, and a BERT one -------------

def build_electra(config_dict):
    """ELECTRA's whole pretraining graph (both networks and both heads) on a [2, 8] batch."""
    config = registry.config_from_dict(config_dict)
    ids, mask, types = (tf.constant(a) for a in input_batch())
    features = dict(input_ids=ids, input_mask=mask, segment_ids=types,
                    masked_lm_positions=tf.constant([[1, 2]] * 2),
                    masked_lm_ids=tf.constant([[5, 6]] * 2),
                    masked_lm_weights=tf.constant([[1.0, 1.0]] * 2))
    return registry.family_of(config).pretraining_losses(config, features, False, False)


def load_electra(config_dict, checkpoint, messages=None, **loading):
    """Builds ELECTRA, loads `checkpoint` (`loading`: init_from_checkpoint's options);
    returns (report, {variable: initial value})."""
    with tf.Graph().as_default():
        build_electra(config_dict)
        report = init_from_checkpoint(
            checkpoint, log_fn=None if messages is None else messages.append, **loading)
        with tf.Session() as session:
            session.run(tf.global_variables_initializer())
            values = {v.op.name: session.run(v) for v in tf.trainable_variables()}
    return report, values


@pytest.mark.parametrize("case", ["tied_embeddings_projected", "untied_generator_embeddings"])
def test_upstream_electra_checkpoint_loads_every_variable_and_ignores_its_slots(case, tmp_path):
    config, shapes = upstream_electra_case(case)
    weights = random_tensors(shapes, seed=8)
    prefix = write_checkpoint(tmp_path / "model.ckpt-1000000",
                              with_upstream_optimizer_state(weights))
    messages = []
    report, values = load_electra(config, prefix, messages)
    assert sorted(values) == sorted(shapes)  # our graph is upstream's, variable for variable
    assert sorted(name for name, _, _ in report.loaded) == sorted(shapes)
    assert all(name == source for name, source, _ in report.loaded)  # by identity
    assert report.missing_in_checkpoint == report.unused_in_checkpoint == []
    assert report.mappings == ()
    assert len(report.training_state) == 2 * len(shapes) + 1
    assert "global_step" in report.training_state
    for name, value in values.items():
        np.testing.assert_array_equal(value, weights[name], err_msg=name)
    assert messages[-1].splitlines()[-1] == (
        "summary: %d loaded, 0 missing in checkpoint (left at initial values), 0 unused in "
        "checkpoint, 0 shape mismatches, %d optimizer/step tensors ignored"
        % (len(shapes), 2 * len(shapes) + 1))


@pytest.mark.parametrize("case", ["tied_embeddings_projected", "untied_generator_embeddings"])
def test_keep_tokens_shrinks_every_vocab_sized_table_of_an_electra_checkpoint(case, tmp_path):
    """An upstream ELECTRA checkpoint onto a smaller vocab: the shared (or the generator's own)
    word table and the generator's output bias keep the listed rows; nothing else changes."""
    config, shapes = upstream_electra_case(case)
    weights = random_tensors(shapes, seed=11)
    prefix = write_checkpoint(tmp_path / "model.ckpt", with_upstream_optimizer_state(weights))
    keep = [0, 1, 2, 3, 4, 7, 9, 12]
    report, values = load_electra(dict(config, vocab_size=len(keep)), prefix, keep_tokens=keep)
    vocab_sized = {name for name, shape in shapes.items() if shape[0] == config["vocab_size"]}
    assert vocab_sized >= {"electra/embeddings/word_embeddings",
                           "generator_predictions/output_bias"}
    assert sorted(report.surgery) == sorted(vocab_sized)
    for name, value in values.items():
        expected = weights[name][keep] if name in vocab_sized else weights[name]
        np.testing.assert_array_equal(value, expected, err_msg=name)


ELECTRA_OF_BERT = dict(BERT, model_type="electra", generator_hidden_size=0.5)


def test_bert_checkpoint_initialises_the_electra_discriminator_and_the_generator_starts_fresh(
        tmp_path):
    weights = random_weights(BERT, seed=9)  # bert/..., bert/pooler, cls/... as Google's
    prefix = write_checkpoint(tmp_path / "bert_model.ckpt",
                              with_upstream_optimizer_state(weights))
    messages = []
    report, values = load_electra(ELECTRA_OF_BERT, prefix, messages)
    bert_encoder = sorted(n for n in weights if n.startswith("bert/") and "/pooler/" not in n)
    assert sorted(source for _, source, _ in report.loaded) == bert_encoder
    for name, source, _ in report.loaded:
        assert name == "electra/" + source[len("bert/"):]
        np.testing.assert_array_equal(values[name], weights[source], err_msg=name)
    assert report.mappings == checkpoint_loading.SCOPE_MAPPINGS[:1]
    fresh = sorted(n for n in values if not n.startswith("electra/"))
    assert sorted(report.missing_in_checkpoint) == fresh
    assert {n.split("/")[0] for n in fresh} == {"generator", "generator_predictions",
                                                "discriminator_predictions"}
    assert "generator/encoder/layer_1/output/dense/kernel" in fresh
    assert report.unused_in_checkpoint == sorted(
        n for n in weights if n.startswith(("bert/pooler/", "cls/")))
    table = messages[-1]
    assert "mapped electra/ <- bert/: a BERT/RoBERTa checkpoint initialises the ELECTRA " \
           "discriminator" in table
    assert ("loaded    [16, 16]           [16, 16]           electra/encoder/layer_1/attention/"
            "self/query/kernel  <- bert/encoder/layer_1/attention/self/query/kernel") in table
    assert "missing                      -                  generator/encoder/layer_0/" \
           "attention/self/query/kernel" in table
    assert table.splitlines()[-1].startswith(
        "summary: %d loaded (%d through a scope mapping), %d missing in checkpoint"
        % (len(bert_encoder), len(bert_encoder), len(fresh)))


def test_bert_checkpoint_of_another_width_is_an_error_naming_both_variables(tmp_path):
    prefix = write_checkpoint(tmp_path / "bert_model.ckpt", random_weights(BERT, seed=10))
    wider = dict(ELECTRA_OF_BERT, hidden_size=32, intermediate_size=48)
    with pytest.raises(CheckpointMismatchError) as info:
        load_electra(wider, prefix)
    message = str(info.value)
    assert ("electra/encoder/layer_0/attention/self/query/kernel (checkpoint's "
            "bert/encoder/layer_0/attention/self/query/kernel): model shape [32, 32], "
            "checkpoint shape [16, 16]") in message
    assert "electra/embeddings/word_embeddings (checkpoint's bert/embeddings/word_embeddings)" \
        in message
    assert "Mapped electra/ <- bert/" in message and "needs the checkpoint's vocab_size, " \
        "hidden_size, intermediate_size and num_attention_heads" in message
    # A narrower embedding table (ELECTRA-small's embedding_size) is named too.
    with pytest.raises(CheckpointMismatchError, match=r"electra/embeddings/word_embeddings "
                       r"\(checkpoint's bert/embeddings/word_embeddings\): model shape "
                       r"\[50, 8\], checkpoint shape \[50, 16\]"):
        load_electra(dict(ELECTRA_OF_BERT, embedding_size=8), prefix)
