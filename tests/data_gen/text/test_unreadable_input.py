"""Input that is not UTF-8: the encoding and its conversion named, and no silent loss.

A GB18030 or Big5 corpus stops the run with the `iconv` command that converts it rather than
with `--on_decode_error=skip` as the remedy; with skip, a run that drops more than
--max_unreadable_share of its lines fails naming the share, the first offending file and line
and the flag, and writes nothing.
"""
import os

import pytest

from tests.testutil import data_gen_runs as util
from tests.testutil.cli_runs import run_main_in_process
from data_gen.text import unreadable_input
from data_gen.config import GenerationConfig
from data_gen.text.corpus_reader import CorpusError
from data_gen.create_pretraining_data import run

TRADITIONAL = ["這是一個關於我們的故事。", "他們說中文的時候很開心。", "今天的天氣很好，我們去公園。",
               "國家的發展需要大家的努力。", "學生們在圖書館裡看書。"]


def _config(tmp_path, corpus, **overrides):
    settings = dict(input_file=str(corpus), output_file=str(tmp_path / "out" / "data.tfrecord"),
                    vocab_file=str(util.write_vocab(tmp_path)), max_seq_length=64,
                    max_predictions_per_seq=10, dupe_factor=1, num_workers=1, random_seed=7,
                    progress=False)
    settings.update(overrides)
    return GenerationConfig(**settings)


def _documents_text(sentences, count):
    return "".join("\n".join(sentences[i % len(sentences):] + sentences[:i % len(sentences)])
                   + "\n\n" for i in range(count))


def test_the_guess_names_gb18030_big5_or_nothing():
    simplified = _documents_text(util.SENTENCES, 10)
    traditional = _documents_text(TRADITIONAL, 10)
    assert unreadable_input.guess_encoding(simplified.encode("gb18030")) == "GB18030"
    assert unreadable_input.guess_encoding(traditional.encode("big5")) == "Big5"
    # UTF-8 with one damaged line is not another encoding
    damaged = simplified.encode("utf-8") + b"\xff\xfe broken\n"
    assert unreadable_input.guess_encoding(damaged) is None


@pytest.mark.parametrize("codec,named", [("gb18030", "GB18030"), ("big5", "BIG5")])
def test_a_gbk_or_big5_corpus_is_refused_with_the_iconv_command(tmp_path, codec, named):
    sentences = TRADITIONAL if codec == "big5" else util.SENTENCES
    corpus = tmp_path / "corpus.txt"
    corpus.write_bytes(("ascii first line\n" + _documents_text(sentences, 20)).encode(codec))
    with pytest.raises(CorpusError) as error:
        run(_config(tmp_path, corpus))
    message = str(error.value)
    assert f"{corpus}: line 2 (byte offset 17)" in message
    assert f"iconv -f {named} -t UTF-8 {corpus}" in message
    assert "on_decode_error=skip" not in message  # skipping would drop the whole corpus
    assert not (tmp_path / "out").exists() or not os.listdir(tmp_path / "out")


def test_skipping_more_than_the_share_fails_naming_share_file_line_and_flag(tmp_path):
    (tmp_path / "corpus").mkdir()
    good = tmp_path / "corpus" / "good.txt"
    good.write_text(_documents_text(util.SENTENCES, 30), encoding="utf-8")
    gbk = tmp_path / "corpus" / "gbk.txt"
    gbk.write_bytes(_documents_text(util.SENTENCES, 10).encode("gb18030"))
    pattern = str(tmp_path / "corpus" / "*.txt")
    with pytest.raises(CorpusError) as error:
        run(_config(tmp_path, pattern, on_decode_error="skip"))
    message = str(error.value)
    lines_good = sum(1 for line in good.read_text("utf-8").splitlines() if line)
    dropped = sum(1 for line in gbk.read_bytes().split(b"\n") if line.strip())
    share = dropped / (dropped + lines_good)
    assert f"{dropped} of {dropped + lines_good} lines ({share:.1%})" in message
    assert "--max_unreadable_share=0.01" in message and f"{gbk}: line 1" in message
    assert "iconv -f GB18030" in message and "no output was written" in message
    assert not (tmp_path / "out").exists() or not os.listdir(tmp_path / "out")

    account = run(_config(tmp_path, pattern, on_decode_error="skip", max_unreadable_share=0.5))
    assert account["lines_skipped_invalid_utf8"] == dropped and account["instances"] > 0
    assert unreadable_input.unreadable_share(account) == pytest.approx(share)


def test_a_few_damaged_lines_under_the_share_are_counted_not_fatal(tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_bytes(_documents_text(util.SENTENCES, 120).encode("utf-8") + b"\xff bad\n")
    account = run(_config(tmp_path, corpus, on_decode_error="skip"))
    assert account["lines_skipped_invalid_utf8"] == 1 and account["instances"] > 0


def test_the_cli_ends_with_one_error_line_and_exit_2(tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_bytes(_documents_text(util.SENTENCES, 20).encode("gb18030"))
    vocab = util.write_vocab(tmp_path)
    code, out, err, _ = run_main_in_process(
        "data_gen.create_pretraining_data",
        [f"--input_file={corpus}", f"--output_file={tmp_path}/out/data.tfrecord",
         f"--vocab_file={vocab}", "--max_seq_length=64", "--max_predictions_per_seq=10",
         "--dupe_factor=1", "--on_decode_error=skip", "--noprogress"], tmp_path)
    errors = [line for line in err.splitlines() if line.startswith("error: ")]
    assert code == 2 and len(errors) == 1 and "Traceback" not in err
    assert "(100.0%) were not UTF-8" in errors[0] and "iconv -f GB18030" in errors[0]


def test_finetune_lcqmc_lines_beyond_the_share_stop_naming_the_first_and_the_flag(tmp_path):
    from finetune import formats
    good = "".join(f"{a}\t{b}\t{i % 2}\n" for i, (a, b) in enumerate(
        zip(util.SENTENCES, util.SENTENCES[1:] + util.SENTENCES[:1])))
    path = tmp_path / "train.txt"
    path.write_text(good * 2 + "only one field\n" + good * 2, encoding="utf-8")
    rows = 4 * len(util.SENTENCES) + 1
    assert 1 / rows > 0.01
    with pytest.raises(formats.DataFormatError) as error:
        formats.read_text_examples(path, "pair", format="lcqmc", log_fn=lambda line: None)
    message = str(error.value)
    assert f"1 of {rows} lines ({1 / rows:.1%}) are malformed" in message
    assert f"line {2 * len(util.SENTENCES) + 1}: expected 3" in message
    assert "--max_malformed_share=0.01" in message
    examples, account = formats.read_text_examples(path, "pair", format="lcqmc",
                                                   log_fn=lambda line: None,
                                                   max_malformed_share=0.05)
    assert len(examples) == rows - 1 and account.dropped == {"malformed": 1}


def test_finetune_names_the_encoding_of_a_gbk_task_file(tmp_path):
    from finetune import formats
    path = tmp_path / "train.tsv"
    path.write_bytes(("label\ttext_a\n" + "".join(
        f"{i % 2}\t{sentence}\n" for i, sentence in enumerate(util.SENTENCES * 4))
                      ).encode("gb18030"))
    with pytest.raises(formats.DataFormatError) as error:
        formats.read_text_examples(path, "classification", log_fn=lambda line: None)
    assert f"iconv -f GB18030 -t UTF-8 {path}" in str(error.value)
