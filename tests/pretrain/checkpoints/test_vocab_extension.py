"""vocab_surgery --extend_from_corpus: a corpus's [UNK] characters take the vocab's free
[unused] lines (never a reserved one), then extend the embedding table and the MLM bias; the
shrinking command line is unchanged."""
import json

import numpy as np
import pytest

from tests.testutil.cli_runs import run_main_in_process
from data_gen.text.tokenization import FullTokenizer
from pretrain.checkpoints import checkpoint_io, vocab_extension, vocab_surgery
from tests.testutil.tiny_models import (ModelRunner, random_weights, tiny_config,
                                    write_checkpoint)

TOKENS = ["[PAD]", "[unused1]", "[unused2]", "[unused3]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
TOKENS += list("我们你他好的是中国人天地") + [f"t{k}" for k in range(50 - len(TOKENS) - 12)]


def _model(folder, tokens=TOKENS, **config):
    """A tiny BERT checkpoint with MLM head and its vocab.txt / bert_config.json beside it."""
    folder.mkdir(parents=True, exist_ok=True)
    settings = tiny_config(vocab_size=len(tokens), **config)
    weights = random_weights(settings, seed=4)
    write_checkpoint(folder / "model.ckpt", weights)
    (folder / "checkpoint").write_text('model_checkpoint_path: "model.ckpt"\n')
    (folder / "vocab.txt").write_text("\n".join(tokens) + "\n", encoding="utf-8")
    (folder / "bert_config.json").write_text(json.dumps(settings))
    return folder, settings, weights


def _corpus(path, text):
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_new_characters_take_the_free_unused_lines_and_change_no_output(tmp_path):
    start, settings, weights = _model(tmp_path / "start")
    corpus = _corpus(tmp_path / "domain.txt", "我们“好”的\n他是“中国人”…\n")
    report = vocab_extension.extend(str(start), corpus, str(tmp_path / "out"), min_count=2,
                                    log_fn=lambda m: None)
    # “ and ” twice each (… once, below --min_count): most frequent first, into [unused2]
    # and [unused3]; [unused1] (XLNet's default end-of-document token) is never given away
    vocab = (tmp_path / "out" / "vocab.txt").read_text(encoding="utf-8").splitlines()
    assert report["added"] == [["“", 2, 2], ["”", 3, 2]] and report["appended"] == 0
    assert vocab[:4] == ["[PAD]", "[unused1]", "“", "”"] and vocab[4:] == TOKENS[4:]
    assert report["unknown_characters"] == 5
    assert json.loads((tmp_path / "out" / "bert_config.json").read_text())["vocab_size"] == 50


def test_with_slots_only_the_outputs_on_old_text_are_identical(tmp_path):
    start, settings, _ = _model(tmp_path / "start")
    corpus = _corpus(tmp_path / "domain.txt", "“好”\n")
    vocab_extension.extend(str(start), corpus, str(tmp_path / "out"), log_fn=lambda m: None)
    ids = np.array([[5, 10, 11, 12, 6, 0]], np.int32)  # [CLS] 我们你 [SEP] [PAD]: no new char
    mask, types = (ids > 0).astype(np.int32), np.zeros_like(ids)
    outputs = []
    for folder in (start, tmp_path / "out"):
        runner = ModelRunner(settings, str(folder / "model.ckpt"))
        outputs.append(runner.run(ids, mask, types))
        runner.close()
    for before, after in zip(*outputs):
        np.testing.assert_array_equal(before, after)  # the same weights, graph and inputs
    tokenizer = FullTokenizer(str(tmp_path / "out" / "vocab.txt"))
    assert tokenizer.convert_tokens_to_ids(tokenizer.tokenize("“好”")) == [2, 12, 3]


def test_past_the_free_lines_rows_are_appended_as_the_mean(tmp_path):
    start, settings, weights = _model(tmp_path / "start")
    corpus = _corpus(tmp_path / "domain.txt", "“”…—‘’\n")
    report = vocab_extension.extend(str(start), corpus, str(tmp_path / "out"),
                                    log_fn=lambda m: None)
    assert report["slots_filled"] == 2 and report["appended"] == 4 and report["vocab_size"] == 54
    extended = checkpoint_io.read_checkpoint(str(tmp_path / "out" / "model.ckpt"))
    table = extended["bert/embeddings/word_embeddings"]
    original = weights["bert/embeddings/word_embeddings"]
    np.testing.assert_array_equal(table[:50], original)
    # the mean of the 50 rows, float32 sums of 50 terms: within summation_ulps(50)
    np.testing.assert_allclose(table[50:], np.repeat(original.mean(0, keepdims=True), 4, 0),
                               rtol=0, atol=49 * 2 ** -23 * np.abs(original).max())
    bias = extended["cls/predictions/output_bias"]
    assert bias.shape == (54,) and np.all(bias[50:] == bias[50])
    vocab = (tmp_path / "out" / "vocab.txt").read_text(encoding="utf-8").splitlines()
    assert len(vocab) == 54 and vocab[50:] == [char for char, _, _ in report["added"][2:]]
    # the extended model builds and reads every tensor at the new size
    runner = ModelRunner(dict(settings, vocab_size=54), str(tmp_path / "out" / "model.ckpt"))
    assert runner.report.missing_in_checkpoint == []
    runner.close()


def test_refusals_name_what_to_do(tmp_path):
    corpus = _corpus(tmp_path / "domain.txt", "“”\n")
    electra, _, _ = _model(tmp_path / "electra")
    config = json.loads((electra / "bert_config.json").read_text())
    (electra / "bert_config.json").write_text(json.dumps(dict(config, model_type="electra")))
    with pytest.raises(vocab_surgery.UserError, match="tied|share the embedding table"):
        vocab_extension.extend(str(electra), corpus, str(tmp_path / "o1"))
    no_free = [t for t in TOKENS if not t.startswith("[unused")] + ["[unused1]"]
    classifier, _, _ = _model(tmp_path / "classifier", tokens=no_free)
    weights = checkpoint_io.read_checkpoint(str(classifier / "model.ckpt"))
    del weights["cls/predictions/output_bias"]
    checkpoint_io.write_checkpoint(weights, str(classifier / "model.ckpt"))
    with pytest.raises(vocab_surgery.UserError, match="no cls/predictions/output_bias; cannot "
                       "append 2 characters past the free \\[unused\\] lines"):
        vocab_extension.extend(str(classifier), corpus, str(tmp_path / "o2"))
    assert not (tmp_path / "o2").exists()
    with pytest.raises(vocab_surgery.UserError, match="matches no file"):
        vocab_extension.extend(str(classifier), "no_such_*.txt", str(tmp_path / "o3"))


def test_the_cli_extends_and_still_shrinks(tmp_path):
    start, _, _ = _model(tmp_path / "start")
    corpus = _corpus(tmp_path / "domain.txt", "“好”\n")
    code, out, err, _ = run_main_in_process("pretrain.checkpoints.vocab_surgery", [
        f"--init_checkpoint={start}", f"--extend_from_corpus={corpus}",
        f"--output_dir={tmp_path / 'out'}"], tmp_path)
    assert code == 0 and "2 characters added" in out, err
    assert (tmp_path / "out" / "vocab_extension.json").is_file()
    code, out, err, _ = run_main_in_process("pretrain.checkpoints.vocab_surgery", [
        f"--init_checkpoint={start}", f"--extend_from_corpus={corpus}"], tmp_path)
    assert code == 2 and err.strip() == "error: --extend_from_corpus needs --output_dir"
    code, out, err, _ = run_main_in_process("pretrain.checkpoints.vocab_surgery", [
        f"--vocab_file={start / 'vocab.txt'}", f"--corpus_files={corpus}",
        f"--output_vocab_file={tmp_path / 'small' / 'vocab.txt'}",
        f"--output_keep_tokens_file={tmp_path / 'small' / 'keep.json'}"], tmp_path)
    assert code == 0 and "set vocab_size=" in out, err
