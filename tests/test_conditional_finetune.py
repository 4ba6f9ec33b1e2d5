"""Fine-tuning a conditional-LayerNorm model: the 4th LCQMC field, its features, a run.

A config with layer_norm_cond_size = C reads `text_a<TAB>text_b<TAB>label<TAB>COND`
(COND: a class id in [0, C) or C comma-separated numbers) into the float32
feature `condition` [B, C]; without the field everything is as before the
option existed (golden fingerprints taken at commit bd92907).
"""
import hashlib
import json
import os
import pathlib
import random
import re

import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from data_gen import lcqmc_format
from finetune import lcqmc_data, run_lcqmc
from finetune.classifier import model_fn_builder
from finetune_helpers import FILLERS, KEYS, SPECIALS, TINY_CONFIG, fast_settings
from pretrain.modeling import BertConfig

COND_CONFIG = dict(TINY_CONFIG, layer_norm_cond_size=2)


def write(path, lines):
    with open(path, "w", encoding="utf-8", newline="") as f:
        f.writelines(lines)
    return str(path)


def write_vocab(folder):
    return write(folder / "vocab.txt", [t + "\n" for t in SPECIALS + list(KEYS) + list(FILLERS)])


@pytest.mark.parametrize("text, size, expected", [
    ("1", 3, (0.0, 1.0, 0.0)), (" 0 ", 3, (1.0, 0.0, 0.0)), ("+2", 3, (0.0, 0.0, 1.0)),
    ("0.5, -1,2e-1", 3, (0.5, -1.0, 0.2)), ("1,0", 2, (1.0, 0.0)), ("1.,.5", 2, (1.0, 0.5)),
    ("0", 1, (1.0,)), ("0.7", 1, (0.7,)), ("1.0", 1, (1.0,))])
def test_parse_condition_ids_and_vectors(text, size, expected):
    assert lcqmc_format.parse_condition(text, size) == expected


@pytest.mark.parametrize("text, size, message", [
    ("3", 3, "class id 3 is out of range; expected a class id in [0, 3) or 3 comma-separated"),
    ("-1", 3, "class id -1 is out of range"),
    ("1", 1, "class id 1 is out of range; expected the class id 0 or one number with a "
             "decimal point (e.g. 0.5 or 1.0)"),
    ("1,2", 3, "'1,2' holds 2 comma-separated value(s); expected a class id in [0, 3)"),
    ("0.5", 3, "'0.5' holds 1 comma-separated value(s)"),
    ("1,x,2", 3, "'x' in '1,x,2' is not a number"),
    ("1,,2", 3, "'' in '1,,2' is not a number"),
    ("nan,0,1", 3, "'nan' in 'nan,0,1' is not a number"),
    ("\u0661,0,1", 3, "is not a number"),   # a non-ASCII digit
    ("1e999,0,0", 3, "'1e999,0,0' overflows float"),
    ("  ", 2, "empty condition; expected a class id in [0, 2) or 2 comma-separated numbers")])
def test_parse_condition_errors_say_what_is_expected(text, size, message):
    with pytest.raises(ValueError) as error:
        lcqmc_format.parse_condition(text, size)
    assert message in str(error.value)


def test_read_pairs_with_conditions(tmp_path):
    path = write(tmp_path / "train.txt", [
        "text_a\ttext_b\tlabel\tcondition\r\n",   # 1: header
        "甲天\t乙地\t1\t2\r\n",                     # 2: class id
        "丙\t丁\t0\t0.5,0,-1\n",                    # 3: vector
        "丙\t丁\t1\t0\tmore\n",                     # 4: malformed, skipped (5 fields)
        "丙\t丁\t0\t 1 \n",                         # 5: class id, spaces
    ])
    messages = []
    examples, report = lcqmc_data.read_pairs(path, log_fn=messages.append, condition_size=3)
    assert [(e.guid, e.label, e.condition) for e in examples] == [
        ("train-2", 1, (0.0, 0.0, 1.0)), ("train-3", 0, (0.5, 0.0, -1.0)),
        ("train-5", 0, (0.0, 1.0, 0.0))]
    assert report.header_skipped and [line for line, _ in report.malformed] == [4]
    assert f"{path}:4: malformed line skipped: expected 3 or 4 tab-separated fields" in messages[0]


@pytest.mark.parametrize("lines, size, message", [
    (["甲\t乙\t1\t1\n", "甲\t乙\t1\t7\n"], 3,
     ":2: bad condition: class id 7 is out of range; expected a class id in [0, 3) or 3 "
     "comma-separated numbers (layer_norm_cond_size=3)"),
    (["甲\t乙\t1\t1,2\n"], 3, ":1: bad condition: '1,2' holds 2 comma-separated value(s); "
                              "expected a class id in [0, 3) or 3 comma-separated numbers "
                              "(layer_norm_cond_size=3)"),
    (["甲\t乙\t1\t1\n", "甲\t乙\t0\n", "甲\t乙\t0\n"], 2,
     ":2: no condition: the model config sets layer_norm_cond_size=2 (conditional LayerNorm), "
     "so every line needs a 4th field: text_a<TAB>text_b<TAB>label<TAB>CONDITION, CONDITION "
     "being a class id in [0, 2) or 2 comma-separated numbers [1 more line(s) with a "
     "condition problem]"),
    (["甲\t乙\t1\n", "甲\t乙\t0\t1\n"], None,
     ":2: 4th field '1' (a condition) but the model config has no layer_norm_cond_size: to "
     "condition the model, set layer_norm_cond_size to the condition width C in the model "
     "config (--bert_config_file); otherwise keep 3 fields per line"),
])
def test_condition_errors_name_file_and_line(tmp_path, lines, size, message):
    path = write(tmp_path / "dev.txt", lines)
    with pytest.raises(lcqmc_data.DataError) as error:
        lcqmc_data.read_pairs(path, log_fn=lambda m: None, condition_size=size)
    assert str(error.value) == path + message


def test_conditional_cache_and_input_fn_carry_the_condition(tmp_path):
    tokenizer = lcqmc_data.load_tokenizer(write_vocab(tmp_path))
    data = write(tmp_path / "train.txt", ["甲天\t乙\t1\t1\n", "丙\t丁地\t0\t0.25,-2\n",
                                          "天\t地\t0\t0\n"])
    path, info = lcqmc_data.build_cached_features(data, tokenizer, 8, str(tmp_path / "cache"),
                                                  "train", log_fn=lambda m: None,
                                                  condition_size=2)
    assert info["key"]["condition_size"] == 2 and info["num_examples"] == 3
    plain_key, _ = lcqmc_data.cache_key(data, tokenizer.vocab_file, 8, True, 0)
    assert "condition_size" not in plain_key
    assert dict(info["key"], condition_size=None) != plain_key
    with tf.Graph().as_default():
        fn = lcqmc_data.input_fn_builder(path, 8, batch_size=10, is_training=False,
                                         condition_size=2)
        features, labels = tf.data.make_one_shot_iterator(fn()).get_next()
        assert features["condition"].dtype == tf.float32
        assert features["condition"].shape.as_list() == [None, 2]
        with tf.Session() as session:
            features, labels = session.run((features, labels))
    np.testing.assert_array_equal(features["condition"], [[0, 1], [0.25, -2], [1, 0]])
    assert list(labels) == [1, 0, 0]
    expected, _ = lcqmc_data.convert_example(
        lcqmc_data.PairExample("x", "丙", "丁地", 0, (0.25, -2.0)), tokenizer, 8)
    assert list(features["input_ids"][1]) == expected["input_ids"]


# --- the non-conditional path is unchanged ---------------------------------------

# Taken with this module's non_conditional_fingerprints() on the tree of commit
# bd92907 (before conditions existed). Regenerate only for an intended change of
# the plain classifier's cache or graph.
GOLDEN = {
    "record_file": "cache/train.05f7bfb478dc9936.tfrecord",
    "record_sha256": "61afda44e75e50ba6eec3fc64f1570ae896de835cf9026fe15b087dd7ba3d4d9",
    "info_sha256": "bf6fdd292c0cac00e058bda421744139a1794de1cc2d2d2ee8999fff88589f41",
    "train_graph": "95fe881f6672b87eab001dc4fc9c6534ee75d4f9b605a595653bbf5bc86c8003",
    "predict_graph": "96fd4579b158a1ae472bbed72a00a9e491ec4998d02424fa1cd8ab65a0f3f6b5",
}


def graph_fingerprint(graph):
    """sha256 of the GraphDef's nodes and functions (tf.data's hold the
    parse_single_example feature spec) as text, without the process-wide
    counter that TensorFlow appends to function names."""
    graph_def = graph.as_graph_def()
    names = sorted((f.signature.name for f in graph_def.library.function), key=len, reverse=True)
    numbered = re.compile('"(%s)"' % "|".join(map(re.escape, names))) if names else None

    def as_text(message):
        text = str(message)
        if numbered is None:
            return text
        return numbered.sub(lambda match: '"%s"' % re.sub("_[0-9]+$", "", match.group(1)), text)

    parts = [as_text(node) for node in graph_def.node]
    parts += sorted(as_text(function) for function in graph_def.library.function)
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def classifier_graph(record_path, config, mode, condition_size=None):
    """input_fn -> model_fn graph as the Estimator builds it, for one mode."""
    training = mode == tf.estimator.ModeKeys.TRAIN
    with tf.Graph().as_default() as graph:
        fn = lcqmc_data.input_fn_builder(record_path, 10, 4, is_training=training, seed=3,
                                         condition_size=condition_size)
        # As the Estimator does (a one-shot iterator would add a randomly named function).
        features, labels = tf.data.make_initializable_iterator(fn()).get_next()
        model_fn = model_fn_builder(BertConfig.from_dict(config), None, 1e-3, 10, 1)
        model_fn(features, labels if training else None, mode)
    return graph


def non_conditional_fingerprints(folder):
    """Builds a plain (no condition) feature cache and the TRAIN / PREDICT classifier
    graphs in `folder` (relative paths, so the graphs do not depend on where it is).
    Returns {name: fingerprint} as in GOLDEN."""
    previous = os.getcwd()
    os.chdir(folder)
    try:
        write("train.txt", ["text_a\ttext_b\tlabel\r\n", "甲天地\t乙山水\t1\r\n",
                            "丙人\t丁火木天\t0\n", "天地人山水火木甲\t乙\t1"])
        tokenizer = lcqmc_data.load_tokenizer(write_vocab(pathlib.Path(".")))
        path, _ = lcqmc_data.build_cached_features("train.txt", tokenizer, 10, "cache", "train",
                                                   log_fn=lambda m: None)
        with open(path, "rb") as f:
            record_sha = hashlib.sha256(f.read()).hexdigest()
        with open(path + ".json", encoding="utf-8") as f:
            info = json.load(f)
        info.update(data_file=os.path.basename(info["data_file"]),
                    vocab_file=os.path.basename(info["vocab_file"]))
        info_sha = hashlib.sha256(json.dumps(info, sort_keys=True).encode()).hexdigest()
        graphs = {f"{name}_graph": graph_fingerprint(classifier_graph(path, TINY_CONFIG, mode))
                  for name, mode in (("train", tf.estimator.ModeKeys.TRAIN),
                                     ("predict", tf.estimator.ModeKeys.PREDICT))}
    finally:
        os.chdir(previous)
    return {"record_file": path, "record_sha256": record_sha, "info_sha256": info_sha, **graphs}


def test_non_conditional_cache_and_graphs_are_unchanged(tmp_path, monkeypatch):
    assert non_conditional_fingerprints(tmp_path) == GOLDEN
    # A conditional graph differs; a condition for a plain model is refused.
    monkeypatch.chdir(tmp_path)
    predict = tf.estimator.ModeKeys.PREDICT
    conditional = graph_fingerprint(classifier_graph(GOLDEN["record_file"], COND_CONFIG, predict,
                                                     condition_size=2))
    assert conditional != GOLDEN["predict_graph"]
    with pytest.raises(ValueError, match="no layer_norm_cond_size"):
        classifier_graph(GOLDEN["record_file"], TINY_CONFIG, predict, condition_size=2)
    with pytest.raises(ValueError, match="pass condition=.B, 2. float32"):
        classifier_graph(GOLDEN["record_file"], COND_CONFIG, predict)
# --- a conditional fine-tuning run ---------------------------------------------------

def write_condition_task(folder, seed=11):
    """Random texts, label = condition class id (C = 2): only the condition predicts it.
    train: class ids; dev: vectors; test: both forms."""
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    chars = KEYS + FILLERS

    def text():
        return "".join(rng.choice(chars) for _ in range(rng.randint(1, 3)))

    def condition(label, form):
        return str(label) if form == "id" else ("0,1" if label else "1.0, 0.0")

    for split, count, forms in (("train", 320, ["id"]), ("dev", 100, ["vector"]),
                                ("test", 100, ["id", "vector"])):
        labels = [index % 2 for index in range(count)]
        rng.shuffle(labels)
        write(folder / f"{split}.txt", [
            f"{text()}\t{text()}\t{label}\t{condition(label, forms[index % len(forms)])}\n"
            for index, label in enumerate(labels)])
    with open(folder / "bert_config.json", "w", encoding="utf-8") as f:
        json.dump(COND_CONFIG, f)
    return {"data_dir": str(folder), "vocab_file": write_vocab(folder),
            "bert_config_file": str(folder / "bert_config.json")}


def test_conditional_finetuning_learns_a_task_only_the_condition_explains(tmp_path):
    task = write_condition_task(tmp_path / "task")
    settings = fast_settings(task, tmp_path / "run", max_seq_length=8, train_batch_size=32,
                             eval_batch_size=100, num_train_epochs=4, eval_every_steps=20)
    results = run_lcqmc.run(settings, log_fn=lambda m: None)
    assert results["examples"] == {"train": 320, "dev": 100, "test": 100}
    assert results["dev_curve"][0]["step"] == 0 and results["dev_curve"][0]["accuracy"] < 0.7
    assert results["dev_accuracy"] == 1.0 and results["test_accuracy"] == 1.0
    with open(tmp_path / "run" / "test_predictions.tsv", encoding="utf-8") as f:
        rows = [line.rstrip("\n").split("\t") for line in f]
    assert rows[0][-1] == "condition" and len(rows) == 101
    # The test conditions were written as ids and as vectors; both come back as vectors.
    assert all(row[6] == ("0,1" if row[3] == "1" else "1,0") for row in rows[1:])
    reader = tf.train.load_checkpoint(str(tmp_path / "run" / "best"))
    shapes = reader.get_variable_to_shape_map()
    gamma = "bert/encoder/layer_1/output/LayerNorm/gamma_dense/kernel"
    assert shapes[gamma] == [2, 32] and np.abs(reader.get_tensor(gamma)).max() > 0


def test_run_stops_on_a_missing_or_unexpected_condition(tmp_path):
    task = write_condition_task(tmp_path / "task")
    train = os.path.join(task["data_dir"], "train.txt")
    with pytest.raises(lcqmc_data.DataError, match="train.txt:1: 4th field '.' .a condition. "
                                                   "but the model config has no "
                                                   "layer_norm_cond_size"):
        plain = tmp_path / "plain.json"
        plain.write_text(json.dumps(TINY_CONFIG), encoding="utf-8")
        run_lcqmc.run(fast_settings(dict(task, bert_config_file=str(plain)), tmp_path / "a"))
    with open(train, encoding="utf-8") as f:
        lines = f.readlines()
    lines[4] = lines[4].rsplit("\t", 1)[0] + "\n"
    write(train, lines)
    with pytest.raises(lcqmc_data.DataError, match="train.txt:5: no condition: the model "
                                                   "config sets layer_norm_cond_size=2"):
        run_lcqmc.run(fast_settings(task, tmp_path / "b"))
