"""Fine-tuning a conditional-LayerNorm model: the 4th LCQMC field, its features, a run.

A config with layer_norm_cond_size = C reads `text_a<TAB>text_b<TAB>label<TAB>COND`
(COND: a class id in [0, C) or C comma-separated numbers; finetune.formats keeps it
as text, finetune.tasks.classification.parse_conditions checks it) into the float32
feature `condition` [B, C]; without the field a plain model's records are byte for
byte those written before the option existed (commit bd92907).
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

from data_gen.tools import lcqmc_format
from data_gen.text.tokenization import FullTokenizer
from finetune import features, formats, run_finetune, tasks
from finetune.model_fn import model_fn_builder
from finetune.tasks.base import TaskDataError
from finetune.tasks.classification import encode_texts, parse_conditions
from tests.testutil.finetune_task import FILLERS, KEYS, SPECIALS, TINY_CONFIG, fast_settings, read_jsonl
from pretrain.models.bert.modeling import BertConfig
from pretrain.training.model_spec import ModeKeys

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


def read_with_conditions(path, condition_size, log_fn=lambda m: None, **kwargs):
    """finetune's reading of an LCQMC-style file and its conditions: (examples, conditions)."""
    examples, _ = formats.read_text_examples(path, "pair", log_fn=log_fn, **kwargs)
    return examples, parse_conditions(examples, path, condition_size)


def test_read_pairs_with_conditions(tmp_path):
    path = write(tmp_path / "train.txt", [
        "text_a\ttext_b\tlabel\tcondition\r\n",   # 1: header
        "甲天\t乙地\t1\t2\r\n",                     # 2: class id
        "丙\t丁\t0\t0.5,0,-1\n",                    # 3: vector
        "丙\t丁\t1\t0\tmore\n",                     # 4: malformed, skipped (5 fields)
        "丙\t丁\t0\t 1 \n",                         # 5: class id, spaces
    ])
    messages = []
    examples, conditions = read_with_conditions(path, 3, log_fn=messages.append,
                                                format="lcqmc",
                                                max_malformed_share=0.5)  # 1 of 4 lines
    assert [(e.line, e.label, c) for e, c in zip(examples, conditions)] == [
        (2, "1", (0.0, 0.0, 1.0)), (3, "0", (0.5, 0.0, -1.0)), (5, "0", (0.0, 1.0, 0.0))]
    assert f"{path}:4: malformed line skipped: expected 3 or 4 tab-separated fields" in messages[0]
    assert "dropped: malformed=1" in messages[-1] and "header_lines=1" in messages[-1]


@pytest.mark.parametrize("lines, size, message", [
    (["甲\t乙\t1\t1\n", "甲\t乙\t1\t7\n"], 3,
     ":2: bad condition: class id 7 is out of range; expected a class id in [0, 3) or 3 "
     "comma-separated numbers (layer_norm_cond_size=3)"),
    (["甲\t乙\t1\t1,2\n"], 3, ":1: bad condition: '1,2' holds 2 comma-separated value(s); "
                              "expected a class id in [0, 3) or 3 comma-separated numbers "
                              "(layer_norm_cond_size=3)"),
    (["甲\t乙\t1\t1\n", "甲\t乙\t0\n", "甲\t乙\t0\n"], 2,
     ":2: no condition: the model config sets layer_norm_cond_size=2 (conditional LayerNorm), "
     "so every example needs one: a class id in [0, 2) or 2 comma-separated numbers (the 4th "
     "field of an LCQMC line, or a `condition` column) [1 more line(s) with a condition "
     "problem]"),
    (["甲\t乙\t1\n", "甲\t乙\t0\t1\n"], None,
     ":2: a condition ('1') but the model config has no layer_norm_cond_size: to condition the "
     "model, set layer_norm_cond_size to the condition width C in the model config "
     "(--bert_config_file); otherwise drop the condition field"),
])
def test_condition_errors_name_file_and_line(tmp_path, lines, size, message):
    path = write(tmp_path / "dev.txt", lines)
    with pytest.raises(TaskDataError) as error:
        read_with_conditions(path, size)  # the format is detected: lcqmc
    assert str(error.value) == path + message


def test_conditional_cache_and_input_fn_carry_the_condition(tmp_path):
    tokenizer = FullTokenizer(write_vocab(tmp_path))
    data = write(tmp_path / "train.txt", ["甲天\t乙\t1\t1\n", "丙\t丁地\t0\t0.25,-2\n",
                                          "天\t地\t0\t0\n"])
    task = tasks.get_task("pair")
    examples, _ = task.read(data, {}, True, lambda m: None)
    records, _, counts = task.featurize(examples, tokenizer, 8, ["0", "1"], condition_size=2,
                                        path=data)
    spec = features.record_spec("sequence", 8, condition_size=2)
    key, key_hash = features.cache_key(data, tokenizer.vocab_file, task="pair",
                                       max_seq_length=8, condition_size=2)
    path, info = features.cached_records("train", str(tmp_path / "cache"), key, key_hash,
                                         spec, lambda: (records, counts),
                                         log_fn=lambda m: None)
    assert info["key"]["condition_size"] == 2 and info["num_records"] == 3
    plain_key, _ = features.cache_key(data, tokenizer.vocab_file, task="pair", max_seq_length=8,
                                      condition_size=None)
    assert "condition_size" not in plain_key
    assert dict(info["key"], condition_size=None) != plain_key
    with tf.Graph().as_default():
        fn = features.input_fn_builder(path, spec, batch_size=10, is_training=False)
        batch, labels = tf.data.make_one_shot_iterator(fn()).get_next()
        assert batch["condition"].dtype == tf.float32
        assert batch["condition"].shape.as_list() == [None, 2]
        with tf.Session() as session:
            batch, labels = session.run((batch, labels))
    # written and read back as float32, exactly representable: bit for bit
    np.testing.assert_array_equal(batch["condition"], [[0, 1], [0.25, -2], [1, 0]])
    assert list(labels) == [1, 0, 0]
    assert list(batch["input_ids"][1]) == encode_texts(("丙", "丁地"), tokenizer, 8)[0][:6]  # [B, 6]
    # A plain model's records have no condition feature at all.
    plain, _, _ = task.featurize(examples[:0], tokenizer, 8, ["0", "1"], path=data)
    assert plain == [] and "condition" not in features.record_spec("sequence", 8).lengths


# --- the non-conditional path is unchanged ---------------------------------------

# record_sha256 was taken with this module's non_conditional_fingerprints() on the
# tree of commit bd92907 (before conditions existed), and retaken when finetune.features
# began to serialise deterministically (the feature map sorted by name, the same bytes on
# both runtimes; the records parse to the same features as before). The graphs are
# pinned per TensorFlow major.minor: 2.21 writes attributes at their op's default and builds
# tf.data's functions differently (2.15's hashes are those of before the session loop). All
# were retaken when records began to be written unpadded and batches padded to their
# longest (cache format 3; records parsed in the pipeline's own thread; the equality of the
# predictions is tests/finetune/test_dynamic_padding.py's). The train graphs were
# retaken when the optimizer's updates went under one cond instead of one per variable
# (the same update ops; tests/pretrain/training/test_optimization.py). All four were retaken
# when the input pipelines dropped tf.data's autotuning (one OptionsDataset node more, the
# only Dataset op added). The cache name, its sidecar and the graphs were regenerated when
# finetune.features / finetune.model_fn replaced lcqmc_data / classifier (a new
# cache key; the graphs lost only the unused argmax `predictions` and the label
# reshape, checked against the old classifier at that change). Regenerate only for
# an intended change of the plain classifier's cache or graph.
GRAPHS = {  # TensorFlow major.minor -> the classifier's graphs
    "2.15": {"train_graph": "78058da4260eaefcd03ee1a408f79d009b636c71560756ad56c0d0d2ad0334f7",
             "predict_graph": "ce41fd14299ff0e62f522d654d35c853ff6bb948a9392b5f6116432df2219931"},
    "2.21": {"train_graph": "8a9a0ba115b63ffd9f5b5606588af7be4bb2504844a1eb86f1d08d513db3d8c4",
             "predict_graph": "9890150ba622fe891b8b8a20291d4025db4131bc42c9acf4a8173c9af72da71f"},
}
GOLDEN = {
    "record_file": "cache/train.465c96d8fc9fed6d.tfrecord",
    "record_sha256": "d08f515e39665789422b3c169ef7a11be691f2450dc91237696b29c664d465b1",
    "info_sha256": "57ade3518af4e9c9d487c3c4d6ab54caca59613fdd76c8435d7a9512f7aaf2e3",
    **GRAPHS.get(".".join(tf.__version__.split(".")[:2]), {}),
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
    training = mode == ModeKeys.TRAIN
    with tf.Graph().as_default() as graph:
        spec = features.record_spec("sequence", 10, condition_size)
        fn = features.input_fn_builder(record_path, spec, 4, is_training=training, seed=3)
        # As the Estimator does (a one-shot iterator would add a randomly named function).
        batch, labels = tf.data.make_initializable_iterator(fn()).get_next()
        model_fn = model_fn_builder(tasks.get_task("pair"), BertConfig.from_dict(config), 2,
                                    None, 1e-3, 10, 1)
        model_fn(batch, labels if training else None, mode)
    return graph


def non_conditional_fingerprints(folder):
    """Builds a plain (no condition) feature cache as run_finetune does and the TRAIN /
    PREDICT classifier graphs in `folder` (relative paths, so the graphs do not depend
    on where it is). Returns {name: fingerprint} as in GOLDEN."""
    previous = os.getcwd()
    os.chdir(folder)
    try:
        write("train.txt", ["text_a\ttext_b\tlabel\r\n", "甲天地\t乙山水\t1\r\n",
                            "丙人\t丁火木天\t0\n", "天地人山水火木甲\t乙\t1"])
        tokenizer = FullTokenizer(write_vocab(pathlib.Path(".")))
        task = tasks.get_task("pair")
        examples, _ = task.read("train.txt", {}, True, lambda m: None)
        labels = task.label_list(examples, {})
        key, key_hash = features.cache_key(
            "train.txt", tokenizer.vocab_file, task="pair", labels=labels, max_seq_length=10,
            do_lower_case=True, examples=len(examples), condition_size=None)
        path, _ = features.cached_records(
            "train", "cache", key, key_hash, features.record_spec("sequence", 10),
            lambda: task.featurize(examples, tokenizer, 10, labels, path="train.txt")[::2],
            log_fn=lambda m: None)
        with open(path, "rb") as f:
            record_sha = hashlib.sha256(f.read()).hexdigest()
        with open(path + ".json", encoding="utf-8") as f:
            info = json.load(f)
        info_sha = hashlib.sha256(json.dumps(info, sort_keys=True).encode()).hexdigest()
        graphs = {f"{name}_graph": graph_fingerprint(classifier_graph(path, TINY_CONFIG, mode))
                  for name, mode in (("train", ModeKeys.TRAIN),
                                     ("predict", ModeKeys.PREDICT))}
    finally:
        os.chdir(previous)
    return {"record_file": path, "record_sha256": record_sha, "info_sha256": info_sha, **graphs}


def test_non_conditional_cache_and_graphs_are_unchanged(tmp_path, monkeypatch):
    assert non_conditional_fingerprints(tmp_path) == GOLDEN
    # A conditional graph differs; a condition for a plain model is refused.
    monkeypatch.chdir(tmp_path)
    predict = ModeKeys.PREDICT
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
    results = run_finetune.run(settings, log_fn=lambda m: None)
    assert {split: data["read"]["used"] for split, data in results["data"].items()} == {
        "train": 320, "dev": 100, "test": 100}
    assert results["dev_curve"][0]["step"] == 0 and results["dev_curve"][0]["accuracy"] < 0.7
    assert results["dev_accuracy"] == 1.0 and results["test_accuracy"] == 1.0
    # Each prediction carries the condition the model was given: the test conditions were
    # written as ids and as vectors; both come back as vectors.
    with open(tmp_path / "task" / "test.txt", encoding="utf-8") as f:
        gold = [line.split("\t")[2] for line in f]
    predictions = read_jsonl(tmp_path / "run" / "test_predictions.jsonl")
    assert [p["line"] for p in predictions] == list(range(1, 101))
    assert all(p["condition"] == ([0.0, 1.0] if gold[p["line"] - 1] == "1" else [1.0, 0.0])
               for p in predictions)
    assert all(p["label"] == gold[p["line"] - 1] for p in predictions)
    reader = tf.train.load_checkpoint(str(tmp_path / "run" / "best"))
    shapes = reader.get_variable_to_shape_map()
    gamma = "bert/encoder/layer_1/output/LayerNorm/gamma_dense/kernel"
    assert shapes[gamma] == [2, 32] and np.abs(reader.get_tensor(gamma)).max() > 0


def test_run_stops_on_a_missing_or_unexpected_condition(tmp_path):
    task = write_condition_task(tmp_path / "task")
    train = os.path.join(task["data_dir"], "train.txt")
    plain = tmp_path / "plain.json"
    plain.write_text(json.dumps(TINY_CONFIG), encoding="utf-8")
    with pytest.raises(TaskDataError, match="train.txt:1: a condition .'.'. but the model "
                                            "config has no layer_norm_cond_size"):
        run_finetune.run(fast_settings(dict(task, bert_config_file=str(plain)), tmp_path / "a"),
                      log_fn=lambda m: None)
    with open(train, encoding="utf-8") as f:
        lines = f.readlines()
    lines[4] = lines[4].rsplit("\t", 1)[0] + "\n"
    write(train, lines)
    with pytest.raises(TaskDataError, match="train.txt:5: no condition: the model config sets "
                                            "layer_norm_cond_size=2"):
        run_finetune.run(fast_settings(task, tmp_path / "b"), log_fn=lambda m: None)
