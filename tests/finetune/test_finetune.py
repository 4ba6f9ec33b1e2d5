"""Fine-tuning end to end on a synthetic pair task (run_finetune's pair task),
best-on-dev selection, results files."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from finetune import run_finetune
from finetune.best_checkpoint import DevEvaluationListener
from pretrain.checkpoints import checkpoint_io
from pretrain.checkpoints.checkpoint_loading import CheckpointMismatchError
from tests.testutil.finetune_task import (fast_settings, probabilities_sum_tolerance, read_jsonl,
                              trained_run, write_task)


@pytest.fixture
def trained(tmp_path_factory):
    """One fine-tuning run from random initialisation (shared with test_compare)."""
    return trained_run(tmp_path_factory)


def test_learns_the_synthetic_task(trained):
    _, _, results, _ = trained
    # A one-sentence reader tops out at 5/6; > 0.9 needs both segments.
    assert results["dev_accuracy"] > 0.9
    assert results["test_accuracy"] > 0.9
    assert results["dev_curve"][0]["step"] == 0 and results["dev_curve"][0]["accuracy"] < 0.8
    assert results["num_train_steps"] == 300 and results["dev_curve"][-1]["step"] == 300
    assert {split: data["read"]["used"] for split, data in results["data"].items()} == {
        "train": 1600, "dev": 200, "test": 200}
    assert results["task"] == "pair" and results["labels"] == ["0", "1"]
    assert results["data"]["train"]["read"]["format"] == "lcqmc"
    assert results["collapsed"] is False


def test_best_step_is_the_curve_maximum_and_best_dir_holds_it(trained):
    task, run_dir, results, _ = trained
    curve = results["dev_curve"]
    best_point = max(curve, key=lambda p: (p["accuracy"], -p["step"]))
    assert results["best_step"] == best_point["step"]
    assert results["dev_accuracy"] == best_point["accuracy"]
    best_dir = run_dir / "best"
    assert tf.train.latest_checkpoint(str(best_dir)).endswith(f"model.ckpt-{results['best_step']}")
    assert json.loads((best_dir / "best.json").read_text())["step"] == results["best_step"]
    for name in ("bert_config.json", "vocab.txt", "task.json"):
        assert (best_dir / name).read_bytes() == (run_dir / name).read_bytes()
    assert json.loads((best_dir / "task.json").read_text())["labels"] == ["0", "1"]
    # The copied checkpoint really is the one saved at the best step.
    reader = tf.train.load_checkpoint(str(best_dir))
    assert reader.get_tensor("global_step") == results["best_step"]
    assert reader.get_variable_to_shape_map()["classifier/output_weights"] == [2, 32]
    assert not [name for name in reader.get_variable_to_shape_map() if "adam" in name]


def test_a_finished_run_keeps_best_only_and_says_how_much_disk_it_used(trained):
    _, run_dir, results, messages = trained
    assert not list(run_dir.glob("model.ckpt-*")) and not (run_dir / "checkpoint").exists()
    disk = results["disk"]
    assert disk["training_checkpoints_removed_bytes"] > 2 * disk["best_bytes"] > 0
    on_disk = sum(path.stat().st_size for path in run_dir.rglob("*") if path.is_file())
    written_after = sum((run_dir / name).stat().st_size
                        for name in ("results.json", "eval_results.txt"))
    assert disk["output_dir_bytes"] == on_disk - written_after
    assert f"disk: {disk['output_dir_bytes'] / 1e6:.1f} MB (best/ " in messages[-1]
    assert "--keep_checkpoints keeps them" in messages[-1]


def test_results_files_hold_the_printed_numbers(trained):
    _, run_dir, results, messages = trained
    saved = json.loads((run_dir / "results.json").read_text(encoding="utf-8"))
    assert saved["dev_accuracy"] == results["dev_accuracy"]
    assert saved["test_accuracy"] == results["test_accuracy"]
    assert saved["dev_curve"] == results["dev_curve"]
    final = messages[-1]
    assert final.startswith(f"best dev accuracy {saved['dev_accuracy']:.4f} at step "
                            f"{saved['best_step']} of 300; test accuracy "
                            f"{saved['test_accuracy']:.4f}")
    for point in saved["dev_curve"]:
        assert any(m.startswith(f"step {point['step']}: dev accuracy {point['accuracy']:.4f}, "
                                f"macro_f1 {point['macro_f1']:.4f}, loss {point['loss']:.4f}")
                   for m in messages)
    rows = read_jsonl(run_dir / "test_predictions.jsonl")
    assert len(rows) == 200 and all("condition" not in row for row in rows)  # plain model
    with open(run_dir.parent / "task" / "test.txt", encoding="utf-8") as f:
        gold = [line.rstrip("\n").split("\t")[2] for line in f]
    assert [row["line"] for row in rows] == list(range(1, 201))  # input order
    correct = sum(row["label"] == gold[row["line"] - 1] for row in rows)
    # float64 ratios of the same counts: approx's default (relative 1e-6) is far below 1/200
    assert correct / len(rows) == pytest.approx(saved["test_accuracy"])
    for row in rows:
        assert list(row["probabilities"]) == ["0", "1"]
        assert sum(row["probabilities"].values()) == pytest.approx(
            1, abs=probabilities_sum_tolerance(2))
        assert row["label"] == max(row["probabilities"], key=row["probabilities"].get)


def test_the_account_says_where_the_seconds_went(trained):
    _, _, results, messages = trained
    seconds = results["seconds"]
    phases = ("setup", "reading_and_features", "training_graph", "training_steps",
              "checkpoints", "dev_scoring", "predict_graphs", "copies_to_best", "test_scoring")
    assert set(seconds) == set(phases) | {"other", "total"}
    assert all(seconds[phase] >= 0 for phase in phases)
    assert seconds["training_steps"] > 0 and seconds["training_graph"] > 0
    assert seconds["dev_scoring"] > 0 and seconds["checkpoints"] > 0
    # the phases do not overlap: they add up to the run's wall time (rounded to 0.01 s each)
    assert sum(seconds[phase] for phase in phases) + seconds["other"] == pytest.approx(
        seconds["total"], abs=0.01 * (len(phases) + 1))
    assert seconds["total"] == pytest.approx(results["wall_time_seconds"], abs=0.02)
    # dev is scored at every save, step 0 included; each scoring timed
    assert len(results["dev_scoring_seconds"]) == len(results["dev_curve"])
    assert sum(results["dev_scoring_seconds"]) == pytest.approx(
        seconds["dev_scoring"] + seconds["predict_graphs"], abs=0.01 * len(results["dev_curve"]))
    assert results["batching"] == {"pad_to_max_length": False, "pad_to_multiple_of": 1,
                                   "group_by_length": False}
    assert any(message.startswith("time: setup ") for message in messages)


def test_init_from_a_finetuned_dir_uses_its_config_and_weights(trained, tmp_path):
    task, run_dir, results, _ = trained
    settings = fast_settings(dict(task, bert_config_file=None), tmp_path / "again",
                             init_checkpoint=str(run_dir / "best"), max_train_examples=64,
                             num_train_epochs=1, eval_every_steps=100, learning_rate=1e-5)
    again = run_finetune.run(settings, log_fn=lambda m: None)
    assert again["bert_config_file"] == str(run_dir / "best" / "bert_config.json")
    assert again["assets"] == {"config": "checkpoint", "vocab": "flag"}
    assert again["data"]["train"]["read"]["limited_to"] == 64
    # Step 0 is evaluated before any update: the loaded weights alone score as before.
    assert again["dev_curve"][0]["step"] == 0
    # the same weights on the same dev batches: the same count, as a float64 ratio
    assert again["dev_curve"][0]["accuracy"] == pytest.approx(results["dev_accuracy"])


def test_ignore_invalid_weights_starts_from_a_checkpoint_of_another_shape(trained, tmp_path):
    task, run_dir, _, _ = trained
    config = json.loads((run_dir / "best" / "bert_config.json").read_text(encoding="utf-8"))
    config["type_vocab_size"] = 3
    (tmp_path / "three_types.json").write_text(json.dumps(config), encoding="utf-8")
    settings = fast_settings(dict(task, bert_config_file=str(tmp_path / "three_types.json")),
                             tmp_path / "refused", init_checkpoint=str(run_dir / "best"),
                             max_train_examples=64, num_train_epochs=1, eval_every_steps=100)
    with pytest.raises(CheckpointMismatchError, match="token_type_embeddings: model shape "
                       r"\[3, 32\], checkpoint shape \[2, 32\]"):
        run_finetune.run(settings, log_fn=lambda m: None)
    lenient = run_finetune.run(dict(settings, output_dir=str(tmp_path / "lenient"),
                                 ignore_invalid_weights=True), log_fn=lambda m: None)
    assert lenient["init"]["shape_mismatches"] == ["bert/embeddings/token_type_embeddings"]
    assert lenient["init"]["loaded"] > 10 and lenient["dev_curve"][0]["step"] == 0


class ScriptedEstimator:
    """Stands in for an Estimator: the listener only reads its model_dir."""

    def __init__(self, model_dir):
        self.model_dir = str(model_dir)


def scripted_listener(tmp_path, scores, metric, messages, extra=()):
    """A listener whose evaluate_fn returns scores[step] and records what it scored."""
    for step in scores:  # a weight, its Adam slots and the step, as training saves them
        checkpoint_io.write_checkpoint(
            {"w": np.full([2], step, np.float32), "w/adam_m": np.ones([2], np.float32),
             "w/adam_v": np.ones([2], np.float32), "global_step": np.int64(step)},
            str(tmp_path / f"model.ckpt-{step}"))
    evaluated = []

    def evaluate(checkpoint):
        step = int(checkpoint.rsplit("-", 1)[1])
        evaluated.append(step)
        return dict(scores[step], per_label={"not": "a float"})  # only floats reach the curve

    listener = DevEvaluationListener(ScriptedEstimator(tmp_path), evaluate, str(tmp_path),
                                     selection_metric=metric, log_fn=messages.append,
                                     extra_best_files=extra)
    return listener, evaluated


def test_listener_keeps_the_first_best_checkpoint(tmp_path):
    accuracies = {0: 0.5, 100: 0.8, 200: 0.7, 300: 0.8, 400: 0.75}
    scores = {step: {"accuracy": a, "loss": 1.0 - a} for step, a in accuracies.items()}
    (tmp_path / "task.json").write_text("{}")
    messages = []
    listener, evaluated = scripted_listener(tmp_path, scores, "accuracy", messages,
                                            extra=[str(tmp_path / "task.json"),
                                                   str(tmp_path / "absent.json")])
    for step in list(accuracies) + [400]:  # the final save repeats the last step
        listener.after_save(None, step)
    assert evaluated == [0, 100, 200, 300, 400]
    assert listener.curve == [{"step": s, **scores[s]} for s in accuracies]
    assert listener.best["step"] == 100  # a later tie does not replace it
    best_files = sorted(os.listdir(tmp_path / "best"))
    assert best_files == ["best.json", "checkpoint", "model.ckpt-100.data-00000-of-00001",
                          "model.ckpt-100.index", "task.json"]
    # best/ holds step 100's weights and step, not the optimizer's slots
    best = checkpoint_io.read_checkpoint(str(tmp_path / "best" / "model.ckpt-100"))
    assert sorted(best) == ["global_step", "w"] and best["global_step"] == 100
    np.testing.assert_array_equal(best["w"], [100, 100])
    assert json.loads((tmp_path / "best" / "best.json").read_text()) == dict(
        listener.curve[1], checkpoint=str(tmp_path / "best" / "model.ckpt-100"))
    assert messages[1] == "step 100: dev accuracy 0.8000, loss 0.2000  (new best, copied to best/)"
    assert messages[3] == ("step 300: dev accuracy 0.8000, loss 0.2000  (best accuracy 0.8000 "
                           "at step 100)")


def test_the_untrained_step_0_is_scored_but_never_the_best(tmp_path):
    """A random head's lucky dev score at step 0 must not stand in for fine-tuning (it did
    in the ALBERT row: dev 53.6% at step 0 against 52.5% trained, test 49.8%)."""
    scores = {0: {"accuracy": 0.536}, 250: {"accuracy": 0.509}, 500: {"accuracy": 0.525}}
    messages = []
    listener, evaluated = scripted_listener(tmp_path, scores, "accuracy", messages)
    for step in scores:
        listener.after_save(None, step)
    assert evaluated == [0, 250, 500] and [p["step"] for p in listener.curve] == [0, 250, 500]
    assert listener.best["step"] == 500
    assert tf.train.latest_checkpoint(str(tmp_path / "best")).endswith("model.ckpt-500")
    assert messages == [
        "step 0: dev accuracy 0.5360  (before training: not a candidate for best)",
        "step 250: dev accuracy 0.5090  (new best, copied to best/)",
        "step 500: dev accuracy 0.5250  (new best, copied to best/)"]


def test_listener_selects_by_the_chosen_metric(tmp_path):
    scores = {0: {"accuracy": 0.9, "macro_f1": 0.47}, 50: {"accuracy": 0.8, "macro_f1": 0.79},
              100: {"accuracy": 0.85, "macro_f1": 0.7}}
    listener, _ = scripted_listener(tmp_path, scores, "macro_f1", [])
    for step in scores:
        listener.after_save(None, step)
    assert listener.best["step"] == 50 and listener.best["accuracy"] == 0.8
    assert tf.train.latest_checkpoint(str(tmp_path / "best")).endswith("model.ckpt-50")


def test_settings_errors_name_the_problem(tmp_path):
    task = write_task(tmp_path / "task", sizes=(("train", 40), ("dev", 10), ("test", 10)))
    big_vocab = tmp_path / "big_vocab.txt"
    big_vocab.write_text("".join(f"[unused{i}]\n" for i in range(40))
                         + "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\n", encoding="utf-8")
    with pytest.raises(run_finetune.SettingsError, match="45 entries.*vocab_size=32"):
        run_finetune.run(fast_settings(dict(task, vocab_file=str(big_vocab)), tmp_path / "a"))
    with pytest.raises(run_finetune.SettingsError, match="max_position_embeddings=16"):
        run_finetune.run(fast_settings(task, tmp_path / "b", max_seq_length=32))
    with pytest.raises(run_finetune.SettingsError, match="no model config"):
        run_finetune.run(fast_settings(dict(task, bert_config_file=None), tmp_path / "c"))
    with pytest.raises(run_finetune.SettingsError, match=r"--pad_to_multiple_of=0: use a positive"):
        run_finetune.run(fast_settings(task, tmp_path / "f", pad_to_multiple_of=0))
    missing = str(tmp_path / "task" / "other_test.txt")
    with pytest.raises(run_finetune.SettingsError) as error:
        run_finetune.run(fast_settings(task, tmp_path / "d", test_file=missing))
    assert str(error.value) == f"--test_file={missing}: no such file"
    os.remove(tmp_path / "task" / "dev.txt")
    with pytest.raises(run_finetune.SettingsError, match=r"no dev data: pass --dev_file \(or "
                                                      r"--data_dir holding dev.txt"):
        run_finetune.run(fast_settings(task, tmp_path / "e"))
    assert sorted(os.listdir(tmp_path)) == ["big_vocab.txt", "task"]  # nothing written


def test_cli_errors_are_one_line_with_exit_code_2(repo_root, tmp_path):
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONPATH=str(repo_root))
    task = write_task(tmp_path / "task", sizes=(("train", 4), ("dev", 2), ("test", 2)))
    commands = {
        "error: missing required flag(s): --output_dir": [],
        f"error: --bert_config_file='{tmp_path}/missing.json' does not exist": [
            f"--data_dir={task['data_dir']}", f"--vocab_file={task['vocab_file']}",
            f"--output_dir={tmp_path}/out", f"--bert_config_file={tmp_path}/missing.json"],
    }
    processes = {message: subprocess.Popen(
        [sys.executable, "-m", "finetune.run_finetune", *flags], cwd=tmp_path, env=env,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for message, flags in commands.items()}
    for message, process in processes.items():
        _, stderr = process.communicate(timeout=240)
        assert process.returncode == 2 and "Traceback" not in stderr, stderr
        assert stderr.strip().splitlines()[-1] == message
    assert os.listdir(tmp_path) == ["task"]  # nothing written
