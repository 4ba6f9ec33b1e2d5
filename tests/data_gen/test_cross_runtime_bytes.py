"""data_gen writes the same bytes on both runtimes (README): the vocab builder, the CLI in every
mode (C accelerators and pure Python, one and two workers, gzip, an eval split) and the Beam
pipeline on the DirectRunner run here under this interpreter and under the other runtime's
(.venv: Python 3.11, TensorFlow 2.15, numpy 1.26; .venv-tf2.21: Python 3.13/3.12, TensorFlow
2.21, numpy 2), from the same inputs, and every file they write (sidecars included) is compared
byte for byte. The Dask runner writes the CLI's bytes on each runtime
(tests/data_gen/runner/test_beam_dask.py), so it writes the same bytes on both as well.

The comparison is symmetric, so `make test` makes it once, in the TensorFlow 2.21 runtime's run
(Python >= 3.12); the 2.15 run says so. Skipped, with the reason, where the other runtime's
environment was not built (`make setup` builds it when its Python is found).
"""
import concurrent.futures
import os
import pathlib
import subprocess
import sys

import pytest

from tests.testutil.cli_runs import PARALLEL_RUNS, REPO_ROOT, RUNTIMES, TIMEOUT_SECONDS, other_runtime, tool_env

CORPUS_BYTES = 24000  # the head of the demo's corpus: ~90 documents
COMMON = ["--max_seq_length=64", "--max_predictions_per_seq=10", "--random_seed=7"]
# (case, module, flags, extra environment): each writes under out/ in its own folder
CASES = [
    ("roberta_wwm_2_workers_gzip_eval", "data_gen.create_pretraining_data",
     ["--mode=roberta", "--num_workers=2", "--chunk_bytes=4096", "--compression=gzip",
      "--num_output_shards=2", "--eval_share=0.1", "--dupe_factor=2"], {}),
    ("albert_ngram", "data_gen.create_pretraining_data",
     ["--mode=albert", "--masking=ngram", "--num_workers=1", "--dupe_factor=2"], {}),
    ("bert_span_pure_python", "data_gen.create_pretraining_data",
     ["--mode=bert", "--masking=span", "--num_workers=1"], {"ZH_PRETRAIN_PURE_PYTHON": "1"}),
    ("xlnet", "data_gen.create_pretraining_data",
     ["--mode=xlnet", "--reuse_length=16", "--num_workers=2", "--chunk_bytes=4096"], {}),
    ("beam_direct_runner", "data_gen.runner.beam_pipeline",
     ["--mode=roberta", "--num_output_shards=2", "--chunk_bytes=4096", "--dupe_factor=2",
      "--runner=DirectRunner"], {}),
]


def _files(folder):
    """{relative path: bytes} of every file under `folder`."""
    return {path.relative_to(folder).as_posix(): path.read_bytes()
            for path in sorted(pathlib.Path(folder).rglob("*")) if path.is_file()}


def _run_all(commands):
    """{key: (exit code, stderr, {file: bytes} of its folder)} of commands [(key, argv, folder,
    extra environment)], each run in its own folder (so that the relative paths its sidecars
    record are the same on both runtimes), PARALLEL_RUNS at a time."""
    def run_one(command):
        key, argv, folder, extra = command
        folder.mkdir(parents=True)
        done = subprocess.run(argv, cwd=folder, env=tool_env(**extra), capture_output=True,
                              text=True, timeout=TIMEOUT_SECONDS, check=False)
        return key, (done.returncode, done.stderr, _files(folder))

    with concurrent.futures.ThreadPoolExecutor(PARALLEL_RUNS) as pool:
        return dict(pool.map(run_one, commands))


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """{runtime: {case: (exit code, stderr, {file: bytes})}} for this and the other runtime."""
    other = other_runtime()
    if other is not None and sys.version_info < (3, 12):
        pytest.skip(f"compared from the other runtime's run ({other}): the check is symmetric")
    if other is None:
        pytest.skip("the other runtime's environment is not built (make setup builds "
                    f"{' and '.join(RUNTIMES)} where Python 3.11 and 3.13/3.12 are found); "
                    "the cross-runtime byte check needs both")
    root = tmp_path_factory.mktemp("cross_runtime")
    corpus = root / "corpus.txt"
    text = (REPO_ROOT / "data" / "sample" / "corpus_zh.txt").read_bytes()[:CORPUS_BYTES]
    corpus.write_bytes(text[:text.rfind(b"\n\n") + 1])  # whole documents only
    interpreters = {"this": sys.executable, "other": str(other)}
    results = _run_all([(f"{runtime}/vocab", [python, "-m", "data_gen.tools.build_vocab",
                                              f"--input_file={corpus}", "--vocab_size=3000",
                                              "--output_file=vocab.txt"],
                         root / runtime / "vocab", {})
                        for runtime, python in interpreters.items()])
    vocab = root / "this" / "vocab" / "vocab.txt"
    results.update(_run_all([
        (f"{runtime}/{case}", [python, "-m", module, f"--input_file={corpus}",
                               f"--vocab_file={vocab}", "--output_file=out/data.tfrecord",
                               *COMMON, *flags], root / runtime / case, extra)
        for runtime, python in interpreters.items() for case, module, flags, extra in CASES]))
    by_runtime = {runtime: {} for runtime in interpreters}
    for key, result in results.items():
        runtime, case = key.split("/")
        by_runtime[runtime][case] = result
    return by_runtime


@pytest.mark.parametrize("case", ["vocab"] + [case for case, _, _, _ in CASES])
def test_the_other_runtime_writes_the_same_files_byte_for_byte(runs, case):
    for runtime in ("this", "other"):
        code, err, files = runs[runtime][case]
        assert code == 0, f"{runtime} runtime, {case}: exit {code}\n{err[-3000:]}"
        assert files, f"{runtime} runtime, {case}: wrote nothing"
    mine, theirs = runs["this"][case][2], runs["other"][case][2]
    assert sorted(theirs) == sorted(mine)
    assert not [name for name in mine if os.path.basename(name).startswith(".")]
    differing = [name for name in mine if mine[name] != theirs[name]]
    assert differing == [], f"{case}: these files differ between the runtimes: {differing}"


def test_every_case_wrote_records_and_their_sidecars(runs):
    for case, _, flags, _ in CASES:
        files = runs["this"][case][2]
        records = [name for name in files if name.startswith("out/")
                   and not name.endswith(".meta.json")]
        shards = 2 if "--num_output_shards=2" in flags else 1
        splits = 2 if any(flag.startswith("--eval_share") for flag in flags) else 1
        assert len(records) == shards * splits, (case, sorted(files))
        assert all(f"{name}.meta.json" in files for name in records), (case, sorted(files))
        assert all(len(files[name]) > 1000 for name in records), case
