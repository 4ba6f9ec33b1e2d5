"""Every command that writes under a path makes the missing folders above it (as the README's
recipes assume), and nothing appears under a final name before the command succeeds.
(create_pretraining_data's own case is in test_create_pretraining_data; run_finetune,
compare and run_pretraining make their --output_dir.)"""
import os

import pytest

from tests.testutil import data_gen_runs as util
from tests.testutil.cli_runs import run_main_in_process

LCQMC_ROWS = "".join(f"{a}\t{b}\t{i % 2}\n" for i, (a, b) in enumerate(
    zip(util.SENTENCES, util.SENTENCES[1:] + util.SENTENCES[:1])))


def _inputs(tmp_path):
    (tmp_path / "lcqmc").mkdir()
    (tmp_path / "lcqmc" / "train.txt").write_text(LCQMC_ROWS, encoding="utf-8")
    (tmp_path / "reviews.tsv").write_text("label\ttext_a\n" + "".join(
        f"{i % 2}\t{sentence}\n" for i, sentence in enumerate(util.SENTENCES)), encoding="utf-8")
    util.write_corpus(tmp_path / "corpus.txt", util.documents(10, 3))


CASES = {
    "data_gen.tools.lcqmc_to_docs": lambda root, out: [f"--lcqmc_dir={root}/lcqmc",
                                                 f"--output_file={out}"],
    "finetune.task_text": lambda root, out: ["--task=classification",
                                             f"--input_file={root}/reviews.tsv",
                                             f"--output_file={out}"],
    "data_gen.tools.build_vocab": lambda root, out: [f"--input_file={root}/corpus.txt",
                                               f"--output_file={out}", "--num_unused=5"],
}


@pytest.mark.parametrize("module", sorted(CASES))
def test_missing_output_folders_are_made(tmp_path, module):
    _inputs(tmp_path)
    out = tmp_path / "new" / "nested" / "out.txt"
    code, _, err, _ = run_main_in_process(module, CASES[module](tmp_path, out), tmp_path)
    assert code == 0, err[-2000:]
    assert out.stat().st_size > 0
    assert os.listdir(out.parent) == ["out.txt"]  # no temporary left beside it


@pytest.mark.parametrize("module", sorted(CASES))
def test_a_failed_run_leaves_nothing_under_the_final_name(tmp_path, module):
    _inputs(tmp_path)
    for name in ("lcqmc/train.txt", "reviews.tsv", "corpus.txt"):
        (tmp_path / name).write_bytes(b"\xff\xfe not utf-8\n" * 3)
    out = tmp_path / "new" / "out.txt"
    code, _, err, _ = run_main_in_process(module, CASES[module](tmp_path, out), tmp_path)
    assert code == 2 and "error: " in err
    assert not out.exists()
    assert not out.parent.exists() or os.listdir(out.parent) == []


@pytest.mark.parametrize("remote", [False, True])
def test_text_written_atomically_is_whole_or_absent(tmp_path, remote):
    """common.file_utils.write_text_atomically (eval_results.txt, results.md, ...): the lines
    appear under the final name only when all are written, on local disk and on a SCHEME://
    file system (TensorFlow's ram://, standing in for gs://); the temporary is gone."""
    import tensorflow as tf  # pylint: disable=import-outside-toplevel
    from common.file_utils import write_text_atomically  # pylint: disable=import-outside-toplevel
    folder = f"ram://atomic_text_{os.getpid()}" if remote else str(tmp_path)
    tf.io.gfile.makedirs(folder)
    path = f"{folder}/eval_results.txt"

    def lines():
        yield "a = 1"
        assert not tf.io.gfile.exists(path)  # nothing under the final name while writing
        yield "b = 2"
        raise KeyboardInterrupt  # killed mid-way
    with pytest.raises(KeyboardInterrupt):
        write_text_atomically(path, lines())
    assert not tf.io.gfile.exists(path)
    write_text_atomically(path, ["a = 1", "b = 2"])
    with tf.io.gfile.GFile(path) as reader:
        assert reader.read() == "a = 1\nb = 2\n"
    assert tf.io.gfile.listdir(folder) == ["eval_results.txt"]
