"""data_gen.runner.beam_pipeline --mode=xlnet on the DirectRunner writes the CLI's files byte for
byte, with the WordPiece vocab and with a sentencepiece model."""
import glob
import json
import os

import pytest

from tests.testutil import data_gen_runs as util
from tests.testutil.cli_runs import module_command, run_parallel, tool_env
from data_gen.config import GenerationConfig
from data_gen.create_pretraining_data import run

pytest.importorskip("apache_beam", reason="apache-beam is not installed (the .[beam] extra)")

# The sentencepiece run in 2 worker processes (the model file travels to them); the
# WordPiece run in-process, which is lighter (the suite's budget).
RUNNERS = {"spm": ["--runner=DirectRunner", "--direct_num_workers=2",
                   "--direct_running_mode=multi_processing"],
           "wordpiece": ["--runner=DirectRunner", "--direct_running_mode=in_memory"]}


def _flags(output, **tokenizer):
    settings = dict(output_file=str(output), mode="xlnet", max_seq_length=64,
                    max_predictions_per_seq=10, reuse_length=24, dupe_factor=2, random_seed=5,
                    chunk_bytes=4096, num_output_shards=3, compression="gzip")
    settings.update(tokenizer)
    return settings


def test_beam_writes_the_cli_xlnet_files(tmp_path):
    pytest.importorskip("sentencepiece", reason="the spm extra (pip install sentencepiece)")
    from tests.testutil import xlnet_data
    vocab = util.write_vocab(tmp_path)
    spm_model = xlnet_data.train_spm(tmp_path)
    inputs = tmp_path / "inputs"
    inputs.mkdir()
    util.write_corpus(inputs / "a.txt", util.documents(90, 3))
    util.write_corpus(inputs / "b.txt", util.documents(40, 2, offset=5), newline="\r\n")
    pattern = f"{inputs}/*.txt"
    tokenizers = {"wordpiece": dict(vocab_file=str(vocab)),
                  "spm": dict(spm_model_file=str(spm_model))}
    commands = []
    for name, tokenizer in tokenizers.items():
        (tmp_path / name / "beam").mkdir(parents=True)
        settings = _flags(tmp_path / name / "beam" / "train", input_file=pattern, **tokenizer)
        commands.append((name, module_command(
            "data_gen.runner.beam_pipeline", *[f"--{k}={v}" for k, v in settings.items()],
            "--noprogress", *RUNNERS[name])))
    results = run_parallel(commands, cwd=tmp_path, env=tool_env())
    for name, tokenizer in tokenizers.items():
        code, out, err, _ = results[name]
        assert code == 0, err[-3000:]
        assert "[data_gen] xlnet:" in out and "DirectRunner" in out
        (tmp_path / name / "cli").mkdir()
        run(GenerationConfig(input_file=pattern, num_workers=2, progress=False,
                             **_flags(tmp_path / name / "cli" / "train", **tokenizer)))
        cli = sorted(glob.glob(str(tmp_path / name / "cli" / "train-*-of-00003")))
        beam = sorted(glob.glob(str(tmp_path / name / "beam" / "train-*-of-00003")))
        assert len(cli) == 3 and [os.path.basename(p) for p in beam] == [
            os.path.basename(p) for p in cli]
        for cli_file, beam_file in zip(cli, beam):
            assert open(cli_file, "rb").read() == open(beam_file, "rb").read(), name
            cli_meta = json.load(open(cli_file + ".meta.json"))
            beam_meta = json.load(open(beam_file + ".meta.json"))
            for key in ("mode", "reuse_length", "xlnet_special_ids", "tokenizer", "vocab_sha256",
                        "file_counts", "max_token_id", "spm_model_file", "spm_model_sha256"):
                assert beam_meta.get(key) == cli_meta.get(key), (name, key)
            assert beam_meta["file_counts"]["instances"] > 10
            for key in ("instances", "xlnet_stream_tokens", "labels_1", "chunks"):
                assert beam_meta["run_counts"][key] == cli_meta["run_counts"][key], (name, key)
        assert cli_meta["tokenizer"] == ("sentencepiece" if name == "spm" else "wordpiece")
