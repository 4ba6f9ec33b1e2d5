"""An XLNet whose vocab is a sentencepiece model (spiece.model beside the checkpoint, as
import_hf leaves hfl/chinese-xlnet-base) fine-tunes through the task layer: text prepared
as zihangdai/xlnet prepares it, encoded by the model, in XLNet's layout (pieces, <sep>,
..., <cls> last in segment 2, <pad> after), the transformer loaded from the checkpoint,
and spiece.model carried into the output directory and best/ so that later stages find it.
The vocab flags that contradict the checkpoint, and a BERT config with a sentencepiece
model, are refused with one line each."""
import glob
import json
import sys

import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from data_gen.text.spm_tokenization import INSTALL_HINT, SpmFullTokenizer, prepare_text
from finetune import compare, run_finetune
from tests.testutil.finetune_task import (COMMON, SAMPLES, TINY_CONFIG, write_random_pretraining_checkpoint,
                              xlnet_pretraining_features)
from test_xlnet_finetune import XLNET
from tests.testutil.xlnet_data import CONTROL_PIECES, USER_PIECES

sentencepiece = pytest.importorskip("sentencepiece")

SEQ = 64  # no sample pair or sentence is cut at this length
PAIRS, NER = SAMPLES / "pairs_clue", SAMPLES / "ner_bio"


def _texts():
    for path in sorted(PAIRS.glob("*.json")):
        for line in path.read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            yield row["sentence1"]
            yield row["sentence2"]
    for path in sorted(NER.glob("*.txt")):
        yield "".join(line.split()[0] for line in path.read_text(encoding="utf-8").splitlines()
                      if line.strip())


@pytest.fixture(scope="module")
def spm_checkpoint(tmp_path_factory):
    """A tiny XLNet pretraining checkpoint (random weights) with bert_config.json and a
    spiece.model (zihangdai's special pieces, trained on the samples) beside it, no vocab.txt."""
    folder = tmp_path_factory.mktemp("xlnet_spm")
    corpus = folder / "corpus.txt"
    corpus.write_text("\n".join(prepare_text(text, True) for text in _texts()) + "\n",
                      encoding="utf-8")
    sentencepiece.SentencePieceTrainer.train(
        input=str(corpus), model_prefix=str(folder / "spiece"), vocab_size=900,
        model_type="unigram", control_symbols=CONTROL_PIECES, user_defined_symbols=USER_PIECES,
        character_coverage=1.0, hard_vocab_limit=False, minloglevel=2)
    corpus.unlink()
    processor = sentencepiece.SentencePieceProcessor()
    processor.Load(str(folder / "spiece.model"))

    weights = write_random_pretraining_checkpoint(
        folder, dict(XLNET, n_token=processor.GetPieceSize()), xlnet_pretraining_features,
        folder / "spiece.model", seed=5)["weights"]
    (folder / "vocab.txt").unlink()  # the helper's copy: an spm checkpoint has no vocab.txt
    return {"dir": folder, "spm": folder / "spiece.model", "weights": weights,
            "sp": processor, "ids": {piece: processor.PieceToId(piece) for piece in
                                     ("<sep>", "<cls>", "<pad>", "<unk>", "<mask>", "\u2581")}}


def _settings(checkpoint, out, **settings):
    return dict(COMMON, max_seq_length=SEQ, output_dir=str(out), keep_checkpoints=True,
                init_checkpoint=str(checkpoint["dir"]), **settings)  # step 0's is read


def _in_file_order(expected):
    """Records expected in the examples' order, as a dev file holds them: unpadded, longest
    first (finetune.splits)."""
    return sorted(expected, key=lambda record: -len(record["input_ids"]))


def _records(out, split):
    """The int features of OUTPUT_DIR's cached SPLIT records, in file order."""
    (path,) = glob.glob(str(out / "feature_cache" / f"{split}.*.tfrecord"))
    rows = []
    for data in tf.io.tf_record_iterator(path):
        feature = tf.train.Example.FromString(data).features.feature
        rows.append({name: list(feature[name].int64_list.value)
                     for name in ("input_ids", "input_mask", "segment_ids")})
    return rows


def _check_model_directory(out, checkpoint):
    spm = checkpoint["spm"].read_bytes()
    for folder in (out, out / "best"):
        assert (folder / "spiece.model").read_bytes() == spm
        assert not (folder / "vocab.txt").exists()
        assert {"bert_config.json", "task.json"} <= {path.name for path in folder.iterdir()}
    # A second stage starting from the fine-tuning output finds the model in best/.
    _, assets = run_finetune.resolve_model(dict(run_finetune.DEFAULTS, init_checkpoint=str(out)))
    assert assets.spm_model_file == str(out / "best" / "spiece.model")
    assert assets.vocab_file is None and assets.checkpoint.startswith(str(out / "best"))


def _check_loaded(results, out, checkpoint):
    weights = checkpoint["weights"]
    transformer = sorted(name for name in weights if name.startswith("model/transformer/")
                         and "mask_emb" not in name)
    assert results["init"]["loaded"] == len(transformer) > 20
    step0 = tf.train.load_checkpoint(str(out / "model.ckpt-0"))
    for name in transformer:  # restored and saved again before any step: bit for bit
        np.testing.assert_array_equal(step0.get_tensor(name), weights[name], err_msg=name)


def test_the_adapter_speaks_the_task_layers_names(spm_checkpoint):
    ids, sp = spm_checkpoint["ids"], spm_checkpoint["sp"]
    tokenizer = SpmFullTokenizer(spm_checkpoint["spm"])
    assert tokenizer.convert_tokens_to_ids(["[CLS]", "[SEP]", "[PAD]", "[UNK]", "[MASK]"]) == [
        ids["<cls>"], ids["<sep>"], ids["<pad>"], ids["<unk>"], ids["<mask>"]]
    assert tokenizer.pad_id == ids["<pad>"] != 0  # 0 is <unk> in zihangdai's models
    assert len(tokenizer.vocab) == sp.GetPieceSize() and tokenizer.vocab_file == str(
        spm_checkpoint["spm"])
    text = "花呗　额度 ``能''调高吗ABC"  # prepared: one space, '"', NFKD, lower case
    prepared = prepare_text(text, True)
    assert prepared == '花呗 额度 "能"调高吗abc'
    pieces = tokenizer.tokenize(text)
    assert tokenizer.convert_tokens_to_ids(pieces) == sp.EncodeAsIds(prepared)
    assert pieces[0].startswith("\u2581")  # a text alone starts with sentencepiece's mark
    assert tokenizer.convert_ids_to_tokens(sp.EncodeAsIds(prepared)) == pieces
    # Inside a sentence (NER) a character is its own piece, not "▁" + itself.
    assert sp.EncodeAsPieces("额")[0] == "\u2581"
    assert tokenizer.tokenize_token("额") == ["额"]


def test_pair_fine_tuning_from_a_sentencepiece_checkpoint(spm_checkpoint, tmp_path):
    out = tmp_path / "pair"
    results = run_finetune.run(_settings(spm_checkpoint, out, task="pair",
                                         data_dir=str(PAIRS), num_train_epochs=2,
                                         eval_every_steps=1000), log_fn=lambda *_: None)
    assert results["spm_model_file"] == str(spm_checkpoint["spm"])
    assert results["vocab_file"] is None and results["assets"]["vocab"] == "checkpoint"
    sp, ids = spm_checkpoint["sp"], spm_checkpoint["ids"]
    rows = [json.loads(line) for line in (PAIRS / "dev.json").read_text(
        encoding="utf-8").splitlines()]
    records = _records(out, "dev")
    assert len(records) == len(rows) and results["data"]["dev"]["records"]["truncated"] == 0
    expected = []
    for row in rows:
        a, b = (sp.EncodeAsIds(prepare_text(row[key], True)) for key in ("sentence1",
                                                                          "sentence2"))
        real = a + [ids["<sep>"]] + b + [ids["<sep>"], ids["<cls>"]]
        expected.append({"input_ids": real, "input_mask": [1] * len(real),
                         "segment_ids": [0] * (len(a) + 1) + [1] * (len(b) + 1) + [2]})
    assert records == _in_file_order(expected) and max(map(len, expected)) < SEQ
    _check_loaded(results, out, spm_checkpoint)
    _check_model_directory(out, spm_checkpoint)
    assert 0.0 <= results["dev"]["accuracy"] <= 1.0 and np.isfinite(results["dev"]["loss"])
    assert results["test"] is None  # the test file has no labels: predicted only
    assert len((out / "test_predictions.jsonl").read_text().splitlines()) == 20


def test_ner_fine_tuning_from_a_sentencepiece_checkpoint(spm_checkpoint, tmp_path):
    out = tmp_path / "ner"
    files = {f"{split}_file": str(NER / f"{split}.txt") for split in ("train", "dev", "test")}
    results = run_finetune.run(_settings(spm_checkpoint, out, task="ner", num_train_epochs=1,
                                         eval_every_steps=1000, **files), log_fn=lambda *_: None)
    sp, ids = spm_checkpoint["sp"], spm_checkpoint["ids"]
    sentences, chars = [], []
    for line in (NER / "dev.txt").read_text(encoding="utf-8").splitlines() + [""]:
        if line.strip():
            chars.append(line.split()[0])
        elif chars:
            sentences.append(chars)
            chars = []
    records = _records(out, "dev")
    assert len(records) == len(sentences) and results["data"]["dev"]["records"][
        "tokens_without_pieces"] == 0
    expected = []
    for chars in sentences:
        # Every character is the piece it is inside its sentence (the samples' characters
        # are pieces of this model), then <sep>, <cls> in segment 2 (batches pad with <pad>).
        pieces = [sp.PieceToId(prepare_text(char, True)) for char in chars]
        assert ids["<unk>"] not in pieces and ids["\u2581"] not in pieces
        real = pieces + [ids["<sep>"], ids["<cls>"]]
        expected.append({"input_ids": real, "input_mask": [1] * len(real),
                         "segment_ids": [0] * (len(real) - 1) + [2]})
    assert records == _in_file_order(expected)
    _check_loaded(results, out, spm_checkpoint)
    _check_model_directory(out, spm_checkpoint)
    assert 0.0 <= results["dev"]["f1"] <= 1.0 and json.loads(
        (out / "task.json").read_text())["task"] == "ner"


def test_vocab_settings_that_cannot_work_are_refused(spm_checkpoint, tmp_path, monkeypatch):
    pair = dict(task="pair", data_dir=str(PAIRS))
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\n", encoding="utf-8")
    other = tmp_path / "other.model"
    other.write_bytes(spm_checkpoint["spm"].read_bytes() + b"\0")
    bare = tmp_path / "bare"
    bare.mkdir()
    for name in ("bert_config.json", "model.ckpt-100.index", "model.ckpt-100.data-00000-of-00001"):
        (bare / name).write_bytes((spm_checkpoint["dir"] / name).read_bytes())
    (bare / "checkpoint").write_text('model_checkpoint_path: "model.ckpt-100"\n')
    bert = tmp_path / "bert_config.json"
    bert.write_text(json.dumps(dict(TINY_CONFIG, vocab_size=2000)), encoding="utf-8")
    spm = str(spm_checkpoint["spm"])
    cases = [
        (dict(vocab_file=str(vocab)), r"--vocab_file=.*: checkpoint .* was trained with the "
                                      r"sentencepiece model .*spiece.model .*drop --vocab_file"),
        (dict(vocab_file=str(vocab), spm_model_file=spm), r"--vocab_file=.* and --spm_model_file"
                                                          r"=.*: give one"),
        (dict(spm_model_file=str(other)), r"is not the sentencepiece model checkpoint .* bytes "
                                          r"differ"),
        (dict(init_checkpoint=str(bare)), r"no vocab: pass --vocab_file.*--spm_model_file.*"
                                          r"vocab.txt or spiece.model beside it"),
        (dict(init_checkpoint="", bert_config_file=str(bert), spm_model_file=spm),
         r"spiece.model is a sentencepiece model, but .*bert_config.json is a bert config: only "
         r"model_type xlnet fine-tunes with a sentencepiece model"),
    ]
    for overrides, message in cases:
        settings = dict(_settings(spm_checkpoint, tmp_path / "out", **pair), **overrides)
        with pytest.raises(run_finetune.SettingsError, match=message):
            run_finetune.run(settings, log_fn=lambda *_: None)
    monkeypatch.setitem(sys.modules, "sentencepiece", None)  # not installed
    with pytest.raises(run_finetune.SettingsError) as error:
        run_finetune.run(_settings(spm_checkpoint, tmp_path / "out", **pair))
    assert str(error.value) == (f"{spm} is a sentencepiece model (the model's vocab), which "
                                f"needs the sentencepiece package: {INSTALL_HINT}")
    assert not (tmp_path / "out").exists()


def test_compare_plans_the_sentencepiece_model(spm_checkpoint, tmp_path):
    common = dict(run_finetune.DEFAULTS, task="pair", data_dir=str(PAIRS))
    plans = compare.plan_runs(["random init=", f"after={spm_checkpoint['dir']}"], common,
                              str(tmp_path))
    for plan in plans:  # the random-init run tokenises as the checkpoint run does
        assert plan["spm_model_file"] == str(spm_checkpoint["spm"]) and plan["vocab_file"] is None
        assert plan["bert_config_file"] == str(spm_checkpoint["dir"] / "bert_config.json")
