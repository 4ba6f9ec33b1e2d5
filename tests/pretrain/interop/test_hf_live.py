"""Live interop against transformers' own code; every test skips without torch/transformers.

Both directions run in one process: our tools through their CLIs
(`pretrain.interop.import_hf`, `pretrain.interop.export_hf`), our numbers from our TF graph
(hf_interop, pretrain.models.heads, pretrain.models.task_heads), transformers' numbers from
its models (eval mode, float32). Outputs must agree to the bound of two libraries' float32
evaluations of the model's longest chain (hf_interop.interop_ulps: 135-255 ulps of the
compared magnitude here, the logits' for log-probs); the other GELU moves the MLM log-probs
6x-18x that bound. Every such comparison is kernel-path sensitive (oneDNN or Eigen on our
side).

    PYTHONPATH=.:tests USE_TF=0 /tmp/hfenv/bin/python -m pytest -q tests/pretrain/interop/test_hf_live.py
"""
import os
import shutil
import subprocess
import sys
import types

import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from data_gen.text.tokenization import FullTokenizer
from tests.testutil.hf_interop import (assert_log_probs_close, bert_chain, hf,  # noqa: F401  (hf: fixture)
                         interop_ulps, log_softmax_bound, logits_of, model_outputs,
                         random_checkpoint)
from pretrain import run_pretraining
from pretrain.checkpoints import checkpoint_io
from pretrain.models import heads, registry, task_heads
from pretrain.models.bert.config import BertConfig
from tests.testutil.pretrain_data import make_examples, rename_slots_to_legacy, tiny_config, write_records
from tests.testutil.float32_bounds import assert_close, tolerance
from conftest import REPO_ROOT

REPO = REPO_ROOT
VOCAB = REPO / "tests" / "fixtures" / "hf" / "vocab"  # 115 tokens, [MASK] = 4
SEQ = 12  # _batch() is [2, 12]
TINY = dict(vocab_size=115, num_attention_heads=4, intermediate_size=37, initializer_range=0.2)
SHAPE_FIELDS = ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
                "intermediate_size", "max_position_embeddings", "type_vocab_size",
                "initializer_range")
ALBERT_FIELDS = ("embedding_size", "num_hidden_groups", "inner_group_num")
# Upper-case ASCII (OK -> ok), a WordPiece split (bert10 -> bert ##1 ##0) and [UNK]s
# (，！。书 are not in the vocab).
TEXT = "我是中国人，他说OK！bert10好的。这里没有书"
FILL_MASK_TEXT = "我是中[MASK]人"
PAIR = ("他说ok好的", "你在这里")
# ---- our side -------------------------------------------------------------------------------

def _cli(module, **flags):
    """Runs `python -m module --flag=value ...`; returns its output (asserts exit 0)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(REPO)] + [p for p in [os.environ.get("PYTHONPATH")] if p]))
    args = [sys.executable, "-m", module] + ["--%s=%s" % item for item in flags.items()]
    done = subprocess.run(args, cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, "%s failed:\n%s\n%s" % (module, done.stdout, done.stderr)
    return done.stdout + done.stderr


def _our_ids(text, vocab=VOCAB):
    """[CLS] tokens [SEP] ids from our FullTokenizer; "[MASK]" in text is the mask token."""
    tokenizer = FullTokenizer(vocab, do_lower_case=True)
    tokens = []
    for index, part in enumerate(text.split("[MASK]")):
        tokens += (["[MASK]"] if index else []) + tokenizer.tokenize(part)
    return tokenizer.convert_tokens_to_ids(["[CLS]"] + tokens + ["[SEP]"])


def _batch():
    """input_ids, attention_mask, token_type_ids int32 [2, 12]: row 0 FILL_MASK_TEXT (padded),
    row 1 the sentence pair PAIR."""
    first, second = _our_ids(PAIR[0]), _our_ids(PAIR[1])[1:]
    rows = [_our_ids(FILL_MASK_TEXT), first + second]
    ids = np.zeros([2, 12], np.int32)
    mask, segments = np.zeros_like(ids), np.zeros_like(ids)
    for row, tokens in enumerate(rows):
        ids[row, :len(tokens)], mask[row, :len(tokens)] = tokens, 1
    segments[1, len(first):len(first) + len(second)] = 1
    return ids, mask, segments


def _our_sentence_log_probs(config_file, checkpoint, pooled):
    """(NSP/SOP log-probs [B, 2], their logits [B, 2]) of our sentence head
    (pretrain.models.heads) on pooled [B, H]."""
    config = BertConfig.from_json_file(config_file)
    with tf.Graph().as_default():
        _, _, log_probs = heads.get_sentence_output(config, tf.constant(pooled),
                                                    tf.zeros([len(pooled)], tf.int32))
        saver = tf.train.Saver(tf.global_variables())
        with tf.Session() as session:
            saver.restore(session, checkpoint)
            return session.run([log_probs, logits_of(log_probs)])


def _our_encoder_outputs(config_file, checkpoint, ids, mask, segments):
    """(sequence_output [B, S, H], pooled_output [B, H]) of our encoder alone."""
    config = BertConfig.from_json_file(config_file)
    with tf.Graph().as_default():
        model = registry.create_encoder(config, False, tf.constant(ids),
                                        input_mask=tf.constant(mask),
                                        token_type_ids=tf.constant(segments))
        saver = tf.train.Saver(tf.global_variables())
        with tf.Session() as session:
            saver.restore(session, checkpoint)
            return session.run([model.get_sequence_output(), model.get_pooled_output()])


def _classifier_checkpoint(config_file, prefix, ids, mask, segments, seed=0):
    """A fine-tuned-classifier-like checkpoint (encoder + pretrain.models.task_heads'
    classifier) with random values (plus global_step); returns (model tensors {name: array},
    probabilities [B, 2], logits [B, 2])."""
    config = BertConfig.from_json_file(config_file)
    rng = np.random.RandomState(seed)
    with tf.Graph().as_default():
        model = registry.create_encoder(config, False, tf.constant(ids),
                                        input_mask=tf.constant(mask),
                                        token_type_ids=tf.constant(segments))
        logits, probabilities = task_heads.get_classifier_output(
            config, model.get_pooled_output(), 2, is_training=False)
        model_variables = tf.global_variables()
        tf.train.get_or_create_global_step()
        with tf.Session() as session:
            session.run(tf.global_variables_initializer())
            tensors = {}
            for variable in model_variables:
                value = rng.normal(0.0, 0.2, variable.shape.as_list()).astype(np.float32)
                value += 1.0 if variable.op.name.endswith("/gamma") else 0.0
                session.run(variable.assign(value))
                tensors[variable.op.name] = value
            tf.train.Saver().save(session, prefix)
            return (tensors,) + tuple(session.run([probabilities, logits]))


def _pretrain(tmp_path, fields, optimizer, mode):
    """3 steps of run_pretraining on tiny data; returns (bert_config.json, checkpoint prefix)."""
    config_file = tiny_config(tmp_path / "bert_config.json", **dict(TINY, **fields))
    data = write_records(tmp_path / "data.tfrecord", make_examples(8, seed=3), mode=mode,
                         vocab_size=115)
    out = str(tmp_path / "run")
    run_pretraining.run(dict(
        bert_config_file=config_file, input_file=data, output_dir=out, do_train=True,
        max_seq_length=16, max_predictions_per_seq=4, train_batch_size=8, learning_rate=1e-2,
        num_train_steps=3, num_warmup_steps=0, optimizer=optimizer, save_checkpoints_steps=1000,
        random_seed=1, shuffle_buffer=0))
    return config_file, tf.train.latest_checkpoint(out)


# ---- transformers' side ----------------------------------------------------------------------

def _hf_config(hf, config_file, **overrides):
    """transformers BertConfig / AlbertConfig with the shapes of our bert_config.json."""
    ours = BertConfig.from_json_file(config_file)
    fields = {name: getattr(ours, name) for name in SHAPE_FIELDS}
    if ours.is_albert:
        fields.update({name: getattr(ours, name) for name in ALBERT_FIELDS})
    config_class = hf.T.AlbertConfig if ours.is_albert else hf.T.BertConfig
    return config_class(**dict(fields, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
                               **overrides))


def _torch_log_probs(hf, model, ids, mask, segments):
    """{output name: log_softmax [.., C]} of every *logits output of a transformers model."""
    model.eval()
    as_long = lambda array: hf.torch.tensor(np.asarray(array), dtype=hf.torch.long)  # noqa: E731
    with hf.torch.no_grad():
        out = model(input_ids=as_long(ids), attention_mask=as_long(mask),
                    token_type_ids=as_long(segments))
    return {name: hf.torch.log_softmax(value, -1).numpy() for name, value in out.items()
            if name.endswith("logits")}


def _random_torch_model(hf, model_class, config, seed=0):
    """transformers model with every parameter perturbed (biases, LayerNorm and heads included),
    so a dropped, swapped or untransposed tensor changes the outputs."""
    hf.torch.manual_seed(seed)
    model = model_class(config)
    with hf.torch.no_grad():
        for parameter in model.parameters():  # tied parameters come once
            parameter.add_(hf.torch.randn_like(parameter) * 0.1)
    return model.eval()


def _close(actual, expected, what, config_file, output, logits=None):
    """actual against expected to the bound of our graph against transformers'
    (hf_interop.interop_ulps) on `output`'s chain (hf_interop.bert_chain); log-probs,
    given their logits (either side's), as hf_interop.log_softmax_bound says."""
    ulps = interop_ulps(bert_chain(config_file, SEQ, output))
    if logits is None:
        assert_close(actual, expected, ulps, err_msg=what)
    else:
        assert_log_probs_close(actual, expected, logits, ulps, what)


def _check_tokenizer(hf, directory):
    """AutoTokenizer gives the ids our FullTokenizer gives on the exported vocab.txt."""
    tokenizer = hf.T.AutoTokenizer.from_pretrained(str(directory))
    ours = _our_ids(TEXT, directory / "vocab.txt")
    assert {1, 107, 113} <= set(ours)  # [UNK], "ok" (from "OK"), "##1": the text tests them
    assert tokenizer(TEXT)["input_ids"] == ours


# ---- 1. transformers' TF1 loader reads what run_pretraining writes ---------------------------

LOADERS = {  # arch: (our config fields, optimizer, data mode, the optimizer's old slot name)
    "bert": (dict(hidden_act="gelu"), "adamw", "bert", "AdamWeightDecay"),
    "albert": (dict(model_type="albert", embedding_size=16, hidden_act="gelu"), "lamb", "albert",
               "Lamb"),
}


@pytest.mark.parametrize("arch", sorted(LOADERS))
def test_transformers_tf_loader_reads_run_pretraining_checkpoints(hf, tmp_path, arch):
    """Kernel-path sensitive: our numbers against transformers', to the bound of two
    libraries' float32 evaluations (hf_interop.interop_ulps)."""
    fields, optimizer, mode, legacy_slot = LOADERS[arch]
    config_file, checkpoint = _pretrain(tmp_path, fields, optimizer, mode)
    names = [name for name, _ in tf.train.list_variables(checkpoint)]
    assert "bert/pooler/dense/kernel/adam_m" in names and "bert/pooler/dense/kernel/adam_v" in names
    ids, mask, segments = _batch()
    ours = model_outputs(config_file, checkpoint, ids, mask, segments)
    ours_sentence, sentence_logits = _our_sentence_log_probs(config_file, checkpoint,
                                                             ours["pooled_output"])
    module = getattr(hf.T.models, arch)
    model_class = getattr(module, "%sForPreTraining" % arch.capitalize())
    loader = getattr(module, "load_tf_weights_in_%s" % arch)

    def load(hidden_act):
        model = model_class(_hf_config(hf, config_file, hidden_act=hidden_act))
        return loader(model, model.config, checkpoint)

    theirs = _torch_log_probs(hf, load("gelu_new"), ids, mask, segments)
    _close(theirs["prediction_logits"], ours["mlm_log_probs"], "MLM log-probs", config_file,
           "mlm", ours["mlm_logits"])
    sentence = "seq_relationship_logits" if arch == "bert" else "sop_logits"
    _close(theirs[sentence], ours_sentence, "sentence log-probs", config_file, "sentence",
           sentence_logits)
    # The bound tells the two GELUs apart, by far: our "gelu" is transformers' "gelu_new".
    erf = _torch_log_probs(hf, load("gelu"), ids, mask, segments)["prediction_logits"]
    bound = tolerance(*log_softmax_bound(interop_ulps(bert_chain(config_file, SEQ, "mlm")),
                                         ours["mlm_log_probs"], ours["mlm_logits"]))
    assert np.abs(erf - ours["mlm_log_probs"]).max() > 4 * bound

    # The bug of issue #11: the old slot names (<var>/AdamWeightDecay, _1 or <var>/Lamb, _1)
    # break transformers' loader, which skips only Google's adam_m / adam_v.
    rename_slots_to_legacy(str(tmp_path / "run"), legacy_slot)
    with pytest.raises(AttributeError, match="'Embedding' object has no attribute 'shape'"):
        load("gelu_new")


# ---- 2. export: our checkpoints in transformers ----------------------------------------------

EXPORTS = {  # kind: (our config fields, checkpoint prefixes left out)
    "bert_gelu": (dict(hidden_act="gelu"), ()),
    "bert_gelu_exact": (dict(hidden_act="gelu_exact"), ("cls/seq_relationship/",)),  # roberta-mode
    "albert_google": (dict(model_type="albert", embedding_size=16, num_hidden_layers=4,
                           num_hidden_groups=2, inner_group_num=2), ()),
    "albert_brightmart": (dict(model_type="albert", albert_layout="brightmart", embedding_size=16,
                               sharing="all"), ()),
    "classifier": (dict(hidden_act="gelu_exact"), None),  # encoder + task_heads classifier
}
# Exported tensors *ForMaskedLM has no place for (it reports them as unexpected).
PRETRAINING_ONLY_KEYS = {"bert.pooler.dense.weight", "bert.pooler.dense.bias",
                         "albert.pooler.weight", "albert.pooler.bias",
                         "cls.seq_relationship.weight", "cls.seq_relationship.bias",
                         "sop_classifier.classifier.weight", "sop_classifier.classifier.bias"}


@pytest.fixture(scope="module")
def exported(hf, tmp_path_factory):
    """kind -> namespace(config, checkpoint, tensors, dir[, probabilities]), exported by the CLI
    once per module."""
    cache = {}

    def export(kind):
        if kind not in cache:
            fields, skip = EXPORTS[kind]
            root = tmp_path_factory.mktemp(kind)
            config_file = tiny_config(root / "bert_config.json", **dict(TINY, **fields))
            prefix = str(root / "ckpt" / "model.ckpt-7")
            result = types.SimpleNamespace(config=config_file, checkpoint=prefix,
                                           dir=root / "hf")
            if skip is None:
                os.makedirs(os.path.dirname(prefix))
                result.tensors, result.probabilities, result.logits = _classifier_checkpoint(
                    config_file, prefix, *_batch())
            else:
                result.tensors = random_checkpoint(config_file, prefix, seed=1, skip=skip)
            _cli("pretrain.interop.export_hf", init_checkpoint=root / "ckpt",
                 bert_config_file=config_file, vocab_file=VOCAB, output_dir=result.dir)
            cache[kind] = result
        return cache[kind]
    return export


@pytest.mark.parametrize("kind", ["bert_gelu", "bert_gelu_exact", "albert_google",
                                  "albert_brightmart"])
def test_exported_model_loads_in_transformers_with_our_numbers(hf, exported, kind):
    """Kernel-path sensitive: our numbers against transformers', to the bound of two
    libraries' float32 evaluations (hf_interop.interop_ulps)."""
    model = exported(kind)
    ids, mask, segments = _batch()
    ours = model_outputs(model.config, model.checkpoint, ids, mask, segments)
    has_sentence_head = "cls/seq_relationship/output_bias" in model.tensors

    pretraining, info = hf.T.AutoModelForPreTraining.from_pretrained(
        str(model.dir), output_loading_info=True)
    expected_missing = set() if has_sentence_head else {"cls.seq_relationship.weight",
                                                        "cls.seq_relationship.bias"}
    assert set(info["missing_keys"]) == expected_missing, info
    assert not info["unexpected_keys"] and not info["mismatched_keys"], info
    theirs = _torch_log_probs(hf, pretraining, ids, mask, segments)
    _close(theirs["prediction_logits"], ours["mlm_log_probs"], "ForPreTraining MLM",
           model.config, "mlm", ours["mlm_logits"])
    if has_sentence_head:
        sentence = [name for name in theirs if name != "prediction_logits"][0]
        log_probs, logits = _our_sentence_log_probs(model.config, model.checkpoint,
                                                    ours["pooled_output"])
        _close(theirs[sentence], log_probs, "sentence head", model.config, "sentence", logits)

    masked_lm, info = hf.T.AutoModelForMaskedLM.from_pretrained(
        str(model.dir), output_loading_info=True)
    assert not info["missing_keys"] and not info["mismatched_keys"], info
    assert set(info["unexpected_keys"]) <= PRETRAINING_ONLY_KEYS, info
    _close(_torch_log_probs(hf, masked_lm, ids, mask, segments)["logits"], ours["mlm_log_probs"],
           "ForMaskedLM", model.config, "mlm", ours["mlm_logits"])

    _check_tokenizer(hf, model.dir)
    predictions = hf.T.pipeline("fill-mask", model=str(model.dir))(FILL_MASK_TEXT)
    position = list(ids[0]).index(4)  # [MASK]
    ours_at_mask = ours["mlm_log_probs"][0, position]
    assert predictions[0]["token"] == int(np.argmax(ours_at_mask))
    # the pipeline's probabilities as log-probs (the pipeline runs [1, 7]: a shorter chain)
    _close(np.log([p["score"] for p in predictions]),
           np.sort(ours_at_mask)[::-1][:len(predictions)], "fill-mask scores", model.config,
           "mlm", ours["mlm_logits"][0, position])


def test_exported_classifier_is_a_transformers_sequence_classifier(hf, exported):
    """Kernel-path sensitive: our numbers against transformers', to the bound of two
    libraries' float32 evaluations (hf_interop.interop_ulps)."""
    model = exported("classifier")
    ids, mask, segments = _batch()
    loaded, info = hf.T.AutoModelForSequenceClassification.from_pretrained(
        str(model.dir), output_loading_info=True)
    assert not any(info.values()), info
    assert type(loaded).__name__ == "BertForSequenceClassification"
    assert loaded.config.num_labels == 2 and loaded.config.id2label == {0: "0", 1: "1"}
    log_probs = _torch_log_probs(hf, loaded, ids, mask, segments)["logits"]
    # the probabilities as log-probs: each keeps its relative precision
    _close(log_probs, np.log(model.probabilities), "classifier log-probs", model.config,
           "classifier", model.logits)
    _check_tokenizer(hf, model.dir)


# ---- 3. import: transformers' models in our toolkit ------------------------------------------

IMPORTS = {  # arch: (our config fields for the shapes, transformers hidden_act, ours expected)
    "bert": (dict(hidden_act="gelu"), "gelu", "gelu_exact"),
    "albert": (dict(model_type="albert", embedding_size=16, num_hidden_groups=2,
                    hidden_act="gelu"), "gelu_new", "gelu"),
}


@pytest.mark.parametrize("arch", sorted(IMPORTS))
def test_transformers_model_imports_with_its_numbers(hf, tmp_path, arch):
    """Kernel-path sensitive: our numbers against transformers', to the bound of two
    libraries' float32 evaluations (hf_interop.interop_ulps)."""
    fields, hf_act, our_act = IMPORTS[arch]
    shapes = tiny_config(tmp_path / "shapes.json", **dict(TINY, **fields))
    model_class = getattr(hf.T, "%sForPreTraining" % arch.capitalize())
    torch_model = _random_torch_model(hf, model_class, _hf_config(hf, shapes, hidden_act=hf_act))
    ids, mask, segments = _batch()
    theirs = _torch_log_probs(hf, torch_model, ids, mask, segments)
    imported = {}
    for weights, safe in (("model.safetensors", True), ("pytorch_model.bin", False)):
        source, out = tmp_path / ("hf_" + weights), tmp_path / ("ours_" + weights)
        torch_model.save_pretrained(str(source), safe_serialization=safe)
        shutil.copyfile(VOCAB, source / "vocab.txt")
        assert (source / weights).is_file()
        printed = _cli("pretrain.interop.import_hf", model_dir=source, output_dir=out)
        assert "starts fresh" not in printed, printed
        imported[weights] = checkpoint_io.read_checkpoint(str(out / "model.ckpt"))
    first, second = imported.values()
    assert sorted(first) == sorted(second)
    # the same tensors read from two files: bit for bit
    assert all(np.array_equal(first[name], second[name]) for name in first)

    config_file, checkpoint = str(out / "bert_config.json"), str(out / "model.ckpt")  # either
    assert BertConfig.from_json_file(config_file).hidden_act == our_act
    ours = model_outputs(config_file, checkpoint, ids, mask, segments)
    _close(ours["mlm_log_probs"], theirs["prediction_logits"], "MLM log-probs", config_file,
           "mlm", ours["mlm_logits"])
    sentence = "seq_relationship_logits" if arch == "bert" else "sop_logits"
    log_probs, logits = _our_sentence_log_probs(config_file, checkpoint, ours["pooled_output"])
    _close(log_probs, theirs[sentence], "sentence log-probs", config_file, "sentence", logits)


def test_bert_model_without_heads_imports_with_fresh_heads(hf, tmp_path):
    """Kernel-path sensitive: our numbers against transformers', to the bound of two
    libraries' float32 evaluations (hf_interop.interop_ulps)."""
    shapes = tiny_config(tmp_path / "shapes.json", **TINY)
    torch_model = _random_torch_model(hf, hf.T.BertModel, _hf_config(hf, shapes, hidden_act="gelu"))
    torch_model.save_pretrained(str(tmp_path / "hf"))
    shutil.copyfile(VOCAB, tmp_path / "hf" / "vocab.txt")
    printed = _cli("pretrain.interop.import_hf", model_dir=tmp_path / "hf",
                   output_dir=tmp_path / "ours")
    assert "starts fresh: MLM head" in printed and "starts fresh: sentence head" in printed
    assert "starts fresh: pooler" not in printed, printed
    names = {name for name, _ in tf.train.list_variables(str(tmp_path / "ours" / "model.ckpt"))}
    assert "bert/pooler/dense/kernel" in names and not any(n.startswith("cls/") for n in names)

    ids, mask, segments = _batch()
    sequence, pooled = _our_encoder_outputs(str(tmp_path / "ours" / "bert_config.json"),
                                            str(tmp_path / "ours" / "model.ckpt"),
                                            ids, mask, segments)
    as_long = lambda array: hf.torch.tensor(array, dtype=hf.torch.long)  # noqa: E731
    with hf.torch.no_grad():
        out = torch_model(input_ids=as_long(ids), attention_mask=as_long(mask),
                          token_type_ids=as_long(segments))
    _close(sequence, out.last_hidden_state.numpy(), "sequence output", shapes, "sequence")
    _close(pooled, out.pooler_output.numpy(), "pooled output", shapes, "pooled")


# ---- 4. round trip: export -> transformers save_pretrained -> import ------------------------

@pytest.mark.parametrize("kind", ["bert_gelu", "albert_google", "classifier"])
def test_round_trip_through_transformers_save_pretrained(hf, exported, tmp_path, kind):
    model = exported(kind)
    auto = (hf.T.AutoModelForSequenceClassification if kind == "classifier"
            else hf.T.AutoModelForPreTraining)
    auto.from_pretrained(str(model.dir)).save_pretrained(str(tmp_path / "saved"))
    hf.T.AutoTokenizer.from_pretrained(str(model.dir)).save_pretrained(str(tmp_path / "saved"))
    _cli("pretrain.interop.import_hf", model_dir=tmp_path / "saved", output_dir=tmp_path / "back")
    back = checkpoint_io.read_checkpoint(str(tmp_path / "back" / "model.ckpt"))
    assert sorted(back) == sorted(model.tensors)
    for name, value in model.tensors.items():  # copied three times: bit for bit
        assert back[name].dtype == np.float32 and np.array_equal(back[name], value), name
    assert (BertConfig.from_json_file(str(tmp_path / "back" / "bert_config.json")).to_dict()
            == BertConfig.from_json_file(model.config).to_dict())
    assert (tmp_path / "back" / "vocab.txt").read_text("utf-8") == VOCAB.read_text("utf-8")
