"""Continued pretraining says whether it helped: the starting checkpoint scored beside the end
on the same eval batches (init_*), other texts scored as NAME/* (forgetting), warnings when the
eval records are training records, and the learning check's start-vs-end rule."""
import json

import pytest

from common.cli_options import UserError
from pretrain import run_pretraining
from pretrain.training import continued_eval, learning_check
from tests.testutil.pretrain_data import make_examples, run_options, tiny_config, write_records
from tests.testutil.float32_bounds import assert_close

SEQ, PREDS, BATCH = 16, 4, 8


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    root = tmp_path_factory.mktemp("continued")
    cfg = tiny_config(root / "cfg.json")
    train = write_records(root / "train.tfrecord", make_examples(32, seed=1), mode="roberta")
    held_out = write_records(root / "held_out.tfrecord", make_examples(16, seed=2),
                             mode="roberta")
    other = write_records(root / "other.tfrecord", make_examples(16, seed=3), mode="roberta")
    start = root / "start"
    run_pretraining.run(run_options(SEQ, PREDS, BATCH, bert_config_file=cfg, input_file=train,
                                    output_dir=start, learning_rate=5e-3, num_train_steps=20))
    return {"root": root, "cfg": cfg, "train": train, "held_out": held_out, "other": other,
            "start": str(start)}


def _continue(data, out, **kw):
    return run_pretraining.run(run_options(SEQ, PREDS, BATCH, **{
        "input_file": data["train"], "eval_input_file": data["held_out"], "output_dir": out,
        "init_checkpoint": data["start"], "do_eval": True, "learning_rate": 5e-3,
        "num_train_steps": 20, "max_eval_steps": 2, **kw}))


def test_the_start_is_scored_on_the_same_batches_beside_the_end(data, tmp_path, capsys):
    result = _continue(data, tmp_path / "continued",
                       extra_eval_input_file=[f"other={data['other']}"])
    printed = capsys.readouterr().out
    # one loading table per graph that loads the start, labelled with what it is for; the
    # evals of the trained checkpoint restore it and print no table
    assert printed.count("Initial weights for training:\nCheckpoint ") == 1
    assert printed.count("Weights evaluated (the starting checkpoint, nothing trained yet):"
                         "\nCheckpoint ") == 2  # the held-out eval and `other`
    assert printed.count("\nCheckpoint ") == 3
    values = result["eval_results"]
    for prefix in ("", "other/"):
        for metric in ("masked_lm_loss", "masked_lm_accuracy", "masked_lm_loss_squared",
                       "masked_lm_num_targets"):
            assert prefix + metric in values and prefix + "init_" + metric in values
        # the same labels were scored for the start and the end
        assert values[prefix + "init_masked_lm_num_targets"] == values[
            prefix + "masked_lm_num_targets"]
    written = dict(line.split(" = ") for line in
                   (tmp_path / "continued" / "eval_results.txt").read_text().splitlines())
    assert float(written["other/init_masked_lm_loss"]) == values["other/init_masked_lm_loss"]
    # The start's numbers are the start checkpoint's own eval on the same batches: an eval-only
    # run of it gives them (the same graph and seed; only the folder differs).
    alone = run_pretraining.run(run_options(SEQ, PREDS, BATCH, bert_config_file=data["cfg"],
                                            input_file=data["held_out"], do_train=False,
                                            do_eval=True, output_dir=tmp_path / "alone",
                                            init_checkpoint=data["start"], max_eval_steps=2))
    for metric in ("masked_lm_loss", "masked_lm_accuracy"):
        # the same graph on the same batches: equal but for the start folder's kernels
        assert_close(values["init_" + metric], alone["eval_results"][metric], 1, err_msg=metric)
    # held-out loss trained on the same rule: the continued model is compared with its start
    assert values["masked_lm_loss"] != values["init_masked_lm_loss"]
    assert not list((tmp_path / "continued").glob(".eval_start_*"))  # the scratch folder went


def test_continuing_warnings_follow_the_standard_error_rule_and_report_forgetting():
    base = {"masked_lm_loss": 3.0, "masked_lm_loss_squared": 9.0 + 0.25,  # sd 0.5
            "masked_lm_num_targets": 2500.0}                             # se 0.01
    start = {"init_" + key: value for key, value in base.items()}
    same = dict(base, **start)
    assert learning_check.continuing_warnings(same)[0].startswith(
        "continuing has not clearly helped: held-out masked_lm_loss 3.0000 is not below the "
        "starting checkpoint's 3.0000 by 3 standard errors (0.0424)")
    better = dict(same, masked_lm_loss=2.9, masked_lm_loss_squared=2.9 ** 2 + 0.25)
    assert learning_check.continuing_warnings(better) == []
    forgot = dict(better, **{"general/masked_lm_loss": 4.5, "general/init_masked_lm_loss": 4.0,
                             "general/masked_lm_loss_squared": 20.5,
                             "general/init_masked_lm_loss_squared": 16.25,
                             "general/masked_lm_num_targets": 100.0,
                             "general/init_masked_lm_num_targets": 100.0})
    assert learning_check.continuing_warnings(forgot) == [
        "general masked_lm_loss rose from 4.0000 at the start to 4.5000 (+0.5000): what "
        "continuing forgot of that text"]
    assert learning_check.continuing_warnings(base) == []  # not a continued run


def test_eval_records_that_are_training_records_are_named(data, tmp_path):
    result = _continue(data, tmp_path / "on_train", eval_input_file=None, num_train_steps=1)
    assert result["data_warnings"][0].startswith("the eval records are training records")
    held_out = _continue(data, tmp_path / "held_out", num_train_steps=1)
    assert held_out["data_warnings"] == []  # other files, no common corpus in the sidecars


def test_records_of_one_corpus_without_its_split_may_share_documents(tmp_path):
    flags = {"input_file": "corpus.txt"}
    paths = {name: str(tmp_path / f"{name}.tfrecord") for name in ("a", "b")}
    sidecars = {paths["a"]: {"flags": flags}, paths["b"]: {"flags": flags}}
    (line,) = continued_eval.data_warnings([paths["a"]], [paths["b"]], sidecars)
    assert "may share documents" in line and "--eval_share" in line
    split = {paths["a"]: {"flags": flags, "document_split": "train", "eval_share": 0.05,
                          "split_seed": 3},
             paths["b"]: {"flags": flags, "document_split": "eval", "eval_share": 0.05,
                          "split_seed": 3}}
    assert continued_eval.data_warnings([paths["a"]], [paths["b"]], split) == []


@pytest.mark.parametrize("spec, message", [
    ("general", "expected NAME=GLOB"),
    ("=x.tfrecord", "NAME '' must start with a letter"),
    ("9x=a.tfrecord", "must start with a letter"),
    ("a/b=a.tfrecord", "must start with a letter"),
])
def test_a_malformed_extra_eval_is_refused_with_its_form(spec, message):
    with pytest.raises(UserError, match=message):
        continued_eval.parse_extra_evals([spec])
    with pytest.raises(UserError, match="given twice"):
        continued_eval.parse_extra_evals(["a=x", "a=y"])


def test_an_extra_eval_matching_no_file_or_without_do_eval_stops_before_training(data,
                                                                                tmp_path):
    with pytest.raises(Exception, match="no_such_"):
        _continue(data, tmp_path / "none", extra_eval_input_file=["general=no_such_*.tfrecord"])
    with pytest.raises(UserError, match="--extra_eval_input_file needs --do_eval"):
        _continue(data, tmp_path / "no_eval", do_eval=False,
                  extra_eval_input_file=[f"other={data['other']}"])
    assert not (tmp_path / "none" / "checkpoint").exists()


def test_electras_eval_draws_are_the_same_for_the_start_and_the_end(tmp_path):
    """ELECTRA's generator samples at eval (temperature 1): seeded for eval even without
    --random_seed, so two evals of one checkpoint draw the same replacements."""
    cfg = tiny_config(tmp_path / "electra.json", model_type="electra", embedding_size=16,
                      generator_hidden_size=0.5)
    records = write_records(tmp_path / "e.tfrecord", make_examples(16, seed=5), mode="roberta")
    first, second = (run_pretraining.run(run_options(
        SEQ, PREDS, BATCH, bert_config_file=cfg, input_file=records, output_dir=tmp_path / name,
        do_train=False, do_eval=True, random_seed=None, max_eval_steps=2))["eval_results"]
        for name in ("one", "two"))
    assert json.dumps(first, sort_keys=True) == json.dumps(second, sort_keys=True)
