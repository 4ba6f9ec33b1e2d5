"""data_gen --mode=xlnet with a sentencepiece model (hfl/chinese-xlnet-base's kind), and the
messages of its bad flags and token tables."""
import json
import subprocess
import sys

import pytest

from tests.testutil import data_gen_runs as util
from conftest import REPO_ROOT
from data_gen.config import ConfigError, GenerationConfig
from data_gen.create_pretraining_data import run
from data_gen.text.segmentation import make_segmenter
from data_gen.text.tokenization import VocabError

SEQ, PRED = 64, 10


def config(directory, corpus, **overrides):
    settings = dict(input_file=str(corpus), output_file=str(directory / "out.tfrecord"),
                    mode="xlnet", max_seq_length=SEQ, max_predictions_per_seq=PRED,
                    dupe_factor=1, num_workers=1, progress=False)
    settings.update(overrides)
    return GenerationConfig(**settings)


@pytest.fixture(scope="module")
def spm_model(tmp_path_factory):
    pytest.importorskip("sentencepiece", reason="the spm extra (pip install sentencepiece)")
    from tests.testutil import xlnet_data
    return xlnet_data.train_spm(tmp_path_factory.mktemp("spm"))


def test_pieces_belong_to_the_jieba_word_they_begin_in(spm_model):
    from data_gen.text.spm_tokenization import SpmTokenizer
    tokenizer = SpmTokenizer(str(spm_model), lower=True)
    segmenter = make_segmenter("jieba")
    text = "北京大学的图书馆藏书非常丰富。hello world"
    ids, starts = tokenizer.tokenize(text, segmenter)
    pieces = [tokenizer.processor.IdToPiece(i) for i in ids]
    units, current = [], ""
    for piece, start in zip(pieces, starts):
        if start and current:
            units.append(current)
            current = ""
        current += piece
    units.append(current)
    surfaces = [unit.replace("\u2581", " ").strip() for unit in units]
    words = [w for w in segmenter.words(text) if not w.isspace()]
    assert "".join(surfaces) == "".join(words)
    # Every unit begins where a word begins; a piece crossing into the next word
    # ("学的" over 大学|的) takes that word's beginning with it.
    offsets = {sum(len(w) for w in words[:i]) for i in range(len(words))}
    position = 0
    for surface in surfaces:
        assert position in offsets, surfaces
        position += len(surface)
    assert surfaces[-2:] == ["hello", "world"] and starts[0] == 1


def test_spm_records_sidecar_and_whole_pieces(spm_model, tmp_path):
    from data_gen.text.spm_tokenization import SpmTokenizer
    corpus = util.write_corpus(tmp_path / "corpus.txt", util.documents(40, 3))
    account = run(config(tmp_path, corpus, spm_model_file=str(spm_model)))
    meta = json.loads((tmp_path / "out.tfrecord.meta.json").read_text())
    tokenizer = SpmTokenizer(str(spm_model), lower=True)
    special = tokenizer.special
    assert meta["tokenizer"] == "sentencepiece" and meta["spm_model_file"] == str(spm_model)
    assert meta["spm_model_sha256"] == meta["vocab_sha256"] and meta["vocab_size"] > 100
    assert meta["xlnet_special_ids"] == {name: special[name]
                                         for name in ("sep", "cls", "eod", "mask", "pad")}
    assert (special["cls"], special["sep"], special["eod"]) == (3, 4, 7)  # upstream's ids
    # The stream the records tile, with each piece's unit start.
    segmenter = make_segmenter("jieba")
    stream, starts = [], []
    for doc in util.documents(40, 3):
        for sentence in doc:
            ids, sentence_starts = tokenizer.tokenize(sentence, segmenter)
            stream += ids
            starts += sentence_starts
        stream.append(special["eod"])
        starts.append(-1)
    from test_xlnet_data import read_xlnet
    records = read_xlnet(tmp_path / "out.tfrecord")
    assert len(records) == account["instances"] > 10
    reuse = SEQ // 2
    for r, record in enumerate(records):
        assert record["input"][:reuse] == stream[r * reuse:(r + 1) * reuse]
        assert record["input"].count(special["sep"]) == 2 and record["input"][-2] == special["sep"]
        assert record["input"][-1] == special["cls"] and sum(record["is_masked"]) == PRED
        for position in range(reuse):  # the window's predicted runs are whole units
            if record["is_masked"][position] and (position == 0
                                                  or not record["is_masked"][position - 1]):
                assert starts[r * reuse + position] == 1
            if record["is_masked"][position] and (position == reuse - 1
                                                  or not record["is_masked"][position + 1]):
                after = r * reuse + position + 1
                assert after == len(starts) or starts[after] != 0
        assert not any(m and t in (special["sep"], special["cls"], special["eod"])
                       for m, t in zip(record["is_masked"], record["input"]))


def test_bad_flags_and_token_tables_name_what_to_fix(tmp_path, spm_model, monkeypatch):
    vocab = util.write_vocab(tmp_path)
    corpus = util.write_corpus(tmp_path / "corpus.txt", util.documents(10, 3))
    cases = [
        (dict(reuse_length=60), ConfigError, r"--reuse_length=60: must be in \[1, "
                                              r"max_seq_length - 5 = 59\]"),
        (dict(max_predictions_per_seq=70), ConfigError, r"--max_predictions_per_seq=70: xlnet "
                                                        r"predicts 35 of the 32 reused"),
        (dict(mask_alpha=0), ConfigError, r"--mask_alpha=0: must be >= --mask_beta=1"),
        (dict(mask_beta=0), ConfigError, r"--mask_beta=0: must be >= 1"),
        (dict(masking="span"), ConfigError, r"--masking=span: --mode=xlnet chooses"),
        (dict(eod_token="[nope]"), VocabError, r"--eod_token=\[nope\]: not in --vocab_file="),
        (dict(eod_token="[SEP]"), VocabError, r"--eod_token=\[SEP\]: must differ"),
        (dict(spm_model_file=str(spm_model)), ConfigError, "give one tokenizer, not both"),
        (dict(mode="roberta", spm_model_file=str(spm_model)), ConfigError,
         "--spm_model_file is used by --mode=xlnet only"),
        (dict(vocab_file=""), ConfigError, r"--vocab_file is required \(or --spm_model_file\)"),
    ]
    for overrides, error, message in cases:
        settings = dict(vocab_file=str(vocab))
        settings.update(overrides)
        with pytest.raises(error, match=message):
            run(config(tmp_path, corpus, **settings))
    not_a_model = tmp_path / "not.model"
    not_a_model.write_text("hello\n")
    with pytest.raises(VocabError, match=f"--spm_model_file={not_a_model}: not a sentencepiece"):
        run(config(tmp_path, corpus, spm_model_file=str(not_a_model)))
    import sentencepiece
    bare = tmp_path / "bare"
    sentencepiece.SentencePieceTrainer.train(
        input=str(corpus), model_prefix=str(bare), vocab_size=200, hard_vocab_limit=False,
        character_coverage=1.0, minloglevel=2)
    with pytest.raises(VocabError, match="lacks the piece.s. <sep> <cls> <eod> <mask> <pad>"):
        run(config(tmp_path, corpus, spm_model_file=f"{bare}.model"))
    monkeypatch.setitem(sys.modules, "sentencepiece", None)  # as if not installed
    with pytest.raises(VocabError, match=r"needs the sentencepiece package: pip install "
                                         r"sentencepiece \(or `make setup`"):
        run(config(tmp_path, corpus, spm_model_file=str(spm_model)))
    assert sorted(p.name for p in tmp_path.iterdir() if "out" in p.name) == []
    # The command line says it in one line, exit code 2, no traceback.
    process = subprocess.run(
        [sys.executable, "-m", "data_gen.create_pretraining_data", f"--input_file={corpus}",
         f"--output_file={tmp_path}/cli.tfrecord", f"--vocab_file={vocab}", "--mode=xlnet",
         "--max_seq_length=64", "--reuse_length=62"],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=120)
    assert process.returncode == 2 and "Traceback" not in process.stderr
    assert process.stderr.strip().splitlines()[-1].startswith("error: --reuse_length=62")
