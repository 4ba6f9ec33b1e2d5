"""Expected failures of every tool end in one `error: ...` line naming the file, flag or
value, with exit code 2, no traceback, and no output under a final name.

Classes (the issue's list): missing files, bad flag values, an unwritable output, a full
disk (a real `ulimit -f` in the kernel, and ENOSPC injected into the writer), a truncated
input record (named, with a flag to skip and count), a non-finite loss. The tools run as
users run them, as subprocesses, several at a time.
"""
import os
import resource
import signal
import sys
import textwrap

import pytest

from tests.testutil.cli_runs import module_command, run_main_in_process, run_parallel
from tests.testutil.pretrain_data import make_examples, tiny_config, write_records

VOCAB = "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\n" + "".join(f"{c}\n" for c in "我们今天去公园散步天气很好")
CORPUS = "我们今天去公园散步。\n天气很好。\n\n今天天气很好。\n我们去公园。\n"
PRETRAIN = ["--max_seq_length=16", "--max_predictions_per_seq=4", "--train_batch_size=8",
            "--num_train_steps=4", "--num_warmup_steps=0", "--do_train", "--random_seed=1",
            "--shuffle_buffer=0", "--save_checkpoints_steps=1000"]


def _error_line(key, result):
    """The single stderr line starting with `error:` (TF/absl log lines aside)."""
    code, out, err, _ = result
    assert "Traceback" not in out + err, f"{key}: traceback\n{err[-3000:]}"
    errors = [line for line in err.splitlines() if line.startswith("error: ")]
    assert code == 2 and len(errors) == 1, f"{key}: exit {code}, error lines {errors}\n{err[-3000:]}"
    return errors[0]


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    root = tmp_path_factory.mktemp("failures")
    (root / "vocab.txt").write_text(VOCAB, encoding="utf-8")
    (root / "corpus.txt").write_text(CORPUS * 40, encoding="utf-8")
    (root / "a_file").write_text("not a directory\n", encoding="utf-8")
    (root / "out").mkdir()
    tiny_config(root / "cfg.json")
    write_records(root / "good.tfrecord", make_examples(16, seed=1))
    truncated = write_records(root / "truncated.tfrecord", make_examples(32, seed=2))
    data = open(truncated, "rb").read()
    with open(truncated, "wb") as handle:  # the 25th record loses its end
        handle.write(data[:len(data) * 3 // 4 + 40])
    bad = make_examples(8, seed=3)
    for example in bad:
        example["masked_lm_weights"] = [float("nan")] * 4
    write_records(root / "nan.tfrecord", make_examples(8, seed=4) + bad)
    return root


# (key, module, args, text the error line must contain)
CASES = [
    # missing files
    ("generate: missing corpus", "data_gen.create_pretraining_data",
     ["--input_file=no_such_*.txt", "--output_file=out/x.tfrecord", "--vocab_file=vocab.txt"],
     "--input_file pattern 'no_such_*.txt' matches no file"),
    ("generate: missing vocab", "data_gen.create_pretraining_data",
     ["--input_file=corpus.txt", "--output_file=out/x.tfrecord", "--vocab_file=nope.txt"],
     "--vocab_file=nope.txt: file not found"),
    ("generate: a folder for the vocab", "data_gen.create_pretraining_data",
     ["--input_file=corpus.txt", "--output_file=out/x.tfrecord", "--vocab_file=."],
     "--vocab_file=. is a folder: pass the file inside it, --vocab_file=./vocab.txt"),
    ("generate: a folder for the corpus", "data_gen.create_pretraining_data",
     ["--input_file=out", "--output_file=out/x.tfrecord", "--vocab_file=vocab.txt"],
     "--input_file=out is a folder: pass its files, e.g. --input_file='out/*.txt'"),
    ("build_vocab: missing corpus", "data_gen.tools.build_vocab",
     ["--input_file=no_such.txt", "--output_file=out/v.txt"], "no_such.txt"),
    ("lcqmc_to_docs: missing dir", "data_gen.tools.lcqmc_to_docs",
     ["--lcqmc_dir=no_such_dir", "--output_file=out/docs.txt"], "no_such_dir"),
    ("inspect: missing file", "data_gen.tools.inspect_records", ["no_such.tfrecord"],
     "no_such.tfrecord"),
    ("pretrain: missing config", "pretrain.run_pretraining",
     ["--bert_config_file=no_such.json", "--input_file=good.tfrecord", "--output_dir=out/p1",
      *PRETRAIN], "no_such.json"),
    ("pretrain: missing data", "pretrain.run_pretraining",
     ["--bert_config_file=cfg.json", "--input_file=no_such.tfrecord", "--output_dir=out/p2",
      *PRETRAIN], "no_such.tfrecord"),
    ("import_hf: missing model", "pretrain.interop.import_hf",
     ["--model_dir=no_such_model", "--output_dir=out/imported"], "no_such_model"),
    ("export_hf: missing checkpoint", "pretrain.interop.export_hf",
     ["--init_checkpoint=no_such_ckpt", "--bert_config_file=cfg.json", "--vocab_file=vocab.txt",
      "--output_dir=out/hf"], "no_such_ckpt"),
    ("run_finetune: missing data", "finetune.run_finetune",
     ["--data_dir=no_such_dir", "--vocab_file=vocab.txt", "--bert_config_file=cfg.json",
      "--output_dir=out/ft", "--max_seq_length=16"], "no_such_dir"),
    # bad flag values
    ("generate: dupe_factor 0", "data_gen.create_pretraining_data",
     ["--input_file=corpus.txt", "--output_file=out/x.tfrecord", "--vocab_file=vocab.txt",
      "--dupe_factor=0"], "--dupe_factor=0: must be >= 1"),
    ("generate: not an integer", "data_gen.create_pretraining_data",
     ["--input_file=corpus.txt", "--output_file=out/x.tfrecord", "--vocab_file=vocab.txt",
      "--max_seq_length=long"], "--max_seq_length=long"),
    ("generate: unknown mode", "data_gen.create_pretraining_data",
     ["--input_file=corpus.txt", "--output_file=out/x.tfrecord", "--vocab_file=vocab.txt",
      "--mode=gpt"], "--mode=gpt: value should be one of <roberta|albert|bert|xlnet>"),
    ("build_vocab: vocab too small", "data_gen.tools.build_vocab",
     ["--input_file=corpus.txt", "--output_file=out/v.txt", "--vocab_size=10"],
     "Raise --vocab_size"),
    ("lcqmc_to_docs: eval split", "data_gen.tools.lcqmc_to_docs",
     ["--lcqmc_dir=.", "--output_file=out/docs.txt", "--splits=test"], "--allow_eval_splits"),
    ("inspect: negative count", "data_gen.tools.inspect_records", ["good.tfrecord", "-n", "-1"],
     "--num_records=-1"),
    ("pretrain: batch 0", "pretrain.run_pretraining",
     ["--bert_config_file=cfg.json", "--input_file=good.tfrecord", "--output_dir=out/p3",
      *PRETRAIN, "--train_batch_size=0"], "--train_batch_size must be >= 1"),
    ("pretrain: unknown optimizer", "pretrain.run_pretraining",
     ["--optimizer=sgd"], "--optimizer=sgd: value should be one of <adamw|lamb>"),
    ("pretrain: stray argument", "pretrain.run_pretraining",
     ["--bert_config_file=cfg.json", "stray"], "unexpected argument(s) stray"),
    ("pretrain: extra eval without NAME=", "pretrain.run_pretraining",
     ["--bert_config_file=cfg.json", "--input_file=good.tfrecord", "--output_dir=out/ev1",
      *PRETRAIN, "--do_eval", "--extra_eval_input_file=general.tfrecord"],
     "--extra_eval_input_file=general.tfrecord: expected NAME=GLOB"),
    ("pretrain: extra eval matching no file", "pretrain.run_pretraining",
     ["--bert_config_file=cfg.json", "--input_file=good.tfrecord", "--output_dir=out/ev2",
      *PRETRAIN, "--do_eval", "--extra_eval_input_file=general=no_such_*.tfrecord"],
     "no_such_*.tfrecord"),
    ("generate: eval share of 1", "data_gen.create_pretraining_data",
     ["--input_file=corpus.txt", "--output_file=out/e.tfrecord", "--vocab_file=vocab.txt",
      "--eval_share=1"], "--eval_share=1.0: must be in [0, 1)"),
    # unwritable outputs
    ("generate: output under a file", "data_gen.create_pretraining_data",
     ["--input_file=corpus.txt", "--output_file=a_file/x.tfrecord", "--vocab_file=vocab.txt"],
     "a_file is a file, not a directory"),
    ("pretrain: output under a file", "pretrain.run_pretraining",
     ["--bert_config_file=cfg.json", "--input_file=good.tfrecord", "--output_dir=a_file/run",
      *PRETRAIN], "--output_dir=a_file/run: cannot write there"),
    # a truncated record: named, with the flag to skip it
    ("pretrain: truncated record", "pretrain.run_pretraining",
     ["--bert_config_file=cfg.json", "--input_file=truncated.tfrecord", "--output_dir=out/p4",
      *PRETRAIN], "truncated.tfrecord: truncated record at byte"),
    # a non-finite loss
    ("pretrain: nan loss", "pretrain.run_pretraining",
     ["--bert_config_file=cfg.json", "--input_file=nan.tfrecord", "--output_dir=out/p5",
      *PRETRAIN], "training loss became nan at global step 1; stopped. Last checkpoint:"),
]

FULL_DISK = textwrap.dedent("""
    import errno, sys
    from data_gen.records import tfrecord_writer

    class FullDisk:
        def __init__(self, handle):
            self.handle, self.written = handle, 0
        def write(self, data):
            self.written += len(data)
            if self.written > 4096:
                raise OSError(errno.ENOSPC, "No space left on device")
            return self.handle.write(data)
        def __getattr__(self, name):
            return getattr(self.handle, name)

    opened = tfrecord_writer.AtomicFile.__init__
    def open_on_a_full_disk(self, *args, **kwargs):
        opened(self, *args, **kwargs)
        self.handle = FullDisk(self.handle)
    tfrecord_writer.AtomicFile.__init__ = open_on_a_full_disk
    from data_gen.create_pretraining_data import main
    sys.argv[0] = "zh-create-pretraining-data"
    main()
""")
GENERATE = ["--input_file=corpus.txt", "--vocab_file=vocab.txt", "--num_workers=1",
            "--dupe_factor=20", "--max_seq_length=16", "--noprogress"]


# The runs that build a model and train or read records: started first, so that the cheap
# refusals fill the other slots while they run.
# Refused while the flags, the config or the paths are checked, before a model is built:
# called in this process, as the console script calls main(). The pretraining cases that
# build a model and read records (and those under `ulimit -f`) are real subprocesses.
IN_PROCESS = ("pretrain: unknown optimizer", "pretrain: stray argument", "pretrain: batch 0",
              "pretrain: missing config", "pretrain: missing data",
              "pretrain: output under a file", "run_finetune: missing data",
              "pretrain: extra eval without NAME=", "pretrain: extra eval matching no file",
              "import_hf: missing model", "export_hf: missing checkpoint")
SLOW_FIRST = ("pretrain: nan loss", "pretrain: truncated record", "pretrain: skip corrupt records",
              "pretrain: file size limit")


def _file_size_limit():  # `ulimit -f`: the kernel refuses writes past 64 KiB (EFBIG)
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 16, 1 << 16))


@pytest.fixture(scope="module")
def results(work):
    commands = [(key, module_command(module, *args)) for key, module, args, _ in CASES
                if key not in IN_PROCESS]
    commands += [
        ("generate: disk full (ENOSPC)",
         [sys.executable, "-c", FULL_DISK, "--output_file=out/full.tfrecord", *GENERATE]),
        ("pretrain: skip corrupt records", module_command(
            "pretrain.run_pretraining", "--bert_config_file=cfg.json", "--output_dir=out/p6",
            "--input_file=truncated.tfrecord", "--skip_corrupt_records", *PRETRAIN)),
        # under `ulimit -f` (their own preexec_fn), in the same pool as the others
        ("generate: file size limit", module_command(
            "data_gen.create_pretraining_data", "--output_file=out/big.tfrecord", *GENERATE,
            "--dupe_factor=200"), None, _file_size_limit),
        ("generate: file size limit, workers", module_command(  # the workers write the output
            "data_gen.create_pretraining_data", "--output_file=out/big2.tfrecord", *GENERATE,
            "--dupe_factor=200", "--num_workers=2", "--chunk_bytes=1024"),
         None, _file_size_limit),
        ("pretrain: file size limit", module_command(
            "pretrain.run_pretraining", "--bert_config_file=cfg.json",
            "--input_file=good.tfrecord", "--output_dir=out/p7", *PRETRAIN),
         None, _file_size_limit),
    ]
    commands.sort(key=lambda command: command[0] not in SLOW_FIRST)  # stable otherwise
    found = run_parallel(commands, work)
    found.update({key: run_main_in_process(module, args, work)
                  for key, module, args, _ in CASES if key in IN_PROCESS})
    assert len(found) == len(CASES) + 5
    return found


@pytest.mark.parametrize("key,expected", [(key, text) for key, _, _, text in CASES])
def test_expected_failure_is_one_error_line(results, key, expected):
    line = _error_line(key, results[key])
    assert expected in line, f"{key}: {line!r} lacks {expected!r}"


def test_truncated_record_message_names_the_flag_and_the_skip_counts(results, work):
    code, _, err, _ = results["pretrain: truncated record"]
    assert "--skip_corrupt_records" in err and "after 24 good record(s)" in err
    code, out, err, _ = results["pretrain: skip corrupt records"]
    assert code == 0, err[-3000:]
    assert '"records_skipped_per_pass": 1' in err  # the account in the final `done:` line
    assert "1 of 1 input file(s) damaged" in err
    assert (work / "out" / "p6" / "model.ckpt-4.index").exists()


def test_full_disk_names_the_output_and_leaves_nothing(results, work):
    line = _error_line("generate: disk full (ENOSPC)", results["generate: disk full (ENOSPC)"])
    assert line.startswith("error: No space left on device: ") and "full.tfrecord" in line
    assert "free some space" in line
    line = _error_line("generate: file size limit", results["generate: file size limit"])
    assert "File too large" in line and "big.tfrecord" in line and "ulimit -f" in line
    line = _error_line("generate: file size limit, workers",
                       results["generate: file size limit, workers"])
    assert "File too large" in line and "/out/big2.tfrecord" in line and "ulimit -f" in line
    line = _error_line("pretrain: file size limit", results["pretrain: file size limit"])
    assert "--output_dir=out/p7" in line and "File too large" in line
    leftovers = [name for name in os.listdir(work / "out")
                 if name.startswith((".full", "full", ".big", "big", ".x", "x.", "v.", "docs"))]
    assert leftovers == []  # neither a final name nor a temporary file


def test_nan_stop_and_bad_inputs_write_no_data_output(results, work):
    assert not (work / "out" / "x.tfrecord").exists()
    assert not (work / "out" / "p3").exists()  # refused before any output
    assert not list((work / "out" / "p5").glob("model.ckpt-[1-9]*"))  # nothing after the NaN
def test_reduce_vocab_failures_are_one_error_line_with_exit_code_2(tmp_path):
    (tmp_path / "vocab.txt").write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\n你\n\n好\n",
                                        encoding="utf-8")
    outputs = ["--output_vocab_file=out/vocab.txt", "--output_keep_tokens_file=out/keep.json"]
    cases = {
        "error: --output_vocab_file is required to shrink a vocab (or pass "
        "--extend_from_corpus to extend a checkpoint's vocab)":
            ["--vocab_file=vocab.txt", "--token_file=tokens.txt"],
        "error: --extend_from_corpus needs --init_checkpoint":
            ["--extend_from_corpus=vocab.txt", "--output_dir=out/extended"],
        "error: pass --corpus_files or --token_file": ["--vocab_file=vocab.txt", *outputs],
        "error: --corpus_files=no_such_*.txt matched no file":
            ["--vocab_file=vocab.txt", "--corpus_files=no_such_*.txt", *outputs],
        "error: No such file or directory: missing.txt; check the path":
            ["--vocab_file=missing.txt", "--token_file=vocab.txt", *outputs],
        "error: vocab.txt:7: empty line in vocab file": ["--vocab_file=vocab.txt",
                                                          "--token_file=vocab.txt", *outputs],
    }
    found = run_parallel([(message, module_command("pretrain.checkpoints.vocab_surgery", *flags))
                          for message, flags in cases.items()], tmp_path)
    for message, result in found.items():
        assert _error_line(message, result).startswith(message)
    assert sorted(os.listdir(tmp_path)) == ["vocab.txt"]  # no output, not even a partial one
