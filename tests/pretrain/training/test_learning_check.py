"""Plateau detection in pretraining: the eval data's own baselines and the warning lines."""
import logging
import subprocess
import sys

import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from pretrain import pretraining_options, run_pretraining
from pretrain.models import eval_metrics
from pretrain.training import learning_check
from tests.testutil.pretrain_data import make_examples, run_options, tiny_config, write_records
from tests.testutil.float32_bounds import ELEMENTWISE_ULPS, assert_close, summation_ulps

SEQ, PREDS, BATCH = 16, 4, 8


def _evaluate(metrics, batches, placeholders):
    """Runs tf.metrics-style pairs over `batches` (feed dicts) and returns the values."""
    with tf.Session() as session:
        session.run(tf.local_variables_initializer())
        for batch in batches:
            session.run([update for _, update in metrics.values()],
                        feed_dict=dict(zip(placeholders, batch)))
        return session.run({name: value for name, (value, _) in metrics.items()})


def test_unigram_baseline_matches_numpy_over_several_batches():
    rng = np.random.RandomState(3)
    batches = [(rng.randint(0, 7, size=(4, 5)), (rng.rand(4, 5) > 0.3).astype(np.float32))
               for _ in range(3)]
    with tf.Graph().as_default():
        ids, weights = tf.placeholder(tf.int32, [None, 5]), tf.placeholder(tf.float32, [None, 5])
        results = _evaluate(eval_metrics.masked_lm_baseline_metrics(ids, weights, 7),
                            batches, (ids, weights))
    counts = np.zeros(7)
    for batch_ids, batch_weights in batches:
        np.add.at(counts, batch_ids.ravel(), batch_weights.ravel())  # weight 0 = padding
    p = counts / counts.sum()
    # float32 sums of whole counts are exact (below 2**24); the share is one division
    assert_close(results["masked_lm_unigram_accuracy"], p.max(), 1)
    # the entropy: one log and two roundings per term, then a sum of 7 terms
    assert_close(results["masked_lm_unigram_loss"], -(p[p > 0] * np.log(p[p > 0])).sum(),
                 summation_ulps(7) + ELEMENTWISE_ULPS + 2)
    assert results["masked_lm_num_targets"] == counts.sum()  # a sum of whole weights: exact


def test_sentence_chance_is_the_majority_share_and_its_entropy():
    labels = [np.array([0, 1, 1, 1]), np.array([1, 0, 1, 1])]    # 6 of 8 are 1
    with tf.Graph().as_default():
        placeholder = tf.placeholder(tf.int32, [None])
        results = _evaluate(eval_metrics.sentence_baseline_metrics(placeholder),
                            [(batch,) for batch in labels], (placeholder,))
    assert_close(results["sentence_chance_accuracy"], 0.75, 1)  # 6 / 8: one division
    # two terms of one log and two roundings each, and their sum
    assert_close(results["sentence_chance_loss"],
                 -(0.75 * np.log(0.75) + 0.25 * np.log(0.25)), summation_ulps(2) + ELEMENTWISE_ULPS + 2)
    assert results["sentence_num_examples"] == 8


def _results(mlm, unigram, sentence=None, chance=0.5, targets=12800, examples=1280):
    results = {"masked_lm_accuracy": mlm, "masked_lm_loss": 6.0,
               "masked_lm_unigram_accuracy": unigram, "masked_lm_unigram_loss": 5.9,
               "masked_lm_num_targets": targets}
    if sentence is not None:
        results.update(sentence_accuracy=sentence, sentence_loss=0.69,
                       sentence_chance_accuracy=chance, sentence_chance_loss=0.69,
                       sentence_num_examples=examples)
    return results


def test_warnings_fire_on_the_plateau_and_not_off_it():
    # The README's ALBERT row (MLM 5.0%, SOP 50.9%) against BERT's 14.4%.
    plateau = learning_check.not_learned_warnings(_results(0.050, 0.049, 0.509))
    assert len(plateau) == 2
    assert plateau[0].startswith("the checkpoint has not yet learned from context: "
                                 "masked_lm_accuracy 0.0500")
    assert "unigram baseline" in plateau[0] and "0.0490" in plateau[0]
    assert "sentence_accuracy 0.5090" in plateau[1] and "chance" in plateau[1]
    assert learning_check.not_learned_warnings(_results(0.144, 0.049, 0.80)) == []
    # The tiny BERT: 7.3% against a 6.7% baseline is not clearly above it.
    assert len(learning_check.not_learned_warnings(_results(0.073, 0.067))) == 1
    # No sentence head (RoBERTa data): only the masked LM is judged.
    assert learning_check.not_learned_warnings(_results(0.20, 0.05)) == []


def registry_head(accuracy):
    """The registered EvalHead scored by `accuracy`."""
    return next(head for head in learning_check.heads() if head.accuracy == accuracy)


def test_the_command_exits_3_when_the_masked_lm_has_not_learned(tmp_path):
    """What scripts/lcqmc_experiment.sh asks before fine-tuning: the warning lines of a
    finished run's eval_results.txt, and exit 3 only when its masked LM has not learned."""
    def write(name, results):
        path = tmp_path / name
        path.write_text("".join(f"{key} = {value}\n" for key, value in results.items()))
        return path

    plateau = write("plateau.txt", _results(0.050, 0.049, 0.80))
    assert learning_check.read_eval_results(str(plateau))["masked_lm_accuracy"] == 0.05
    assert learning_check.unlearned_start_heads(
        learning_check.read_eval_results(str(plateau))) == [registry_head("masked_lm_accuracy")]
    # Off the plateau with the sentence head at chance: a warning, not a stop.
    sentence = learning_check.read_eval_results(str(write("sop.txt", _results(0.14, 0.05, 0.5))))
    assert len(learning_check.not_learned_warnings(sentence)) == 1
    assert learning_check.unlearned_start_heads(sentence) == []
    assert learning_check.unlearned_start_heads({}) == []  # nothing measured, nothing judged
    done = subprocess.run([sys.executable, "-m", "pretrain.training.learning_check",
                           f"--eval_results={plateau}"], capture_output=True, text=True)
    assert done.returncode == learning_check.EXIT_NOT_LEARNED == 3
    assert done.stdout.startswith(f"{plateau}: the checkpoint has not yet learned from context: "
                                  "masked_lm_accuracy 0.0500")
    missing = subprocess.run([sys.executable, "-m", "pretrain.training.learning_check",
                              f"--eval_results={tmp_path / 'none.txt'}"],
                             capture_output=True, text=True)
    assert missing.returncode == 2 and missing.stderr == (
        f"error: --eval_results={tmp_path / 'none.txt'}: no such file (run_pretraining "
        "--do_eval writes it in --output_dir)\n")
    other = write("other.txt", {"accuracy": 0.5})  # not a pretraining eval
    wrong = subprocess.run([sys.executable, "-m", "pretrain.training.learning_check",
                            f"--eval_results={other}"], capture_output=True, text=True)
    assert wrong.returncode == 2 and "no masked_lm_accuracy or plm_accuracy in it" in wrong.stderr


def test_the_margin_grows_when_few_labels_were_scored():
    # learning_check's arithmetic is Python float64: approx's default (relative 1e-6)
    assert learning_check.required_accuracy(0.05, 1e6) == pytest.approx(0.07)   # MIN_GAIN
    few = learning_check.required_accuracy(0.5, 100)                            # 3 sd = 0.15
    assert few == pytest.approx(0.65)
    assert learning_check.not_learned_warnings(_results(0.144, 0.049, 0.60, examples=100))[0] \
        .startswith("the checkpoint has not yet learned from context: sentence_accuracy")
    tiny = learning_check.not_learned_warnings(_results(0.9, 0.05, 1.0, examples=8))
    assert tiny == [tiny[0]] and tiny[0].startswith("too few eval labels (8)")


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    root = tmp_path_factory.mktemp("learning_check")
    examples = make_examples(BATCH, seed=7)
    return {"cfg": tiny_config(root / "cfg.json"), "examples": examples,
            "records": write_records(root / "fixed.tfrecord", examples)}


def _run(data, out, **kw):
    return run_pretraining.run(run_options(SEQ, PREDS, BATCH, **{
        "bert_config_file": data["cfg"], "input_file": data["records"], "output_dir": out,
        "do_eval": True, "poly_power": 0.0, "log_every_n_steps": 50, **kw}))


def test_pretraining_eval_reports_the_baseline_and_warns_only_before_learning(data, tmp_path,
                                                                               caplog):
    labels = np.array([example["masked_lm_ids"] for example in data["examples"]]).ravel()
    share = np.bincount(labels) / labels.size
    entropy = -(share[share > 0] * np.log(share[share > 0])).sum()

    untrained = _run(data, tmp_path / "untrained", num_train_steps=1, learning_rate=1e-6)
    results = untrained["eval_results"]
    # as in the first test, over the tiny config's vocab of 50
    assert_close(results["masked_lm_unigram_accuracy"], share.max(), 1)
    assert_close(results["masked_lm_unigram_loss"], entropy, summation_ulps(50) + ELEMENTWISE_ULPS + 2)
    assert results["masked_lm_num_targets"] == labels.size
    written = dict(line.split(" = ") for line in
                   (tmp_path / "untrained" / "eval_results.txt").read_text().splitlines())
    assert_close(float(written["masked_lm_unigram_accuracy"]), share.max(), 1)  # written in full
    assert "sentence_chance_accuracy" in written
    assert untrained["not_learned"][0].startswith(
        "the checkpoint has not yet learned from context: masked_lm_accuracy")

    # A model that has learned: tests/pretrain/training/test_run_pretraining.py's overfitting run (one run
    # fewer here) asserts that it draws no masked-LM warning.

    caplog.set_level(logging.WARNING)
    run_pretraining._run_from_options(pretraining_options.options_from(dict(
        bert_config_file=data["cfg"], input_file=data["records"],
        output_dir=str(tmp_path / "untrained"), do_eval=True, max_seq_length=SEQ,
        max_predictions_per_seq=PREDS, eval_batch_size=BATCH, max_eval_steps=1)))
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING
              and "has not yet learned" in r.getMessage()]
    assert warned == ["run_pretraining: " + untrained["not_learned"][0]]


def test_the_check_and_the_experiment_table_do_not_load_tensorflow():
    """Reading eval results back is plain Python: the commands that do it start in a
    fraction of a second instead of paying TensorFlow's import."""
    code = ("import sys; from pretrain.training import learning_check; "
            "from experiments import from_scratch_table; print('tensorflow' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    assert done.stdout.split() == ["False"]


def test_electras_discriminator_is_held_against_always_original(tmp_path):
    """The ELECTRA row at the README's budget: the generator left its plateau, the
    discriminator's accuracy is always-'original''s (its AUC 0.61 aside). The discriminator
    is what fine-tuning starts from, so the command stops (exit 3) as for a plateau MLM,
    and the experiment table says which head has not learned."""
    results = {"masked_lm_accuracy": 0.130, "masked_lm_loss": 5.71,
               "masked_lm_unigram_accuracy": 0.045, "masked_lm_unigram_loss": 6.04,
               "masked_lm_num_targets": 12224.0, "disc_accuracy": 0.8593, "disc_loss": 0.3895,
               "disc_majority_accuracy": 0.8583, "disc_label_entropy": 0.408,
               "disc_num_tokens": 81247.0}
    warnings = learning_check.not_learned_warnings(results)
    assert len(warnings) == 1 and warnings[0].startswith(
        learning_check.NOT_LEARNED + "disc_accuracy 0.8593 (loss 0.390) is not clearly above "
        "always answering 'original' (the original tokens' share), 0.8583")
    assert [head.accuracy for head in learning_check.unlearned_start_heads(results)] == [
        "disc_accuracy"]
    learned = dict(results, disc_accuracy=0.93)
    assert learning_check.not_learned_warnings(learned) == []
    assert learning_check.unlearned_start_heads(learned) == []
    # Both heads on their baselines: both named, in the family's order.
    both = learning_check.unlearned_start_heads(dict(results, masked_lm_accuracy=0.046))
    assert [head.accuracy for head in both] == ["masked_lm_accuracy", "disc_accuracy"]
    path = tmp_path / "eval_results.txt"
    path.write_text("".join(f"{key} = {value}\n" for key, value in results.items()))
    done = subprocess.run([sys.executable, "-m", "pretrain.training.learning_check",
                           f"--eval_results={path}"], capture_output=True, text=True)
    assert done.returncode == learning_check.EXIT_NOT_LEARNED, done.stderr
    assert "disc_accuracy 0.8593" in done.stdout
    # Each such head has the words a results table names it by (the MLM's: its own test).
    gating = [head for head in learning_check.heads() if head.gates_finetuning]
    assert {head.accuracy for head in gating} == {
        "masked_lm_accuracy", "plm_accuracy", "disc_accuracy"}
    assert all(head.not_learned_cell for head in gating)
