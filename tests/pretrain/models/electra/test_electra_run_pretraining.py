"""ELECTRA through run_pretraining: trains on data_gen-shaped records, writes upstream's
eval metric names and upstream's variable names, refuses the heads it has not got, and
continues from a checkpoint google-research/electra wrote (its Adam slots ignored). Its
exact resume (both networks, their slots, the sampled replacements): test_exact_resume.py."""
import json

import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from common.cli_options import UserError
from pretrain import run_pretraining
from tests.testutil.tiny_models import (random_tensors, upstream_electra_case,
                              with_upstream_optimizer_state, write_checkpoint)
from tests.testutil.pretrain_data import make_examples, run_options, tiny_config, write_records

SEQ, PREDS, BATCH = 16, 4, 8
UPSTREAM_METRICS = ("masked_lm_accuracy", "masked_lm_loss", "sampled_masked_lm_accuracy",
                    "disc_loss", "disc_auc", "disc_accuracy", "disc_precision", "disc_recall")


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    root = tmp_path_factory.mktemp("electra_data")
    cfg = tiny_config(root / "electra.json", hidden=64, model_type="electra", embedding_size=16,
                      generator_hidden_size=0.5, disc_weight=50.0)
    roberta = write_records(root / "roberta.tfrecord",
                            make_examples(BATCH, sentence_task="none", seed=3), mode="roberta")
    albert = write_records(root / "albert.tfrecord", make_examples(BATCH, seed=3))
    return {"cfg": cfg, "roberta": roberta, "albert": albert}


def _opts(data, out, **kw):
    return run_options(SEQ, PREDS, BATCH, **{
        "bert_config_file": data["cfg"], "input_file": data["roberta"], "output_dir": out,
        "do_eval": True, "learning_rate": 2e-3, "num_train_steps": 40, "log_every_n_steps": 10,
        **kw})


def test_trains_and_reports_upstreams_metrics_under_upstreams_names(data, tmp_path):
    out = tmp_path / "electra"
    result = run_pretraining.run(_opts(data, out))
    assert result["global_step"] == 40 and result["sentence_head"] is False
    written = dict(line.split(" = ") for line in
                   (out / "eval_results.txt").read_text().splitlines())
    for name in UPSTREAM_METRICS:
        assert name in written, name
        assert 0.0 <= float(written[name]) <= (100.0 if name.endswith("loss") else 1.0)
    # The fixed batch is learnable: after 40 steps the generator is off its unigram baseline
    # and the discriminator tells replaced from original tokens (AUC 0.5 is chance).
    assert float(written["masked_lm_accuracy"]) > float(written["masked_lm_unigram_accuracy"]) + 0.1
    assert float(written["disc_auc"]) > 0.75
    # The discriminator's baseline: the original tokens' share of the real tokens, at
    # least 1 - (replaced <= masked positions) / real tokens.
    tokens = float(written["disc_num_tokens"])
    assert 0 < tokens <= BATCH * SEQ
    assert 1.0 - BATCH * PREDS / tokens <= float(written["disc_majority_accuracy"]) < 1.0
    names = tf.train.load_checkpoint(str(out)).get_variable_to_shape_map()
    for name in ("electra/embeddings/word_embeddings", "electra/embeddings_project/kernel",
                 "generator/encoder/layer_0/attention/self/query/kernel",
                 "generator_predictions/output_bias", "discriminator_predictions/dense_1/kernel",
                 "electra/encoder/layer_1/output/dense/kernel/adam_m"):
        assert name in names, name
    assert not any(name.startswith(("bert/", "cls/")) for name in names)
    assert '"model_type": "electra"' in (out / "bert_config.json").read_text()


@pytest.mark.parametrize("flags, named", [({"sentence_head": "true"}, "--sentence_head"),
                                          ({"span_boundary_objective": True},
                                           "--span_boundary_objective")])
def test_heads_electra_has_not_got_are_refused(data, tmp_path, flags, named):
    with pytest.raises(UserError, match=f"{named}: model_type 'electra' .* has no sentence or "
                                        "span boundary head"):
        run_pretraining.run(_opts(data, tmp_path / "x", num_train_steps=2, **flags))


@pytest.mark.parametrize("precision, accumulation", [("fp16", 1), ("bf16", 2)])
def test_mixed_precision_and_accumulation_train_both_networks(data, tmp_path, precision,
                                                              accumulation):
    out = tmp_path / precision
    result = run_pretraining.run(_opts(data, out, num_train_steps=3, do_eval=False,
                                       precision=precision, train_batch_size=BATCH // accumulation,
                                       gradient_accumulation_steps=accumulation))
    assert result["precision"] == precision and result["global_step"] == 3 * accumulation
    reader = tf.train.load_checkpoint(str(out))
    for network in ("electra", "generator"):  # fp32 master weights, both updated
        name = f"{network}/encoder/layer_0/attention/self/query/kernel"
        kernel = reader.get_tensor(name)
        assert kernel.dtype == np.float32 and np.isfinite(kernel).all()
        assert np.abs(reader.get_tensor(name + "/adam_m")).max() > 0
    assert ("loss_scale/scale" in reader.get_variable_to_shape_map()) == (precision == "fp16")


def test_continues_from_an_upstream_checkpoint_without_its_optimizer_state(data, tmp_path,
                                                                          capsys):
    """A checkpoint under google-research/electra's names and shapes (fixture), with
    upstream's `<var>/adam_m`, `<var>/adam_v` and global_step: every weight is loaded,
    the slots and the step are not (one step from step 0, fresh moments)."""
    config, shapes = upstream_electra_case("tied_embeddings_projected")
    config_file = tmp_path / "electra_config.json"
    config_file.write_text(json.dumps(config))
    weights = random_tensors(shapes, seed=4)
    released = write_checkpoint(tmp_path / "released" / "model.ckpt-1000000",
                                with_upstream_optimizer_state(weights, fill=7.0))
    out = tmp_path / "continued"
    learning_rate = 1e-5
    result = run_pretraining.run(_opts(data, out, bert_config_file=str(config_file),
                                       init_checkpoint=released, num_train_steps=1,
                                       do_eval=False, learning_rate=learning_rate))
    table = capsys.readouterr().out
    assert result["global_step"] == 1
    assert ("summary: %d loaded, 0 missing in checkpoint (left at initial values), 0 unused in "
            "checkpoint, 0 shape mismatches, %d optimizer/step tensors ignored"
            % (len(shapes), 2 * len(shapes) + 1)) in table
    reader = tf.train.load_checkpoint(str(out))
    moved = {}
    for name, value in weights.items():  # one AdamW step from the released values
        moved[name] = np.abs(reader.get_tensor(name) - value).max()
        assert moved[name] < 5 * learning_rate, name
        assert np.abs(reader.get_tensor(name + "/adam_m")).max() < 1.0, name  # not the 7s
    assert max(moved.values()) > 0.5 * learning_rate


