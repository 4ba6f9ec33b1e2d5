"""Exporting fine-tuned models with only --init_checkpoint: a fine-tuning output directory
(bert_config.json, vocab.txt, task.json, checkpoints, best/ with copies of the three files)
-> transformers *ForSequenceClassification / *ForTokenClassification, and -> a TF Serving
SavedModel with probabilities / tag_probabilities and the labels in assets.extra/task.json.

The directories are built here as fine-tuning leaves them: encoder and head
(pretrain.models.task_heads) with random weights, saved from the graph by tf.train.Saver. best/
(step 10) and the last checkpoint (step 20) differ, so an export of the wrong one shows.
The live tests at the end compare with transformers where torch and transformers import:

    PYTHONPATH=.:tests USE_TF=0 /tmp/hfenv/bin/python -m pytest -q tests/pretrain/interop/test_export_finetuned.py
"""
import json
import os
import pathlib
import shutil
import subprocess
import sys
import types

import numpy as np
import pytest
import tensorflow.compat.v1 as tf
from safetensors import safe_open

from tests.testutil.cli_runs import run_main_in_process
from data_gen.text.tokenization import FullTokenizer
from tests.testutil.hf_interop import (assert_log_probs_close, bert_chain, dense_scale, interop_ulps,
                         worst_case_ulps)
from pretrain.checkpoints import checkpoint_io
from pretrain.interop.export_hf import export_model
from pretrain.interop.export_saved_model import export_saved_model
from pretrain.interop.import_hf import import_model
from pretrain.models import registry, task_heads
from pretrain.models.bert.config import BertConfig
from tests.testutil.pretrain_data import tiny_config
from tests.testutil.float32_bounds import assert_close, summation_ulps
from conftest import REPO_ROOT

REPO = REPO_ROOT
VOCAB = REPO / "tests" / "fixtures" / "hf" / "vocab"  # 115 tokens
TINY = dict(vocab_size=115, num_attention_heads=4, intermediate_size=37, initializer_range=0.2)
TEXT = "我是中国人，他说OK！bert10好的。这里没有书"


MAX_SEQ_LENGTH = 12  # the tasks' length, below the models' 32 positions


def _task(task, labels, tag_scheme=None, do_lower_case=True):
    return {"format_version": 1, "task": task, "labels": labels, "tag_scheme": tag_scheme,
            "max_seq_length": MAX_SEQ_LENGTH, "do_lower_case": do_lower_case}


KINDS = {  # kind: (config fields, task.json, transformers architecture)
    "classification": (dict(hidden_act="gelu_exact"),
                       _task("classification", ["neg", "pos", "中性"], do_lower_case=False),
                       "BertForSequenceClassification"),
    "ner": (dict(hidden_act="gelu_exact"),
            _task("ner", ["O", "B-LOC", "I-LOC", "B-PER", "I-PER"], "BIO"),
            "BertForTokenClassification"),
    "pair_albert": (dict(model_type="albert", embedding_size=16, num_hidden_groups=2),
                    _task("pair", ["0", "1"]), "AlbertForSequenceClassification"),
    "ner_albert": (dict(model_type="albert", embedding_size=16),
                   _task("ner", ["O", "S-ORG", "B-ORG", "E-ORG"], "BIOES"),
                   "AlbertForTokenClassification"),
}


def make_finetune_dir(root, kind):
    """A fine-tuning output directory; returns a namespace with dir, config_file, task, head
    ("classifier" | "token_classifier"), best (prefix) and tensors (best's model values)."""
    fields, task, _ = KINDS[kind]
    (root / "best").mkdir(parents=True)
    config_file = tiny_config(root / "bert_config.json", **dict(TINY, **fields))
    shutil.copyfile(VOCAB, root / "vocab.txt")
    (root / "task.json").write_text(json.dumps(task, ensure_ascii=False), encoding="utf-8")
    config = BertConfig.from_json_file(config_file)
    head = "token_classifier" if task["task"] == "ner" else "classifier"
    rng = np.random.RandomState(sum(map(ord, kind)))
    with tf.Graph().as_default():
        model = registry.create_encoder(config, False, tf.placeholder(tf.int32, [None, None]))
        if head == "token_classifier":
            task_heads.get_token_classifier_output(config, model.get_sequence_output(),
                                                   len(task["labels"]), is_training=False)
        else:
            task_heads.get_classifier_output(config, model.get_pooled_output(),
                                             len(task["labels"]), is_training=False)
        variables = tf.global_variables()
        for variable in variables:  # training state a real run leaves
            tf.get_variable(variable.op.name + "/adam_m", variable.shape)
        step = tf.train.get_or_create_global_step()
        saver = tf.train.Saver(save_relative_paths=True)  # as the Estimator's (movable)
        with tf.Session() as session:
            session.run(tf.global_variables_initializer())
            for folder, step_value in ((root / "best", 10), (root, 20)):
                tensors = {}
                for variable in variables:
                    value = rng.normal(0.0, 0.2, variable.shape.as_list()).astype(np.float32)
                    value += 1.0 if variable.op.name.endswith("/gamma") else 0.0
                    variable.load(value, session)
                    tensors[variable.op.name] = value
                step.load(step_value, session)
                prefix = saver.save(session, str(folder / "model.ckpt"), global_step=step)
                if step_value == 10:
                    best, best_tensors = prefix, tensors
    for name in ("bert_config.json", "vocab.txt", "task.json"):
        shutil.copyfile(root / name, root / "best" / name)
    return types.SimpleNamespace(dir=root, config_file=config_file, task=task, head=head,
                                 best=best, tensors=best_tensors)


def our_outputs(model, ids, mask, segments):
    """Our graph on a batch: sequence_output, pooled_output, the head's probabilities
    (probabilities or tag_probabilities) and the logits they come from (logits)."""
    config = BertConfig.from_json_file(model.config_file)
    num_labels = len(model.task["labels"])
    with tf.Graph().as_default():
        encoder = registry.create_encoder(config, False, tf.constant(ids, tf.int32),
                                          input_mask=tf.constant(mask, tf.int32),
                                          token_type_ids=tf.constant(segments, tf.int32))
        fetches = {"sequence_output": encoder.get_sequence_output(),
                   "pooled_output": encoder.get_pooled_output()}
        if model.head == "token_classifier":
            fetches["logits"], fetches["tag_probabilities"] = \
                task_heads.get_token_classifier_output(config, encoder.get_sequence_output(),
                                                       num_labels, is_training=False)
        else:
            fetches["logits"], fetches["probabilities"] = task_heads.get_classifier_output(
                config, encoder.get_pooled_output(), num_labels, is_training=False)
        with tf.Session() as session:
            tf.train.Saver().restore(session, model.best)
            return session.run(fetches)


def head_ulps(model, seq_length, bound=interop_ulps):
    """The bound (hf_interop: interop_ulps against transformers, worst_case_ulps between
    two TF graphs) of the log-probabilities of model's head on [B, seq_length] inputs."""
    return bound(bert_chain(model.config_file, seq_length, model.head,
                            len(model.task["labels"])))


def assert_log_probabilities_close(actual, expected, logits, ulps, what=""):
    """Probabilities compared as their logs (hf_interop.assert_log_probs_close: the bound of
    log-probs, whose chain is the probabilities'), so that one near 0 keeps its relative
    precision."""
    assert_log_probs_close(np.log(actual), np.log(expected), logits, ulps, what)


def sample_batch(seed=0, batch=3, seq=10):
    rng = np.random.RandomState(seed)
    ids = rng.randint(5, 115, size=(batch, seq)).astype(np.int32)
    mask = np.ones_like(ids)
    mask[0, 7:] = 0
    segments = np.zeros_like(ids)
    segments[:, 5:] = 1
    return ids, mask, segments


@pytest.fixture(scope="module")
def finetuned(tmp_path_factory):
    """kind -> its fine-tuning directory (namespace of make_finetune_dir, plus .hf: the
    transformers export made with only init_checkpoint), built once per module."""
    cache = {}

    def build(kind):
        if kind not in cache:
            root = tmp_path_factory.mktemp(kind)
            model = make_finetune_dir(root / "out", kind)
            model.hf = pathlib.Path(export_model(str(model.dir), output_dir=str(root / "hf"),
                                                 log_fn=None))
            cache[kind] = model
        return cache[kind]
    return build


# ---- transformers directory (no torch needed) ------------------------------------------------

@pytest.mark.parametrize("kind", sorted(KINDS))
def test_hf_export_has_the_labels_and_the_best_checkpoints_head(finetuned, kind):
    model = finetuned(kind)
    _, task, architecture = KINDS[kind]
    hf = json.loads((model.hf / "config.json").read_text(encoding="utf-8"))
    labels = task["labels"]
    assert hf["architectures"] == [architecture] and hf["num_labels"] == len(labels)
    assert hf["id2label"] == {str(index): label for index, label in enumerate(labels)}
    assert hf["label2id"] == {label: index for index, label in enumerate(labels)}
    assert ("problem_type" in hf) == (model.head == "classifier")
    tokenizer = json.loads((model.hf / "tokenizer_config.json").read_text())
    assert tokenizer["do_lower_case"] is task["do_lower_case"]
    # transformers truncates where fine-tuning did, not at the 32 positions of the config
    assert tokenizer["model_max_length"] == MAX_SEQ_LENGTH
    assert hf["max_position_embeddings"] == 32
    assert (model.hf / "vocab.txt").read_bytes() == VOCAB.read_bytes()

    prefix = "albert." if "albert" in kind else "bert."
    with safe_open(str(model.hf / "model.safetensors"), "numpy") as weights:
        keys = set(weights.keys())
        # the head's tensors copied into the safetensors file: bit for bit
        np.testing.assert_array_equal(weights.get_tensor("classifier.weight"),
                                      model.tensors[model.head + "/output_weights"])
        np.testing.assert_array_equal(weights.get_tensor("classifier.bias"),
                                      model.tensors[model.head + "/output_bias"])
    assert all(key.startswith((prefix, "classifier.")) for key in keys), sorted(keys)
    token = model.head == "token_classifier"
    # transformers' token classifiers have no pooler: it is left out.
    assert not token == any("pooler" in key for key in keys)
    encoder = [name for name in model.tensors if name.startswith("bert/")
               and not (token and name.startswith("bert/pooler/"))]
    assert len(keys) == len(encoder) + 2


@pytest.mark.parametrize("kind", ["ner", "classification"])
def test_import_hf_round_trips_the_head_and_writes_task_json(finetuned, tmp_path, kind):
    model = finetuned(kind)
    report = import_model(model.hf, tmp_path / "back", log_fn=None)
    task = json.loads((tmp_path / "back" / "task.json").read_text(encoding="utf-8"))
    assert task == dict(model.task, task="ner" if kind == "ner" else "classification",
                        max_seq_length=32) == report.task
    back = checkpoint_io.read_checkpoint(report.checkpoint)
    kept = {name: value for name, value in model.tensors.items()
            if not (kind == "ner" and name.startswith("bert/pooler/"))}
    assert sorted(back) == sorted(kept)
    assert all(np.array_equal(back[name], value)  # copied both ways: bit for bit
               for name, value in kept.items())
    heads = ["MLM head (cls/predictions/*)", "sentence head (cls/seq_relationship/*)"]
    assert report.conversion.fresh == (["pooler (bert/pooler/dense)"] if kind == "ner"
                                       else []) + heads


# ---- SavedModel ------------------------------------------------------------------------------

def load_and_serve(export_dir, ids, mask, segments):
    """serving_default run through the TF1 loader in a fresh graph: {output: ndarray}."""
    with tf.Graph().as_default(), tf.Session() as session:
        meta_graph = tf.saved_model.loader.load(session, ["serve"], str(export_dir))
        signature = meta_graph.signature_def["serving_default"]
        feeds = {signature.inputs[name].name: value for name, value in
                 (("input_ids", ids), ("input_mask", mask), ("segment_ids", segments))}
        return session.run({name: info.name for name, info in signature.outputs.items()}, feeds)


@pytest.mark.parametrize("kind,head_output", [("classification", "probabilities"),
                                              ("ner_albert", "tag_probabilities")])
def test_saved_model_serves_our_probabilities_and_carries_the_labels(finetuned, tmp_path, kind,
                                                                     head_output):
    """Kernel-path sensitive: the SavedModel's graph (placeholders, the serving signature)
    is not our_outputs' graph, so the two agree to the bound of two summation orders."""
    model = finetuned(kind)
    export_dir = export_saved_model(str(model.dir), output_dir=str(tmp_path / "export"))
    extra = pathlib.Path(export_dir) / "assets.extra"
    assert json.loads((extra / "task.json").read_text(encoding="utf-8")) == model.task
    assert (extra / "vocab.txt").read_bytes() == VOCAB.read_bytes()
    batch = sample_batch()
    served = load_and_serve(export_dir, *batch)
    ours = our_outputs(model, *batch)
    assert sorted(served) == sorted([head_output, "pooled_output", "sequence_output"])
    num_labels = len(model.task["labels"])
    expected_shape = (3, num_labels) if head_output == "probabilities" else (3, 10, num_labels)
    assert served[head_output].shape == expected_shape
    length = batch[0].shape[1]
    # two TF graphs (case 2, at its worst): the encoder's outputs, and the head's
    # probabilities as their logs (which move as the logits do). Past the pooler and the
    # head, in ulps of their sums of |terms| (hf_interop.dense_scale: the N(0, 0.2)
    # weights, 32 wide, multiply their inputs' errors by ~5)
    sequence = np.abs(ours["sequence_output"]).max()
    assert_close(served["sequence_output"], ours["sequence_output"],
                 worst_case_ulps(bert_chain(model.config_file, length)), err_msg="sequence")
    pooler = dense_scale(sequence, model.tensors["bert/pooler/dense/kernel"],
                         model.tensors["bert/pooler/dense/bias"])
    assert_close(served["pooled_output"], ours["pooled_output"],
                 worst_case_ulps(bert_chain(model.config_file, length, "pooled")), scale=pooler,
                 err_msg="pooled")
    head = dense_scale(pooler if model.head == "classifier" else sequence,
                       model.tensors[model.head + "/output_weights"].T,
                       model.tensors[model.head + "/output_bias"])
    assert_close(np.log(served[head_output]), np.log(ours[head_output]),
                 head_ulps(model, length, worst_case_ulps), scale=head,
                 err_msg="log %s" % head_output)
    # softmax multiplies each exp by the reciprocal of their sum, NumPy sums the products:
    # two sums of num_labels terms, the reciprocal and the product, in ulps of 1 (the exps'
    # own error cancels in the ratio)
    assert_close(served[head_output].sum(-1), 1.0, summation_ulps(num_labels, num_labels) + 2,
                 err_msg="sum of %s" % head_output)


# ---- command lines ---------------------------------------------------------------------------

def _cli(module, *flags):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(REPO)] + [p for p in [os.environ.get("PYTHONPATH")] if p]))
    return subprocess.run([sys.executable, "-m", module, *flags], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=600)


def _error_line(module, *flags):
    """The one `error:` line of `module`'s refusal, its main() run in this process (the tools
    as subprocesses: test_cli_exports_with_only_init_checkpoint, tests/test_cli_failures.py)."""
    code, _, stderr, _ = run_main_in_process(module, list(flags), REPO)
    assert code == 2, stderr
    assert "Traceback" not in stderr
    errors = [line for line in stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1, stderr
    return errors[0]


def test_cli_exports_with_only_init_checkpoint(finetuned, tmp_path):
    model = finetuned("ner")
    done = _cli("pretrain.interop.export_hf", "--init_checkpoint=%s" % model.dir,
                "--output_dir=%s" % (tmp_path / "hf"))
    assert done.returncode == 0, done.stderr
    printed = done.stdout
    assert "(BertForTokenClassification)" in printed and model.best in printed
    assert "labels ['O', 'B-LOC', 'I-LOC', 'B-PER', 'I-PER']" in printed
    assert "not converted: bert/pooler/dense/kernel (pooler; transformers' token classifier " \
           "has none)" in printed
    for name in ("config.json", "model.safetensors", "vocab.txt"):
        assert (tmp_path / "hf" / name).read_bytes() == (model.hf / name).read_bytes(), name


def test_cli_error_lines_name_what_is_missing(finetuned, tmp_path):
    model = finetuned("classification")
    bare = tmp_path / "bare"  # a checkpoint without its files
    checkpoint_io.write_checkpoint(model.tensors, str(bare / "model.ckpt"), write_state=True)
    no_config = "error: no model config: --init_checkpoint=%s has no bert_config.json beside " \
                "it (looked in %s); pass --bert_config_file" % (bare, bare)
    for module in ("pretrain.interop.export_hf", "pretrain.interop.export_saved_model"):
        assert _error_line(module, "--init_checkpoint=%s" % bare,
                           "--output_dir=%s" % (tmp_path / "out")) == no_config
    shutil.copyfile(model.config_file, bare / "bert_config.json")
    assert _error_line("pretrain.interop.export_hf", "--init_checkpoint=%s" % bare,
                       "--output_dir=%s" % (tmp_path / "out")) == (
        "error: no vocab: --init_checkpoint=%s has no vocab.txt beside it (looked in %s); "
        "pass --vocab_file" % (bare, bare))

    tokens = VOCAB.read_text(encoding="utf-8").split("\n")
    other = tmp_path / "other.txt"
    other.write_text("\n".join(tokens[:7] + [tokens[8], tokens[7]] + tokens[9:]),
                     encoding="utf-8")
    line = _error_line("pretrain.interop.export_hf", "--init_checkpoint=%s" % model.dir,
                       "--vocab_file=%s" % other, "--output_dir=%s" % (tmp_path / "out"))
    assert line.startswith("error: --vocab_file=%s is not the vocab checkpoint %s was trained "
                           "with: it differs from %s at line 8 " % (
                               other, model.best, model.dir / "best" / "vocab.txt"))
    assert line.endswith("Drop --vocab_file to use the checkpoint's vocab, or pass the vocab "
                         "it was trained with")

    wrong = tmp_path / "wrong"
    shutil.copytree(model.dir, wrong)
    (wrong / "best" / "task.json").write_text(json.dumps(dict(model.task, labels=["a", "b"])))
    assert _error_line("pretrain.interop.export_saved_model", "--init_checkpoint=%s" % wrong,
                       "--output_dir=%s" % (tmp_path / "out")) == (
        "error: %s lists 2 labels but the head classifier/output_weights of checkpoint %s has "
        "3 outputs; pass the checkpoint fine-tuning wrote beside this task.json"
        % (wrong / "best" / "task.json", wrong / "best" / "model.ckpt-10"))
    assert not (tmp_path / "out").exists()


def test_a_task_json_with_an_unusable_max_seq_length_is_refused(finetuned, tmp_path):
    model = finetuned("classification")
    wrong = tmp_path / "wrong"
    shutil.copytree(model.dir, wrong)
    (wrong / "best" / "task.json").write_text(json.dumps(dict(model.task, max_seq_length="64")))
    assert _error_line("pretrain.interop.export_hf", "--init_checkpoint=%s" % wrong,
                       "--output_dir=%s" % (tmp_path / "out")) == (
        "error: %s: max_seq_length '64' is not an integer of at least 2; it is written by "
        "fine-tuning (fix or delete it)" % (wrong / "best" / "task.json"))


# ---- live: transformers' tokenizer (no torch needed) -----------------------------------------

@pytest.mark.parametrize("kind, texts", [("classification", [TEXT * 2]),
                                         ("pair_albert", [TEXT, TEXT[::-1]])])
def test_live_default_tokenisation_truncates_where_fine_tuning_did(finetuned, kind, texts):
    """transformers' AutoTokenizer at its defaults (truncation=True) on inputs longer than
    the task's max_seq_length gives the ids fine-tuning computed from the same text
    (finetune.tasks.classification.encode_texts: Google's longest-first pair truncation)."""
    os.environ.setdefault("USE_TF", "0")
    os.environ.setdefault("USE_TORCH", "0")
    transformers = pytest.importorskip(
        "transformers", reason="transformers is not importable: the live tokenizer test needs it")
    from finetune.tasks.classification import encode_texts
    model = finetuned(kind)
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(model.hf))
    assert tokenizer.model_max_length == MAX_SEQ_LENGTH
    theirs = tokenizer(*texts, truncation=True)
    ours = FullTokenizer(str(VOCAB), do_lower_case=model.task["do_lower_case"])
    ids, mask, segments, truncated = encode_texts(texts, ours, MAX_SEQ_LENGTH)
    assert truncated and len(theirs["input_ids"]) == MAX_SEQ_LENGTH == sum(mask)
    assert theirs["input_ids"] == ids and theirs["token_type_ids"] == segments


# ---- live: transformers' own models and pipelines --------------------------------------------

SKIP_REASON = ("%s is not importable: the live transformers tests need torch and "
               "transformers")


@pytest.fixture(scope="module")
def hf():
    torch = pytest.importorskip("torch", reason=SKIP_REASON % "torch")
    os.environ.setdefault("USE_TF", "0")
    transformers = pytest.importorskip("transformers", reason=SKIP_REASON % "transformers")
    transformers.logging.set_verbosity_error()
    return types.SimpleNamespace(torch=torch, T=transformers)


def _text_ids(text, do_lower_case):
    """[CLS] text [SEP] ids from our FullTokenizer as a batch of one (ids, mask, segments)."""
    tokenizer = FullTokenizer(str(VOCAB), do_lower_case=do_lower_case)
    ids = tokenizer.convert_tokens_to_ids(["[CLS]"] + tokenizer.tokenize(text) + ["[SEP]"])
    ids = np.array([ids], np.int32)
    return ids, np.ones_like(ids), np.zeros_like(ids)


def _torch_probabilities(hf, loaded, ids, mask, segments):
    as_long = lambda array: hf.torch.tensor(np.asarray(array), dtype=hf.torch.long)  # noqa: E731
    with hf.torch.no_grad():
        logits = loaded.eval()(input_ids=as_long(ids), attention_mask=as_long(mask),
                               token_type_ids=as_long(segments)).logits
    return hf.torch.softmax(logits, -1).numpy()


@pytest.mark.parametrize("kind", ["classification", "pair_albert"])
def test_live_sequence_classifier_gives_our_labels_and_probabilities(hf, finetuned, kind):
    """Kernel-path sensitive: transformers' probabilities against ours, to the bound of two
    libraries' float32 evaluations (hf_interop.interop_ulps)."""
    model = finetuned(kind)
    loaded, info = hf.T.AutoModelForSequenceClassification.from_pretrained(
        str(model.hf), output_loading_info=True)
    assert not any(info.values()), info
    assert type(loaded).__name__ == KINDS[kind][2]
    labels = model.task["labels"]
    assert loaded.config.id2label == dict(enumerate(labels))
    batch = sample_batch(seed=3)
    ours = our_outputs(model, *batch)
    assert_log_probabilities_close(_torch_probabilities(hf, loaded, *batch),
                                   ours["probabilities"], ours["logits"],
                                   head_ulps(model, batch[0].shape[1]), "probabilities")

    text = _text_ids(TEXT, model.task["do_lower_case"])  # task.json's casing travelled
    ours = our_outputs(model, *text)
    classify = hf.T.pipeline("text-classification", model=str(model.hf))
    assert classify.tokenizer(TEXT)["input_ids"] == text[0][0].tolist()
    top = classify(TEXT, top_k=None)
    assert {item["label"] for item in top} == set(labels)
    scores = [item["score"] for item in top]
    assert_log_probabilities_close(scores, [ours["probabilities"][0][labels.index(
        item["label"])] for item in top], ours["logits"], head_ulps(model, text[0].shape[1]),
                                   "pipeline scores")
    assert classify(TEXT)[0]["label"] == labels[int(np.argmax(ours["probabilities"][0]))]


@pytest.mark.parametrize("kind", ["ner", "ner_albert"])
def test_live_token_classifier_gives_our_tags_and_probabilities(hf, finetuned, kind):
    """Kernel-path sensitive: transformers' probabilities against ours, to the bound of two
    libraries' float32 evaluations (hf_interop.interop_ulps)."""
    model = finetuned(kind)
    loaded, info = hf.T.AutoModelForTokenClassification.from_pretrained(
        str(model.hf), output_loading_info=True)
    assert not any(info.values()), info
    assert type(loaded).__name__ == KINDS[kind][2]
    labels = model.task["labels"]
    assert loaded.config.id2label == dict(enumerate(labels))
    ids, mask, segments = sample_batch(seed=4)
    real = mask == 1
    ours = our_outputs(model, ids, mask, segments)
    assert_log_probabilities_close(_torch_probabilities(hf, loaded, ids, mask, segments)[real],
                                   ours["tag_probabilities"][real], ours["logits"][real],
                                   head_ulps(model, ids.shape[1]), "tag probabilities")

    text = _text_ids(TEXT, True)
    ours_text = our_outputs(model, *text)
    ours = ours_text["tag_probabilities"][0]
    tagged = hf.T.pipeline("token-classification", model=str(model.hf))(TEXT)
    # The pipeline leaves out "O" and [CLS]/[SEP]; every other token is listed with its
    # most probable tag and that tag's probability.
    expected = {index: labels[int(np.argmax(ours[index]))] for index in range(1, len(ours) - 1)
                if labels[int(np.argmax(ours[index]))] != "O"}
    assert expected and {item["index"]: item["entity"] for item in tagged} == expected
    assert_log_probabilities_close([item["score"] for item in tagged],
                                   [ours[item["index"]].max() for item in tagged],
                                   ours_text["logits"], head_ulps(model, text[0].shape[1]),
                                   "pipeline scores")
