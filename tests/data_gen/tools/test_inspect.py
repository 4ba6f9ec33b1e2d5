"""data_gen.tools.inspect_records: generated records printed back with their masked labels."""
import os
import subprocess
import sys

import pytest

from tests.testutil.cli_runs import tool_lines
from data_gen.tools import build_vocab as bv
from data_gen.tools import inspect_records as di
from data_gen.config import GenerationConfig
from data_gen.create_pretraining_data import run

CORPUS = """我们今天去公园散步，天气非常好。
公园里有很多人在跑步和打太极拳。
回家以后我们一起做了晚饭。

手机没电了，我去找充电器。
充电器放在书桌的抽屉里。

北京的秋天很美，香山的红叶都红了。
很多游客专门在十月来北京看红叶。
"""


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    """An albert-mode file (gzip) and a roberta-mode file (plain) with their vocab."""
    tmp_path = tmp_path_factory.mktemp("inspect")
    corpus = tmp_path / "corpus.txt"
    corpus.write_text(CORPUS, encoding="utf-8")
    vocab_file = str(tmp_path / "vocab.txt")
    tokens, _ = bv.build_vocab([str(corpus)], vocab_size=300, num_unused=5)
    bv.write_vocab(tokens, vocab_file)
    outputs = {}
    for mode, compression in (("albert", "gzip"), ("roberta", "none")):
        output = str(tmp_path / f"{mode}.tfrecord")
        run(GenerationConfig(input_file=str(corpus), output_file=output, vocab_file=vocab_file,
                             mode=mode, max_seq_length=32, max_predictions_per_seq=6,
                             masked_lm_prob=0.2, dupe_factor=2, num_workers=1,
                             compression=compression, progress=False))
        outputs[mode] = output
    return outputs, vocab_file


def printed(path, **kwargs):
    lines = []
    count = di.inspect_file(path, out=lines.append, **kwargs)
    return count, lines


def field(lines, record_index, name):
    """The text after `name:` in the block of record `record_index`."""
    start = lines.index(f"record {record_index}:")
    for line in lines[start + 1:]:
        if line.startswith("record "):
            break
        if line.strip().startswith(name):
            return line.split(": ", 1)[1] if ": " in line else ""
    raise AssertionError(f"{name} not printed for record {record_index}: {lines}")


def test_masked_positions_show_their_labels(generated):
    outputs, vocab_file = generated
    inv_vocab = di.TokenNames(vocab_file)
    records = di.read_records(outputs["albert"], 4, "gzip")
    count, lines = printed(outputs["albert"], num_records=4)  # vocab/compression from meta
    assert count == len(records) == 4
    assert "compression=gzip, mode=albert" in lines[0] and vocab_file in lines[0]
    checked = 0
    for index, record in enumerate(records):
        shown = field(lines, index, "tokens").split(" ")
        length = sum(record["input_mask"])
        assert len(shown) == length
        masked = {p: l for p, l, w in zip(record["masked_lm_positions"], record["masked_lm_ids"],
                                          record["masked_lm_weights"]) if w > 0}
        assert masked, "every record should have masked positions"
        for position, token in enumerate(shown):
            input_token = inv_vocab(record["input_ids"][position])
            if position in masked:
                label = inv_vocab(masked[position])
                if input_token == "[MASK]":
                    assert token == f"[MASK→{label}]"
                else:
                    assert token == f"{input_token}→({label})"
                checked += 1
            else:
                assert token == input_token and "→" not in token
        assert field(lines, index, "segment_ids").split() == [
            str(s) for s in record["segment_ids"][:length]]
        assert field(lines, index, "next_sentence_labels").startswith(
            f"{record['next_sentence_labels'][0]}  (SOP")
        assert field(lines, index, "token_boundary").split() == [
            str(b) for b in record["token_boundary"][:length]]
        assert field(lines, index, "masked_lm").split() == [
            f"{p}:{inv_vocab(masked[p])}" for p in sorted(masked)]
    assert checked >= 4


def test_roberta_file_without_token_boundary_and_explicit_vocab(generated):
    outputs, vocab_file = generated
    count, lines = printed(outputs["roberta"], num_records=2, vocab_file=vocab_file)
    assert count == 2
    assert "compression=none, mode=roberta" in lines[0]
    assert not any("token_boundary" in line for line in lines)
    assert field(lines, 0, "tokens").startswith("[CLS] ")
    assert field(lines, 0, "next_sentence_labels").startswith("0  (no sentence task")


def test_gzip_detected_without_sidecar_and_ids_without_vocab(generated, tmp_path):
    outputs, _ = generated
    copy = tmp_path / "copy.tfrecord"
    copy.write_bytes(open(outputs["albert"], "rb").read())  # no .meta.json beside it
    count, lines = printed(str(copy), num_records=1)
    assert count == 1
    assert "compression=gzip, mode=unknown" in lines[0] and "ids shown" in lines[0]
    tokens = field(lines, 0, "tokens").split(" ")
    assert tokens[0].isdigit()  # ids, not token text


def test_missing_and_corrupt_files_give_clear_errors(generated, tmp_path, capsys):
    outputs, vocab_file = generated
    with pytest.raises(di.InspectError, match="file not found"):
        di.inspect_file(str(tmp_path / "absent.tfrecord"), vocab_file=vocab_file, out=print)
    truncated = tmp_path / "truncated.tfrecord"
    data = open(outputs["roberta"], "rb").read()
    truncated.write_bytes(data[:-5])  # the last record loses part of its CRC
    with pytest.raises(di.InspectError, match="corrupt or truncated"):
        di.inspect_file(str(truncated), num_records=10 ** 6, vocab_file=vocab_file, out=print)
    not_records = tmp_path / "text.tfrecord"
    not_records.write_text("这不是 TFRecord 文件\n" * 20, encoding="utf-8")
    for args, message in (([str(not_records), "--vocab_file", vocab_file], "corrupt or truncated"),
                          ([outputs["roberta"], "-n", "1", "--vocab_file",
                            str(tmp_path / "no.txt")], "--vocab_file=")):
        result = subprocess.run([sys.executable, "-m", "data_gen.tools.inspect_records", *args],
                                capture_output=True, text=True, timeout=120)
        lines = tool_lines(result.stderr)
        assert result.returncode == 2 and len(lines) == 1, result.stderr
        assert lines[0].startswith("error: ") and message in lines[0], lines


def test_no_temporary_files_left(generated):
    outputs, _ = generated
    directory = os.path.dirname(outputs["albert"])
    assert not [name for name in os.listdir(directory) if "incomplete" in name]
    assert os.path.isfile(outputs["albert"] + ".meta.json")


def test_cli_help_and_no_module_shadows_the_standard_library(repo_root):
    result = subprocess.run([sys.executable, "-m", "data_gen.tools.inspect_records", "--help"],
                            cwd=repo_root, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0 and "--num_records" in result.stdout and "Prints pretraining" in result.stdout
    # A script run from inside data_gen/ puts that folder first on sys.path.
    code = ("import sys, sysconfig; sys.path.insert(0, 'data_gen'); import inspect; "
            "print(inspect.__file__.startswith(sysconfig.get_paths()['stdlib']))")
    result = subprocess.run([sys.executable, "-c", code], cwd=repo_root, capture_output=True,
                            text=True, timeout=60)
    assert result.stdout.strip() == "True", result.stderr
