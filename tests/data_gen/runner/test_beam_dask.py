"""data_gen.runner.beam_pipeline --runner=DaskRunner on a dask.distributed cluster of separate
processes on 127.0.0.1 (`dask scheduler` and two `dask worker`s, started and stopped here):
the local CLI's bytes, shards and sidecars, in every mode; a worker killed in the middle of
the job loses nothing; bad input is one line and leaves nothing behind."""
import json
import os
import shutil
import subprocess
import sys

import pytest

from tests.testutil import data_gen_runs as util
from tests.testutil.cli_runs import (free_ports, module_command, run_main_in_process, run_parallel,
                          tool_env)

pytest.importorskip("apache_beam", reason="apache-beam is not installed (the .[beam] extra)")
pytest.importorskip("distributed", reason="dask.distributed is not installed (the .[dask] extra)")
from tests.testutil import dask_cluster  # noqa: E402  (needs distributed)
from data_gen.config import GenerationConfig  # noqa: E402
from data_gen.create_pretraining_data import run  # noqa: E402

# One flag set per mode, the flags of the other data_gen issues among them (an undecodable
# line skipped and counted, MacBERT's similar-words table on the workers, no compression).
MODES = {
    "roberta": dict(mode="roberta", compression="gzip"),
    "albert": dict(mode="albert", masking="macbert", similar_words_file="similar.tsv"),
    "bert": dict(mode="bert", compression="none", num_output_shards=2, eval_share=0.2),
    "xlnet": dict(mode="xlnet", reuse_length=24, compression="gzip"),
}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    started = dask_cluster.Cluster(str(tmp_path_factory.mktemp("dask_cluster")))
    try:
        started.wait_until_ready()
        yield started
    finally:
        started.stop()


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """A directory with a vocab, a similar-words table and four inputs: CRLF with a BOM,
    an empty file, one undecodable line."""
    directory = tmp_path_factory.mktemp("dask_corpus")
    util.write_vocab(directory)
    inputs = directory / "inputs"
    inputs.mkdir()
    util.write_corpus(inputs / "a.txt", util.documents(110, 4))
    util.write_corpus(inputs / "b.txt", util.documents(40, 3, offset=7), newline="\r\n", bom=True)
    (inputs / "c.txt").write_bytes(b"")
    util.write_corpus(inputs / "d.txt", util.documents(30, 3, offset=3))
    with open(inputs / "d.txt", "ab") as handle:
        handle.write(b"\n\xff\xfe not UTF-8\n")
    (directory / "similar.tsv").write_text("北京\t上海\n图书馆\t火车站\n天气\t政府\t经济\n",
                                           encoding="utf-8")
    return directory


def _settings(corpus, name, **overrides):
    settings = dict(input_file=f"{corpus}/inputs/*.txt", vocab_file=str(corpus / "vocab.txt"),
                    output_file=str(corpus / "out" / name / "train"), max_seq_length=64,
                    max_predictions_per_seq=10, dupe_factor=2, random_seed=7, chunk_bytes=4096,
                    num_output_shards=3, on_decode_error="skip", num_workers=1)
    settings.update(overrides)
    if "similar_words_file" in settings:
        settings["similar_words_file"] = str(corpus / settings["similar_words_file"])
    return settings


def _references(corpus, settings):
    """{name: the local CLI's files for settings[name], made where the Beam run will write
    (the sidecar holds the path) and moved to ref/NAME/}."""
    references = {}
    for name, flags in settings.items():
        output = corpus / "out" / name
        output.mkdir(parents=True)
        run(GenerationConfig(progress=False, **flags))
        references[name] = corpus / "ref" / name
        shutil.move(str(output), str(references[name]))
        output.mkdir()
    return references


def _beam_command(settings, *runner_args):
    return module_command("data_gen.runner.beam_pipeline",
                          *[f"--{k}={v}" for k, v in settings.items()], "--noprogress",
                          *runner_args)


def _files_under(folder):
    return sorted(os.path.relpath(os.path.join(root, file_name), folder)
                  for root, _, file_names in os.walk(folder) for file_name in file_names)


def _assert_same_files(reference, output, name):
    names = _files_under(reference)
    assert len(names) >= 4 and _files_under(output) == names, name  # nothing else left
    for file_name in names:
        with open(reference / file_name, "rb") as cli, open(output / file_name, "rb") as dask:
            assert dask.read() == cli.read(), (name, file_name)


def test_dask_writes_the_cli_bytes_in_every_mode(corpus, cluster):
    """Shards and sidecars (run_counts summed over both workers) as the CLI writes them for
    the same flags; the short runner name and Dask's own options need no import first."""
    settings = {name: _settings(corpus, name, **flags) for name, flags in MODES.items()}
    references = _references(corpus, settings)
    commands = [(name, _beam_command(settings[name], "--runner=DaskRunner",
                                     f"--dask_client_address={cluster.address}"))
                for name in MODES]
    results = run_parallel(commands, cwd=corpus, env=tool_env())
    for name in MODES:
        code, out, err, _ = results[name]
        assert code == 0, (name, err[-3000:])
        assert "DaskRunner" in out.splitlines()[-1], out
        _assert_same_files(references[name], corpus / "out" / name, name)
    meta = _meta(corpus / "out" / "albert" / "train-00000-of-00003")
    assert meta["run_counts"]["lines_skipped_invalid_utf8"] == 1
    assert meta["run_counts"]["files"] == 4 and meta["run_counts"]["empty_files"] == 1
    assert meta["run_counts"]["similar_words_words_kept"] == 3  # counted once, not per worker
    with cluster.client() as client:  # both workers made chunks
        assert all(client.run(dask_cluster.made_chunks).values())


def _meta(path):
    with open(f"{path}.meta.json", encoding="utf-8") as handle:
        return json.load(handle)


def test_a_lost_worker_loses_nothing(corpus, cluster, tmp_path):
    """One worker is killed (SIGKILL) as it writes the job's first piece, half of it on
    disk; Dask re-runs its tasks on the other worker and the files are the CLI's bytes."""
    settings = _settings(corpus, "lost-worker", mode="roberta", compression="gzip")
    reference = _references(corpus, {"lost-worker": settings})["lost-worker"]
    claim = tmp_path / "killed.pid"
    with cluster.client() as client:
        client.register_plugin(dask_cluster.KillOnFirstPiece(str(claim)))
        try:
            results = run_parallel([("dask", _beam_command(
                settings, "--runner=DaskRunner", f"--dask_client_address={cluster.address}"))],
                cwd=corpus, env=tool_env())
        finally:
            client.unregister_worker_plugin(dask_cluster.KillOnFirstPiece.name)
    code, out, err, _ = results["dask"]
    assert code == 0, err[-3000:]
    killed = int(claim.read_text())
    assert not os.path.exists(f"/proc/{killed}") or _is_zombie(killed)
    _assert_same_files(reference, corpus / "out" / "lost-worker", "lost-worker")
    assert "[data_gen] wrote:" in out


def _is_zombie(pid):
    with open(f"/proc/{pid}/stat") as handle:
        return handle.read().rsplit(")", 1)[1].split()[0] == "Z"


def test_dask_failures_are_one_line(corpus, cluster, tmp_path, monkeypatch):
    """A worker's input error, more undecodable lines than --max_unreadable_share, no
    scheduler at the address, an output folder nobody may write, --dask_* without the runner,
    no dask installed: each one `error:` line naming the cause and the fix, exit code 2, no
    traceback, nothing written."""
    bad = tmp_path / "bad.txt"
    bad.write_bytes("好句子\n".encode("utf-8") + b"\xff broken\n")
    out = tmp_path / "out"
    out.mkdir()

    def args(name, *runner_args, **overrides):
        settings = _settings(corpus, name, **dict(dict(mode="bert", output_file=str(out / name)),
                                                  **overrides))
        return [f"--{k}={v}" for k, v in settings.items()] + ["--noprogress", *runner_args]

    for name in ("DASK_LOGGING__DISTRIBUTED", "MALLOC_ARENA_MAX"):  # set by the in-process runs
        monkeypatch.delenv(name, raising=False)
    dask = ("--runner=DaskRunner", f"--dask_client_address={cluster.address}")
    port = free_ports(1)[0]
    # On the cluster, in a process of its own; the others stop before any work, in this one.
    results = run_parallel([
        ("worker_input", module_command("data_gen.runner.beam_pipeline", *args(
            "w", *dask, input_file=str(bad), on_decode_error="error"))),
        ("unreadable_share", module_command("data_gen.runner.beam_pipeline", *args(
            "x", *dask, input_file=str(bad), on_decode_error="skip")))], cwd=tmp_path)
    results["no_scheduler"] = run_main_in_process("data_gen.runner.beam_pipeline", args(
        "s", "--runner=DaskRunner", f"--dask_client_address=tcp://127.0.0.1:{port}"), tmp_path)
    results["unwritable"] = run_main_in_process("data_gen.runner.beam_pipeline", args(
        "u", *dask, output_file="/proc/zh_pretrain_test/train"), tmp_path)
    results["no_runner"] = run_main_in_process("data_gen.runner.beam_pipeline", args(
        "r", f"--dask_client_address={cluster.address}"), tmp_path)
    monkeypatch.setitem(sys.modules, "distributed", None)  # `import distributed` fails
    monkeypatch.delitem(sys.modules, "dask.distributed", raising=False)
    results["no_dask"] = run_main_in_process("data_gen.runner.beam_pipeline", args(
        "n", "--runner=DaskRunner"), tmp_path)
    expected = {
        "worker_input": f"{bad}: line 2 (byte offset 10): invalid UTF-8",
        "unreadable_share": "--max_unreadable_share",
        "no_scheduler": f"--dask_client_address=tcp://127.0.0.1:{port}: no Dask scheduler "
                        "answers there (Connection refused); start one with `dask scheduler`",
        "unwritable": "--output_file: cannot write /proc/zh_pretrain_test/.train-00000-of-00003"
                      ".beam-temp-",
        "no_runner": "--dask_client_address: options of the Dask runner, but the runner is "
                     "DirectRunner: add --runner=DaskRunner",
        "no_dask": "--runner=DaskRunner needs dask.distributed (",
    }
    for key, words in expected.items():
        code, _, err, _ = results[key]
        assert code == 2, (key, err[-2000:])
        last = err.strip().splitlines()[-1]
        assert last.startswith("error: ") and words in last, (key, err[-2000:])
        assert "Traceback" not in err, (key, err[-2000:])
    assert results["no_dask"][2].strip().endswith("): pip install 'zh-pretrain[dask]' (or "
                                                  "`pip install -e '.[dask]'` in a checkout)")
    assert os.listdir(out) == []  # no shard, no sidecar, no run folder


def test_workers_that_do_not_share_the_output_folder(corpus, cluster, tmp_path):
    """The command sees an output folder the workers do not (here: the command in a mount
    namespace of its own, a tmpfs over the folder; across hosts: a local disk): one line
    saying the folder must be shared, and nothing in the folder the workers see."""
    out = tmp_path / "out"
    out.mkdir()
    probe = subprocess.run(["unshare", "-m", "--propagation", "private", "true"],
                           capture_output=True, check=False)
    if probe.returncode != 0:
        pytest.skip("needs `unshare -m` (root in a Linux mount namespace) to give the command "
                    "a view of the output folder the workers do not share")
    settings = _settings(corpus, "unshared", mode="bert", output_file=str(out / "train"))
    inner = " ".join(f"'{arg}'" for arg in _beam_command(
        settings, "--runner=DaskRunner", f"--dask_client_address={cluster.address}"))
    results = run_parallel([("unshared", [
        "unshare", "-m", "--propagation", "private", "sh", "-c",
        f"mount -t tmpfs zh_pretrain_test '{out}' && exec {inner}"])],
        cwd=tmp_path, env=tool_env())
    code, _, err, _ = results["unshared"]
    assert code == 2, err[-2000:]
    last = err.strip().splitlines()[-1]
    assert last.startswith("error: ") and "does not exist on worker host" in last, err[-2000:]
    assert "must be on a file system that this machine and every worker share" in last
    assert "Traceback" not in err
    assert os.listdir(out) == []


def test_runner_names_and_task_size():
    """Beam's spellings of the runner become its full path; each Create element is a task of
    its own unless the user sizes Dask's partitions."""
    from data_gen.runner import beam_dask  # pylint: disable=import-outside-toplevel
    full = beam_dask.RUNNER_PATH
    assert beam_dask.prepare(["--runner", "DaskRunner"]) == [
        "--runner", full, "--dask_partition_size=1"]
    assert beam_dask.prepare(["--runner=dask", "--dask_npartitions=8"]) == [
        f"--runner={full}", "--dask_npartitions=8"]
    assert beam_dask.prepare([f"--runner={full}"]) == [f"--runner={full}",
                                                       "--dask_partition_size=1"]
    assert beam_dask.prepare(["--runner=DirectRunner", "--direct_num_workers=2"]) == [
        "--runner=DirectRunner", "--direct_num_workers=2"]
