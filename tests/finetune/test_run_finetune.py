"""finetune.run_finetune end to end on the shipped samples (data/sample/tasks): every task,
every input format, its results files and predictions, and its clean failures.

Each run is tiny (hidden 32, 2 layers, max_seq_length 16, tens of steps) on a vocab made
of the samples' characters; the learnable samples (sentiment, NLI, the three NER ones)
must be learnt.
"""
import collections
import json
import pathlib

import pytest
import tensorflow.compat.v1 as tf

from tests.testutil.cli_runs import run_main_in_process
from finetune import formats, metrics, run_finetune, tag_schemes
from tests.testutil.finetune_task import (COMMON, SAMPLES, SEQ,  # noqa: F401
                              model, probabilities_sum_tolerance, read_eval_results, read_jsonl)
from conftest import REPO_ROOT

Run = collections.namedtuple("Run", "dir results messages")

def finetune(folder, **settings):
    messages = []
    results = run_finetune.run(dict(COMMON, output_dir=str(folder), **settings),
                               log_fn=messages.append)
    return Run(folder, results, messages)


@pytest.fixture(scope="module")
def sentiment(model, tmp_path_factory):
    return finetune(tmp_path_factory.mktemp("sentiment") / "out", task="classification",
                    data_dir=str(SAMPLES / "sentiment"), num_train_epochs=8,
                    eval_every_steps=15, **model)


@pytest.fixture(scope="module")
def nli(model, tmp_path_factory):
    return finetune(tmp_path_factory.mktemp("nli") / "out", task="pair",
                    data_dir=str(SAMPLES / "nli_clue"), selection_metric="macro_f1",
                    num_train_epochs=12, eval_every_steps=22, **model)


# ---- helpers -----------------------------------------------------------------------------
def text_examples(path, task):
    return formats.read_text_examples(path, task, require_labels=False, log_fn=lambda m: None)[0]


def tagged_examples(path):
    examples, _ = formats.read_tagged_examples(path, require_labels=False, log_fn=lambda m: None)
    for example in examples:
        if example.spans is not None:
            example.tags = tag_schemes.spans_to_tags(example.spans, len(example.chars), "BIO")
    return examples


def without(scores, *names):
    return {name: value for name, value in scores.items() if name not in names}


def check_best_step(results):
    """best_step is the first step of the dev curve's maximum by the selection metric, among
    the trained steps (step 0, before training, is scored but never chosen)."""
    metric = results["selection_metric"]
    best = max((point for point in results["dev_curve"] if point["step"] > 0),
               key=lambda point: (point[metric], -point["step"]))
    assert results["best_step"] == best["step"]
    assert results[f"dev_{metric}"] == best[metric] == results["dev"][metric]
    assert results["dev_curve"][0]["step"] == 0
    assert results["dev_curve"][-1]["step"] == results["num_train_steps"]


def check_eval_results(run):
    """eval_results.txt holds best_step, num_train_steps and every flat dev_/test_ number."""
    expected = {"best_step": str(run.results["best_step"]),
                "num_train_steps": str(run.results["num_train_steps"])}
    for split in ("dev", "test"):
        for name, value in (run.results[split] or {}).items():
            if isinstance(value, float):
                expected[f"{split}_{name}"] = str(value)
                assert run.results[f"{split}_{name}"] == value
    assert read_eval_results(run.dir / "eval_results.txt") == expected


def check_classification_predictions(run, split, path, task):
    """SPLIT_predictions.jsonl: one line per example in input order; its labels give the
    split's metrics again. Returns the predictions."""
    examples = text_examples(path, task)
    labels = run.results["labels"]
    if split == "dev":  # dev drops unlabelled rows (`-` in OCNLI) when it is read
        examples = [e for e in examples if e.label is not None]
    predictions = read_jsonl(run.dir / f"{split}_predictions.jsonl")
    assert [p["line"] for p in predictions] == [e.line for e in examples]
    for prediction in predictions:
        assert list(prediction["probabilities"]) == labels
        assert sum(prediction["probabilities"].values()) == pytest.approx(
            1, abs=probabilities_sum_tolerance(len(labels)))
        assert prediction["label"] == max(prediction["probabilities"],
                                          key=prediction["probabilities"].get)
    scored = [(e.label, p["label"]) for e, p in zip(examples, predictions) if e.label]
    if scored:
        again = metrics.classification_metrics(*zip(*scored), labels)
        assert again == without(run.results[split], "loss")
    else:
        assert run.results[split] is None
    return predictions


def check_ner_predictions(run, split, path):
    """Every sentence gets one tag per character, in the run's scheme; the tags give the
    split's metrics again. Returns (examples, predictions)."""
    examples = tagged_examples(path)
    predictions = read_jsonl(run.dir / f"{split}_predictions.jsonl")
    assert [p["line"] for p in predictions] == [e.line for e in examples]
    assert [len(p["tags"]) for p in predictions] == [len(e.chars) for e in examples]
    assert {tag for p in predictions for tag in p["tags"]} <= set(run.results["labels"])
    gold = [(e.tags, p["tags"]) for e, p in zip(examples, predictions) if e.tags]
    if gold:
        again = metrics.ner_metrics(*zip(*gold), run.results["tag_scheme"])
        assert again == without(run.results[split], "loss")
    return examples, predictions


def check_assets(run, model, task):
    """bert_config.json, vocab.txt and task.json in OUTPUT_DIR and best/, the same files."""
    for folder in (run.dir, run.dir / "best"):
        assert (folder / "vocab.txt").read_bytes() == pathlib.Path(
            model["vocab_file"]).read_bytes()
        assert (folder / "bert_config.json").read_bytes() == pathlib.Path(
            model["bert_config_file"]).read_bytes()
        assert json.loads((folder / "task.json").read_text(encoding="utf-8")) == task
    assert tf.train.latest_checkpoint(str(run.dir / "best")).endswith(
        f"model.ckpt-{run.results['best_step']}")


# ---- classification: sentiment TSV -------------------------------------------------------
def test_sentiment_is_learnt_and_results_json_says_what_happened(sentiment):
    results = sentiment.results
    assert results["task"] == "classification" and results["labels"] == ["neg", "pos"]
    assert results["selection_metric"] == "accuracy" and results["tag_scheme"] is None
    check_best_step(results)
    assert results["dev_curve"][0]["accuracy"] <= 0.6 and results["dev_accuracy"] >= 0.85
    assert results["test_accuracy"] >= 0.8 and results["collapsed"] is False
    for split, rows in (("train", 60), ("dev", 20), ("test", 20)):
        data = results["data"][split]
        assert data["file"] == str(SAMPLES / "sentiment" / f"{split}.tsv")
        assert data["read"] == {"path": str(SAMPLES / "sentiment" / f"{split}.tsv"),
                                "format": "tsv", "read": rows, "used": rows, "dropped": {},
                                "notes": {"header_lines": 1}}
        assert data["records"]["records"] == data["records"]["examples"] == rows
        assert data["unseen_labels"] == {}
    assert results["num_train_steps"] == 30  # 60 examples x 8 epochs / 16
    assert results["init"] == {"checkpoint": None, "note": "random initialisation"}
    check_eval_results(sentiment)
    for point in results["dev_curve"]:
        assert (f"step {point['step']}: dev accuracy {point['accuracy']:.4f}, macro_f1 "
                f"{point['macro_f1']:.4f}, loss {point['loss']:.4f}") in "\n".join(
                    sentiment.messages)


def test_sentiment_predictions_agree_with_the_metrics(sentiment):
    predictions = check_classification_predictions(sentiment, "test",
                                                   SAMPLES / "sentiment" / "test.tsv",
                                                   "classification")
    assert [p["line"] for p in predictions] == list(range(2, 22))  # after the header
    check_classification_predictions(sentiment, "dev", SAMPLES / "sentiment" / "dev.tsv",
                                     "classification")


def test_model_files_are_written_beside_the_checkpoints(sentiment, model):
    check_assets(sentiment, model, {"format_version": 1, "task": "classification",
                                    "labels": ["neg", "pos"], "tag_scheme": None,
                                    "max_seq_length": SEQ, "do_lower_case": True})


def test_second_run_starts_from_the_first_output_dir_and_scores_unseen_labels(sentiment,
                                                                              tmp_path):
    # No --vocab_file / --bert_config_file: both come from beside the first run's best
    # checkpoint. The dev file has a label training never saw: let through, it is an error.
    dev = tmp_path / "dev.tsv"
    shipped = (SAMPLES / "sentiment" / "dev.tsv").read_text(encoding="utf-8")
    dev.write_text(shipped + "meh\t房间一般。\n", encoding="utf-8")
    again = finetune(tmp_path / "again", task="classification",
                     train_file=str(SAMPLES / "sentiment" / "train.tsv"), dev_file=str(dev),
                     init_checkpoint=str(sentiment.dir), allow_unseen_labels=True,
                     max_train_examples=16, num_train_epochs=1, learning_rate=1e-5).results
    best_dir = sentiment.dir / "best"
    best_step = sentiment.results["best_step"]
    assert again["init"]["checkpoint"] == str(best_dir / f"model.ckpt-{best_step}")
    assert again["assets"] == {"config": "checkpoint", "vocab": "checkpoint"}
    assert again["vocab_file"] == str(best_dir / "vocab.txt")
    assert again["bert_config_file"] == str(best_dir / "bert_config.json")
    assert again["data"]["dev"]["unseen_labels"] == {"meh": 1}
    assert again["data"]["train"]["read"]["limited_to"] == 16
    # Step 0 is scored before any update: the first run's best weights, one more dev row
    # that can only be wrong.
    first_correct = round(sentiment.results["dev_accuracy"] * 20)
    # float64 ratios of counts: approx's default (relative 1e-6) is far below 1/21
    assert again["dev_curve"][0]["accuracy"] == pytest.approx(first_correct / 21)
    assert again["dev"]["per_label"]["meh"] == {"precision": 0.0, "recall": 0.0, "f1": 0.0,
                                                "support": 1}
    assert again["dev"]["num_examples"] == 21


# ---- pairs: CLUE JSON lines, an unlabelled test file -------------------------------------
def test_pair_json_with_an_unlabelled_test_file(model, tmp_path):
    run = finetune(tmp_path / "out", task="pair", data_dir=str(SAMPLES / "pairs_clue"),
                   num_train_epochs=2, eval_every_steps=8, **model)
    results = run.results
    assert results["labels"] == ["0", "1"] and results["test"] is None
    assert not [key for key in results if key.startswith("test_")]
    assert results["data"]["test"]["read"]["notes"] == {"unlabelled": 20,
                                                        "other_fields_ignored": 20}
    assert results["data"]["train"]["read"]["format"] == "jsonl"
    check_best_step(results)
    check_eval_results(run)
    predictions = check_classification_predictions(run, "test", SAMPLES / "pairs_clue" /
                                                   "test.json", "pair")
    assert [p["line"] for p in predictions] == list(range(1, 21))
    check_classification_predictions(run, "dev", SAMPLES / "pairs_clue" / "dev.json", "pair")


# ---- pairs with three labels: OCNLI-like, `-` rows dropped -------------------------------
def test_three_labels_dash_rows_dropped_and_counted_macro_f1_selects(nli):
    results = nli.results
    assert results["labels"] == ["contradiction", "entailment", "neutral"]
    assert results["selection_metric"] == "macro_f1"
    for split, (read, used) in (("train", (60, 58)), ("dev", (20, 18))):
        account = results["data"][split]["read"]
        assert (account["read"], account["used"], account["dropped"]) == (
            read, used, {"label_dash": 2})
        assert account["notes"] == {"other_fields_ignored": read}  # genre, id
    check_best_step(results)  # by macro_f1
    assert results["dev_curve"][0]["macro_f1"] < 0.5 <= 0.8 <= results["dev_macro_f1"]
    assert results["test"] is None and "test" not in results["data"]
    assert not (nli.dir / "test_predictions.jsonl").exists()
    check_eval_results(nli)
    predictions = check_classification_predictions(nli, "dev", SAMPLES / "nli_clue" / "dev.json",
                                                   "pair")
    assert len(predictions) == 18
    assert nli.messages[-1].startswith(f"best dev macro_f1 {results['dev_macro_f1']:.4f} at "
                                       f"step {results['best_step']} of "
                                       f"{results['num_train_steps']}; no test set")


# ---- NER -----------------------------------------------------------------------------------
def conll(sentences):
    return "\n".join("".join(f"{char} {tag}\n" for char, tag in sentence)
                     for sentence in sentences)


@pytest.fixture(scope="module")
def bio(model, tmp_path_factory):
    """BIO run; its test file is the shipped one plus a sentence several windows long (six
    training sentences in a row) and one with characters that tokenise to nothing (a
    space, a zero-width space)."""
    folder = tmp_path_factory.mktemp("bio")
    train = tagged_examples(SAMPLES / "ner_bio" / "train.txt")
    long_sentence = [pair for e in train[:6] for pair in zip(e.chars, e.tags)]
    assert len(long_sentence) > 2 * (SEQ - 2)
    empty_pieces = list(zip("陈思远去了", ["B-PER", "I-PER", "I-PER", "O", "O"]))
    empty_pieces[3:3] = [(" ", "O"), ("\u200b", "O")]
    test = folder / "test.txt"
    test.write_text((SAMPLES / "ner_bio" / "test.txt").read_text(encoding="utf-8") + "\n"
                    + conll([long_sentence, empty_pieces]), encoding="utf-8")
    return finetune(folder / "out", task="ner", train_file=str(SAMPLES / "ner_bio" / "train.txt"),
                    dev_file=str(SAMPLES / "ner_bio" / "dev.txt"), test_file=str(test),
                    num_train_epochs=5, eval_every_steps=16, **model)


def test_ner_bio_is_learnt_and_its_tags_agree_with_the_metrics(bio):
    results = bio.results
    assert results["task"] == "ner" and results["tag_scheme"] == "BIO"
    assert results["labels"] == ["O", "B-LOC", "B-ORG", "B-PER", "I-LOC", "I-ORG", "I-PER"]
    assert results["selection_metric"] == "f1"
    check_best_step(results)
    assert results["dev_curve"][0]["f1"] < 0.3 and results["dev_f1"] >= 0.8
    assert results["test_f1"] >= 0.8
    check_eval_results(bio)
    check_ner_predictions(bio, "dev", SAMPLES / "ner_bio" / "dev.txt")
    task = json.loads((bio.dir / "best" / "task.json").read_text(encoding="utf-8"))
    assert (task["task"], task["tag_scheme"], task["labels"]) == ("ner", "BIO", results["labels"])


def test_ner_long_sentences_are_windowed_and_no_character_is_lost(bio):
    examples, predictions = check_ner_predictions(bio, "test", bio.dir.parent / "test.txt")
    assert len(predictions) == 22  # 20 shipped sentences + 2
    records = bio.results["data"]["test"]["records"]
    windows = sum(-(-len([c for c in e.chars if c.strip() and c != "\u200b"]) // (SEQ - 2))
                  for e in examples)
    assert records["records"] == windows and records["split_sentences"] >= 8
    assert records["tokens"] == sum(len(e.chars) for e in examples)
    # The long sentence: entities in its second and third windows are found too.
    long_example, long_prediction = examples[20], predictions[20]
    gold = set(tag_schemes.tags_to_spans(long_example.tags, "BIO"))
    found = gold & set(tag_schemes.tags_to_spans(long_prediction["tags"], "BIO"))
    assert any(start >= SEQ - 2 for _, start, _ in found)
    assert any(start >= 2 * (SEQ - 2) for _, start, _ in found)


def test_ner_characters_without_pieces_are_tagged_o_and_counted(bio):
    records = bio.results["data"]["test"]["records"]
    assert records["tokens_without_pieces"] == 2
    assert bio.results["data"]["test"]["read"]["notes"] == {"whitespace_tokens": 1}
    last = read_jsonl(bio.dir / "test_predictions.jsonl")[-1]
    assert len(last["tags"]) == 7 and last["tags"][3:5] == ["O", "O"]


def test_ner_bmes_in_bmes_out(model, tmp_path):
    run = finetune(tmp_path / "out", task="ner", data_dir=str(SAMPLES / "ner_bmes"),
                   num_train_epochs=5, eval_every_steps=100, **model)  # dev at 0 and the end
    results = run.results
    assert results["tag_scheme"] == "BMES"
    assert {label[0] for label in results["labels"]} == {"O", "B", "M", "E", "S"}
    check_best_step(results)
    assert results["dev_f1"] >= 0.8 and results["test_f1"] >= 0.8
    _, predictions = check_ner_predictions(run, "test", SAMPLES / "ner_bmes" / "test.txt")
    predicted = {tag[0] for p in predictions for tag in p["tags"]}
    assert "I" not in predicted and {"B", "M", "E"} <= predicted
    assert json.loads((run.dir / "task.json").read_text(encoding="utf-8"))["tag_scheme"] == "BMES"


def test_cluener_spans_in_and_out(model, tmp_path):
    run = finetune(tmp_path / "out", task="ner", data_dir=str(SAMPLES / "cluener"),
                   num_train_epochs=5, eval_every_steps=100, **model)  # dev at 0 and the end
    results = run.results
    assert results["tag_scheme"] == "BIO" and results["test"] is None
    assert {label[2:] for label in results["labels"]} == {
        "", "name", "address", "company", "organization", "position"}
    check_best_step(results)
    assert results["dev_curve"][0]["f1"] < 0.3 and results["dev_f1"] >= 0.7
    check_ner_predictions(run, "dev", SAMPLES / "cluener" / "dev.json")
    examples, predictions = check_ner_predictions(run, "test", SAMPLES / "cluener" / "test.json")
    assert sum(bool(p["label"]) for p in predictions) >= 15
    for example, prediction in zip(examples, predictions):
        assert prediction["text"] == example.text
        spans = []
        for entity_type, mentions in prediction["label"].items():  # CLUENER's form
            for mention, positions in mentions.items():
                for start, end in positions:  # end inclusive
                    assert example.text[start:end + 1] == mention
                    spans.append((entity_type, start, end + 1))
        assert sorted(spans) == sorted(tag_schemes.tags_to_spans(prediction["tags"], "BIO"))


# ---- clean failures through the command line -----------------------------------------------
def test_cli_failures_are_one_error_line_with_exit_code_2(model, sentiment, tmp_path):
    sentiment_dir = SAMPLES / "sentiment"
    unseen = tmp_path / "dev_unseen.tsv"
    unseen.write_text("label\ttext_a\npos\t很好\nmeh\t一般\nneg\t很差\n", encoding="utf-8")
    empty = tmp_path / "empty.tsv"
    empty.write_text("\n\n", encoding="utf-8")
    bad_tags = tmp_path / "x_tags.txt"
    bad_tags.write_text((SAMPLES / "ner_bio" / "train.txt").read_text(encoding="utf-8")
                        .replace("B-PER", "X-PER"), encoding="utf-8")
    vocab, config = model["vocab_file"], model["bert_config_file"]
    plain = [f"--vocab_file={vocab}", f"--bert_config_file={config}", f"--max_seq_length={SEQ}"]
    train = f"--train_file={sentiment_dir / 'train.tsv'}"
    other_vocab = REPO_ROOT / "tests" / "fixtures" / "hf" / "vocab"
    cases = {
        "task": (["--task=regression", f"--data_dir={sentiment_dir}", *plain],
                 "error: flag --task=regression: value should be one of "
                 "<classification|pair|ner>; see --help"),
        "unseen": (["--task=classification", train, f"--dev_file={unseen}", *plain],
                   f"error: {unseen}:3: label 'meh' does not occur in the training file (1 "
                   "unseen label(s) in all: meh); the model can only predict the 2 labels it "
                   "was trained on. Fix the file, or pass --allow_unseen_labels to score those "
                   "examples as errors"),
        "empty": (["--task=classification", train, f"--dev_file={empty}", *plain],
                  f"error: {empty}: the file holds no non-blank line; give a file with data"),
        "tags": (["--task=ner", f"--train_file={bad_tags}",
                  f"--dev_file={SAMPLES / 'ner_bio' / 'dev.txt'}", *plain],
                 "malformed tag(s) 'X-PER'"),
        "length": (["--task=classification", f"--data_dir={sentiment_dir}", f"--vocab_file={vocab}",
                    f"--bert_config_file={config}", "--max_seq_length=64"],
                   f"error: --max_seq_length=64 exceeds the model's max_position_embeddings=16 "
                   f"(--bert_config_file={config})"),
        "vocab": (["--task=classification", f"--data_dir={sentiment_dir}",
                   f"--init_checkpoint={sentiment.dir}", f"--vocab_file={other_vocab}",
                   f"--max_seq_length={SEQ}"],
                  f"error: --vocab_file={other_vocab} is not the vocab checkpoint "
                  f"{sentiment.dir / 'best'}/model.ckpt-{sentiment.results['best_step']} was "
                  f"trained with: it differs from {sentiment.dir / 'best' / 'vocab.txt'} at line"),
    }
    # Refused before a model is built: main() in this process, as the console script calls it
    # (the tools as subprocesses: tests/test_cli_failures.py, tests/test_cli_help.py).
    for name, (flags, expected) in cases.items():
        code, _, stderr, _ = run_main_in_process(
            "finetune.run_finetune", [*flags, f"--output_dir={tmp_path / name}"], tmp_path)
        assert code == 2 and "Traceback" not in stderr, (name, stderr)
        errors = [line for line in stderr.splitlines() if line.startswith("error:")]
        assert len(errors) == 1 and stderr.strip().splitlines()[-1] == errors[0], (name, stderr)
        assert expected in errors[0], (name, errors[0])
        assert not (tmp_path / name).exists(), name  # nothing written
