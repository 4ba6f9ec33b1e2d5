"""XLNet fine-tunes through the task layer: records in zihangdai/xlnet's layout (a [SEP]
b [SEP] [CLS], [CLS] in segment 2), padding on the right, the summary read at the last
real token ([CLS]) and independent of where the padding is; a pretraining checkpoint's
transformer loads by name, the summary and the heads start fresh."""

import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from data_gen.text.tokenization import FullTokenizer
from finetune.tasks import layout
from finetune.tasks.classification import encode_texts
from finetune.tasks.ner import NerTask
from tests.testutil.finetune_task import (SAMPLES, finetune_from, model,  # noqa: F401  (the samples' vocab)
                              read_eval_results, write_random_pretraining_checkpoint,
                              xlnet_pretraining_features)
from pretrain.models import registry
from pretrain.models.xlnet.family import XLNET_LAYOUT
from pretrain.models.xlnet.modeling import XLNetModel
from tests.testutil.hf_interop import dense_scale, worst_case_ulps
from tests.testutil.float32_bounds import ELEMENTWISE_ULPS, assert_close, summation_ulps
from tests.testutil.xlnet_hf_bounds import xlnet_chain

XLNET = {"model_type": "xlnet", "d_model": 32, "n_layer": 2, "n_head": 2, "d_head": 16,
         "d_inner": 64, "ff_activation": "gelu", "untie_r": True}


def test_the_xlnet_layout_puts_cls_last_in_its_own_segment():
    assert layout.wrap([["a", "b"], ["c"]], XLNET_LAYOUT) == (
        ["a", "b", "[SEP]", "c", "[SEP]", "[CLS]"], [0, 0, 0, 1, 1, 2])
    assert layout.wrap([["a", "b"], ["c"]]) == (
        ["[CLS]", "a", "b", "[SEP]", "c", "[SEP]"], [0, 0, 0, 0, 1, 1])
    assert layout.wrap([["a"]], XLNET_LAYOUT) == (["a", "[SEP]", "[CLS]"], [0, 0, 2])


def test_records_in_the_xlnet_layout(model, tmp_path):  # noqa: F811
    tokenizer = FullTokenizer(model["vocab_file"])
    c1, c2, c3, c4 = [t for t in tokenizer.vocab if len(t) == 1 and "\u4e00" <= t <= "\u9fff"][:4]
    ids, mask, segments, cut = encode_texts([c1 + c2, c3 + c4], tokenizer, 10, XLNET_LAYOUT)
    tokens = tokenizer.convert_ids_to_tokens(ids[:7])
    assert tokens == [c1, c2, "[SEP]", c3, c4, "[SEP]", "[CLS]"] and not cut
    assert ids[7:] == [0, 0, 0] and mask == [1] * 7 + [0] * 3
    assert segments == [0, 0, 0, 1, 1, 1, 2, 0, 0, 0]
    # NER: the window, [SEP], [CLS]; tags on the first piece, positions from 0.
    train = tmp_path / "ner.txt"
    train.write_text(f"{c1} B-PER\n{c2} O\n\n", encoding="utf-8")
    task = NerTask()
    examples, _ = task.read(str(train), {}, True, lambda *_: None)
    labels = task.label_list(examples, {}, str(train))
    features, plan, _ = task.featurize(examples, tokenizer, 6, labels, layout=XLNET_LAYOUT)
    record = features[0]
    assert tokenizer.convert_ids_to_tokens(record["input_ids"][:4]) == [c1, c2, "[SEP]", "[CLS]"]
    assert record["segment_ids"] == [0, 0, 0, 2, 0, 0] and record["input_mask"][:5] == [1] * 4 + [0]
    assert record["label_weights"] == [1.0, 1.0, 0.0, 0.0, 0.0, 0.0]
    assert plan[0] == (0, [(0, 0), (1, 1)])


def test_the_summary_is_the_last_real_token_wherever_the_padding_is():
    """Right padding (this toolkit) and left padding (upstream) give the same summary and
    the same states at the real tokens; the summary reads the [CLS] state.

    Kernel-path sensitive: the real tokens sit at other positions of the two batches, so
    the sums over keys meet their terms in other lanes and orders; the two agree to the
    bound of two summation orders, not bit for bit."""
    config = registry.config_from_dict(dict(XLNET, n_token=30))
    real = np.array([[5, 6, 7, 1, 8, 9, 1, 2]])  # a [SEP] b [SEP] [CLS]
    segments = np.array([[0, 0, 0, 0, 1, 1, 1, 2]])
    pad = 3
    right = (np.pad(real, [[0, 0], [0, pad]]), np.pad(np.ones_like(real), [[0, 0], [0, pad]]),
             np.pad(segments, [[0, 0], [0, pad]]))
    left = (np.pad(real, [[0, 0], [pad, 0]]), np.pad(np.ones_like(real), [[0, 0], [pad, 0]]),
            np.pad(segments, [[0, 0], [pad, 0]], constant_values=3))
    with tf.Graph().as_default():
        outputs = []
        for ids, mask, seg in (right, left):
            with tf.variable_scope("", reuse=tf.AUTO_REUSE):
                encoder = registry.create_encoder(config, False, tf.constant(ids, tf.int32),
                                                  input_mask=tf.constant(mask, tf.int32),
                                                  token_type_ids=tf.constant(seg, tf.int32))
            assert isinstance(encoder, XLNetModel)
            outputs.append((encoder.get_pooled_output(), encoder.get_sequence_output()))
        names = {v.op.name for v in tf.global_variables()}
        with tf.Session() as session:
            session.run(tf.global_variables_initializer())
            (pooled_r, seq_r), (pooled_l, seq_l) = session.run(outputs)
            summary = {v.op.name: v for v in tf.global_variables()
                       if v.op.name.startswith("model/sequnece_summary/")}
            kernel, bias = session.run([summary["model/sequnece_summary/summary/kernel"],
                                        summary["model/sequnece_summary/summary/bias"]])
    assert "model/sequnece_summary/summary/kernel" in names  # upstream's spelling
    length = real.shape[1] + pad
    # two TF evaluations (case 2) of the encoder, then of the summary and its tanh
    assert_close(seq_r[0, :8], seq_l[0, pad:],
                 worst_case_ulps(xlnet_chain(config, length, "sequence_output")),
                 err_msg="sequence")
    # the pooled output moves by the summary's input error times the kernel's largest column
    # 1-norm (tanh' <= 1), plus the summary's own rounding: in ulps of its sum of |terms|
    scale = dense_scale(np.abs(seq_r[0, :8]).max(), kernel, bias)
    assert_close(pooled_r, pooled_l,
                 worst_case_ulps(xlnet_chain(config, length, "pooled_output")), scale=scale,
                 err_msg="pooled")
    # the same state through NumPy's float32 summary: the sum of d_model products and the
    # bias, and tanh, in ulps of the largest sum of |terms|
    terms = np.abs(seq_r[0, 7][:, None] * kernel).sum(0) + np.abs(bias)
    assert_close(pooled_r[0], np.tanh(seq_r[0, 7] @ kernel + bias),
                 summation_ulps(config.d_model + 1) + ELEMENTWISE_ULPS, scale=terms.max(),
                 err_msg="summary")


@pytest.fixture(scope="module")
def xlnet_checkpoint(model, tmp_path_factory):  # noqa: F811
    """A tiny XLNet pretraining checkpoint (transformer, mask_emb, LM head; random weights)
    with bert_config.json and vocab.txt beside it, as run_pretraining leaves them."""
    folder = tmp_path_factory.mktemp("xlnet_pretrained")
    vocab_size = len(open(model["vocab_file"], encoding="utf-8").read().split())

    return write_random_pretraining_checkpoint(folder, dict(XLNET, n_token=vocab_size),
                                               xlnet_pretraining_features, model["vocab_file"])


@pytest.mark.parametrize("task, head", [("pair", "classifier"), ("ner", "token_classifier")])
def test_fine_tuning_from_an_xlnet_checkpoint(xlnet_checkpoint, tmp_path, task, head):
    out = tmp_path / task
    data = ({"data_dir": str(SAMPLES / "pairs_clue")} if task == "pair" else
            {name + "_file": str(SAMPLES / "ner_bio" / f"{name}.txt")
             for name in ("train", "dev", "test")})
    results, log = finetune_from(xlnet_checkpoint, out, task=task, num_train_epochs=1,
                                 eval_every_steps=1000, **data)
    weights = xlnet_checkpoint["weights"]
    transformer = sorted(name for name in weights if name.startswith("model/transformer/")
                         and "mask_emb" not in name)
    init = results["init"]
    assert init["loaded"] == len(transformer) > 20
    fresh = {name.split("/")[0] if name.startswith(head) else name.rsplit("/", 1)[0]
             for name in init["missing_in_checkpoint"]}
    expected_fresh = {head} | ({"model/sequnece_summary/summary"} if task == "pair" else set())
    assert fresh == expected_fresh, init["missing_in_checkpoint"]
    step0 = tf.train.load_checkpoint(str(out / "model.ckpt-0"))
    for name in transformer:  # restored and saved again before any step: bit for bit
        np.testing.assert_array_equal(step0.get_tensor(name), weights[name], err_msg=name)
    trained = tf.train.load_checkpoint(str(out / "best")).get_variable_to_shape_map()
    assert "model/lm_loss/bias" not in trained and "model/transformer/mask_emb/mask_emb" not in trained
    written = read_eval_results(out / "eval_results.txt")
    metric = "accuracy" if task == "pair" else "f1"
    assert float(written[f"dev_{metric}"]) == results["dev"][metric]
    assert 0.0 <= results["dev"][metric] <= 1.0
    assert "model/transformer/layer_1/rel_attn/q/kernel" in log  # the loading table
