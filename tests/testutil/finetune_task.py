"""A tiny synthetic sentence-pair task and model config for fine-tuning tests, the shipped
samples' tiny model (`model` fixture, COMMON settings, finetune_from), and small helpers
for the files fine-tuning writes.

Task: each sentence is three characters, one of them a "key" (甲乙丙丁) at a
random position, the others fillers; label 1 iff sentence a carries 甲 AND
sentence b carries 乙. Half the pairs are positive; the negatives are split
evenly between "a right, b wrong", "a wrong, b right" and "both wrong", so a
model that reads only one sentence is stuck at 5/6 = 0.83 accuracy: passing
0.9 needs both segments. (Key equality, the more paraphrase-like task, is
XOR-shaped and takes a hidden-32 encoder well over 1000 steps: too slow here.)
"""
import json
import random

import pytest

from conftest import REPO_ROOT
from finetune import run_finetune

KEYS = "甲乙丙丁"
FILLERS = "天地人山水火木"
SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]

TINY_CONFIG = {
    "vocab_size": 32, "hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2,
    "intermediate_size": 64, "hidden_act": "gelu", "hidden_dropout_prob": 0.0,
    "attention_probs_dropout_prob": 0.0, "max_position_embeddings": 16, "type_vocab_size": 2,
    "initializer_range": 0.02, "model_type": "bert",
}


def sentence(key, rng):
    chars = [rng.choice(FILLERS) for _ in range(2)]
    chars.insert(rng.randrange(3), key)
    return "".join(chars)


def pairs(count, rng):
    rows = []
    for index in range(count):
        label = index % 2
        a_right, b_right = (True, True) if label else [(True, False), (False, True),
                                                       (False, False)][(index // 2) % 3]
        key_a = "甲" if a_right else rng.choice([k for k in KEYS if k != "甲"])
        key_b = "乙" if b_right else rng.choice([k for k in KEYS if k != "乙"])
        rows.append((sentence(key_a, rng), sentence(key_b, rng), label))
    rng.shuffle(rows)
    return rows


def write_task(folder, sizes=(("train", 1600), ("dev", 200), ("test", 200)), seed=7):
    """Writes train/dev/test.txt (LCQMC lines: text_a<TAB>text_b<TAB>label, no header),
    vocab.txt and bert_config.json into folder."""
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    for split, count in sizes:
        with open(folder / f"{split}.txt", "w", encoding="utf-8") as f:
            f.writelines(f"{a}\t{b}\t{label}\n" for a, b, label in pairs(count, rng))
    with open(folder / "vocab.txt", "w", encoding="utf-8") as f:
        f.writelines(token + "\n" for token in SPECIALS + list(KEYS) + list(FILLERS))
    with open(folder / "bert_config.json", "w", encoding="utf-8") as f:
        json.dump(TINY_CONFIG, f)
    return {"data_dir": str(folder), "vocab_file": str(folder / "vocab.txt"),
            "bert_config_file": str(folder / "bert_config.json")}


def fast_settings(task, output_dir, **overrides):
    """Settings for a quick run on the synthetic task (about 20 s on 2 cores)."""
    settings = dict(task, output_dir=str(output_dir), max_seq_length=10, train_batch_size=32,
                    eval_batch_size=200, learning_rate=3e-3, num_train_epochs=6,
                    eval_every_steps=100, warmup_proportion=0.1, random_seed=3,
                    log_every_n_steps=1000)
    settings.update(overrides)
    return settings


_TRAINED_RUN = {}


def trained_run(tmp_path_factory):
    """One fine-tuning run (finetune.run_finetune's pair task) from random
    initialisation, shared by every test module of the pytest process (about 20 s).
    Returns (task, run_dir, results, messages). Callers must not modify run_dir."""
    if "run" not in _TRAINED_RUN:
        folder = tmp_path_factory.mktemp("finetune")
        task = write_task(folder / "task")
        messages = []
        # Local import: keeps this helper importable without TensorFlow for task writing.
        from finetune import run_finetune
        results = run_finetune.run(fast_settings(task, folder / "run"), log_fn=messages.append)
        _TRAINED_RUN["run"] = (task, folder / "run", results, messages)
    return _TRAINED_RUN["run"]


def probabilities_sum_tolerance(num_labels):
    """How far the rounded probabilities of one prediction may sum from 1: each is written
    rounded to 6 decimals (5e-7), after a float32 softmax whose normalisation is within
    summation_ulps(num_labels) + ELEMENTWISE_ULPS + 2 ulps of 1 (tests/testutil/float32_bounds.py)."""
    from tests.testutil.float32_bounds import ELEMENTWISE_ULPS, summation_ulps, tolerance  # pylint: disable=import-outside-toplevel
    softmax = tolerance(summation_ulps(num_labels) + ELEMENTWISE_ULPS + 2, 1.0)
    return num_labels * (5e-7 + softmax)


def read_jsonl(path):
    """The objects of a JSON-lines file (e.g. test_predictions.jsonl), in file order."""
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def read_eval_results(path):
    """{key: value as written} of an eval_results.txt (`key = value` lines, sorted)."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    assert lines == sorted(lines), lines
    return dict(line.split(" = ", 1) for line in lines)


def write_random_pretraining_checkpoint(folder, config_dict, features, vocab_file, seed=11):
    """A pretraining checkpoint of the family `config_dict` names, as run_pretraining leaves
    it: every variable of its pretraining graph (built on `features`, a dict of zero/one
    tensors) drawn from N(0, 0.1), global_step 100, bert_config.json and vocab.txt beside
    it. Returns {"dir", "weights": {name: value}}."""
    import numpy as np  # pylint: disable=import-outside-toplevel
    import tensorflow.compat.v1 as tf  # pylint: disable=import-outside-toplevel
    from pretrain.checkpoints import checkpoint_io  # pylint: disable=import-outside-toplevel
    from pretrain.models import registry  # pylint: disable=import-outside-toplevel
    config = registry.config_from_dict(dict(config_dict))
    with tf.Graph().as_default():
        registry.family_of(config).pretraining_losses(config, features(), False)
        shapes = {v.op.name: v.shape.as_list() for v in tf.global_variables()}
    rng = np.random.RandomState(seed)
    weights = {name: rng.normal(0.0, 0.1, size=shape).astype(np.float32)
               for name, shape in shapes.items()}
    checkpoint_io.write_checkpoint(dict(weights, global_step=np.array(100, np.int64)),
                                   str(folder / "model.ckpt-100"), write_state=True)
    (folder / "bert_config.json").write_text(json.dumps(config_dict), encoding="utf-8")
    (folder / "vocab.txt").write_bytes(open(vocab_file, "rb").read())
    return {"dir": folder, "weights": weights}


def xlnet_pretraining_features():
    """Zero features of XLNet's pretraining graph (batch 1, 8 tokens, 2 predictions), for
    write_random_pretraining_checkpoint."""
    import tensorflow.compat.v1 as tf  # pylint: disable=import-outside-toplevel
    made = {name: tf.zeros([1, 8], tf.int32) for name in ("input_ids", "input_mask",
                                                          "segment_ids")}
    made.update(perm_mask=tf.zeros([1, 8, 8]), target_mapping=tf.zeros([1, 2, 8]),
                target_ids=tf.zeros([1, 2], tf.int32), target_weights=tf.ones([1, 2]))
    return made


# ---- the shipped samples (data/sample/tasks) and a tiny model of their characters ----------
SAMPLES = REPO_ROOT / "data" / "sample" / "tasks"
SEQ = 16  # = the tiny config's max_position_embeddings
# Tiny models from random initialisation with bias-corrected AdamW (the default): 1e-2 learns
# the sample tasks in these few steps.
COMMON = dict(max_seq_length=SEQ, train_batch_size=16, eval_batch_size=128, learning_rate=1e-2,
              warmup_proportion=0.1, random_seed=1, log_every_n_steps=1000)


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    """A vocab of every character of the samples (ids in sorted order) and a tiny config."""
    folder = tmp_path_factory.mktemp("model")
    chars = {char for path in SAMPLES.glob("*/*.*") if path.suffix != ".py"
             for char in path.read_text(encoding="utf-8") if not char.isspace()}
    vocab = SPECIALS + sorted(chars)
    (folder / "vocab.txt").write_text("".join(token + "\n" for token in vocab), encoding="utf-8")
    (folder / "bert_config.json").write_text(json.dumps(dict(TINY_CONFIG, vocab_size=len(vocab))),
                                             encoding="utf-8")
    return {"vocab_file": str(folder / "vocab.txt"),
            "bert_config_file": str(folder / "bert_config.json")}


def finetune_from(checkpoint, out, **settings):
    """(results, log) of run_finetune from a pretraining checkpoint fixture (its "dir")."""
    messages = []
    results = run_finetune.run(dict(COMMON, output_dir=str(out), keep_checkpoints=True,
                                    init_checkpoint=str(checkpoint["dir"]), **settings),
                               log_fn=messages.append)
    return results, "\n".join(messages)
