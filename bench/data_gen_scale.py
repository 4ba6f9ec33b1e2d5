"""Throughput and per-process peak memory of data generation on a small and a large corpus.

    python bench/data_gen_scale.py [--corpora=small,large,lcqmc,two_workers] [--only=local|beam]
        [--large_mb=200 | --large_corpus=PATH] [--mode=roberta] [--dupe_factor=1]
        [--small_dupe_factor=5] [--runs=1] [--keep]
        [--two_workers_mb=22 | --two_workers_corpus=PATH] [--rounds=5] [--baseline_repo=DIR]

--corpora=two_workers measures how close 2 workers come to two independent
1-worker processes on the corpus's halves, round by round (bench/
two_worker_rounds.py says how): bert mode, dupe 5, seq 128, on a corpus built
as the large one (--two_workers_mb) unless --two_workers_corpus gives one.

One JSON line per (corpus, runner): create_pretraining_data with
--num_workers=1 and 2, and data_gen.runner.beam_pipeline on Beam's DirectRunner
(multi_processing, --beam_workers SDK workers, each started through /bin/sh,
which shows as ~2 MB processes). Each run is a subprocess (--noprogress, seq
128, 20 predictions, fixed seed, Google's Chinese vocab) writing into a
temporary directory removed after the run. Wall time includes interpreter
(and Beam) start-up, which dominates on the 2 MB sample.

Memory: every 50 ms a sampler walks the run's process tree (via
/proc/PID/task/TID/children) and keeps each process's largest VmRSS:
`peak_rss_mb_max_process`, `peak_rss_mb_per_process` (sorted) and `processes`.
Forked workers share pages with their parent, which RSS counts in every
process; `peak_pss_mb_sum` (data_gen_bench's PSS sum over the tree, sampled
every 200 ms) counts them once. CPU seconds are user+sys of the whole tree
(wait4 rusage of the run, which includes the descendants it reaped).

Large corpus (unless --large_corpus gives one): built at run time in a
temporary directory and deleted at the end (unless --keep). It is a series of
copies; copy k holds every document of the CLUE sample with its sentences
shuffled, plus every 20th document (offset k mod 20) of the LCQMC train split
turned into documents by data_gen.tools.lcqmc_to_docs, all in an order shuffled
with seed (--seed, k). So no copy repeats another byte for byte, the text
stays ~80 % CLUE-like (comparable to the small corpus) and documents stay
blank-line separated. Copies are added until the file reaches --large_mb MB.

If --dupe_factor differs from --small_dupe_factor the small corpus is also run
at --dupe_factor, so the summary line compares like with like (large/small
MB/s at one dupe factor; start-up pushes it above 1) and says whether every
process stayed at or below 250 MB on the large corpus. Missing shared data or
beam_pipeline gives JSON "skipped" lines.
"""
import argparse
import collections
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

BENCH_DIR = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, BENCH_DIR)
import data_gen_bench  # noqa: E402  (puts the repo on sys.path too)
from data_gen_bench import REPO, SHARED, VOCAB, _emit  # noqa: E402
from data_gen.records.metadata import read_metadata  # noqa: E402
from process_tree import TreeSampler  # noqa: E402
import two_worker_rounds  # noqa: E402

SMALL_CORPUS = data_gen_bench.DEFAULT_CORPUS
LCQMC_TRAIN = os.path.join(SHARED, "lcqmc", "train.txt")
LIMIT_MB = 250
LCQMC_SLICES = 20
OUTPUT_BYTES_PER_INPUT_BYTE = 4  # per dupe pass, for the df check (roberta measured 2.2)
BENCH = "data_gen_scale"


def _output_totals(out_dir):
    """(instances summed over every F.meta.json, bytes of the data files) under out_dir."""
    instances = size = 0
    for folder, _, names in os.walk(out_dir):
        for name in names:
            path = os.path.join(folder, name)
            if name.endswith(".meta.json"):
                instances += read_metadata(path[:-len(".meta.json")])["file_counts"]["instances"]
            else:
                size += os.path.getsize(path)
    return instances, size


def run_once(runner, workers, corpus, dupe, mode, args, work_dir):
    """One run in a subprocess; returns its measurements (raises on failure)."""
    out_dir = tempfile.mkdtemp(prefix="out_", dir=work_dir)
    module = ("data_gen.runner.beam_pipeline" if runner == "beam_direct"
              else "data_gen.create_pretraining_data")
    command = [sys.executable, "-m", module, f"--input_file={corpus}",
               f"--output_file={os.path.join(out_dir, 'out.tfrecord')}", f"--vocab_file={VOCAB}",
               f"--mode={mode}", "--max_seq_length=128", "--max_predictions_per_seq=20",
               f"--dupe_factor={dupe}", f"--random_seed={args.seed}", "--noprogress"]
    if runner == "beam_direct":
        command += ["--runner=DirectRunner", f"--direct_num_workers={workers}",
                    "--direct_running_mode=multi_processing"]
    else:
        command.append(f"--num_workers={workers}")
    try:
        with tempfile.TemporaryFile(mode="w+") as log:
            started = time.monotonic()
            process = subprocess.Popen(command, cwd=REPO, stdout=log, stderr=subprocess.STDOUT)
            sampler = TreeSampler(process.pid)
            sampler.start()
            _, status, usage = os.wait4(process.pid, 0)
            wall = time.monotonic() - started
            process.returncode = os.waitstatus_to_exitcode(status)
            sampler.stop()
            if process.returncode != 0:
                log.seek(0)
                raise RuntimeError(f"exit {process.returncode}: {' '.join(command)}\n"
                                   + log.read()[-2000:])
        instances, output_bytes = _output_totals(out_dir)
    finally:
        shutil.rmtree(out_dir, ignore_errors=True)
    return {"wall": wall, "cpu": usage.ru_utime + usage.ru_stime, "instances": instances,
            "output_bytes": output_bytes, "per_process_kb": sorted(sampler.peak_kb.values()),
            "rss_sum_kb": sampler.peak_rss_sum_kb, "pss_sum_kb": sampler.peak_pss_sum_kb}


def measure(runner, workers, name, corpus, dupe, mode, args, work_dir):
    """--runs runs of one case -> the JSON record (min/median wall, max memory over runs)."""
    corpus_bytes = os.path.getsize(corpus)
    needed = corpus_bytes * dupe * OUTPUT_BYTES_PER_INPUT_BYTE + 100e6
    record = {"bench": BENCH, "corpus": name, "corpus_mb": round(corpus_bytes / 1e6, 2),
              "runner": runner, "workers": workers, "mode": mode, "dupe_factor": dupe}
    free = shutil.disk_usage(work_dir).free
    if free < needed:
        return dict(record, skipped=f"{free / 1e9:.1f} GB free in {work_dir}, "
                                    f"output needs ~{needed / 1e9:.1f} GB")
    try:
        runs = [run_once(runner, workers, corpus, dupe, mode, args, work_dir)
                for _ in range(args.runs)]
    except RuntimeError as error:
        return dict(record, error=str(error))
    walls = [run["wall"] for run in runs]
    worst = max(runs, key=lambda run: run["per_process_kb"][-1] if run["per_process_kb"] else 0)
    median = statistics.median(walls)
    per_process = [round(kb / 1024, 1) for kb in worst["per_process_kb"]]
    record.update({
        "runs": len(runs), "wall_seconds_min": round(min(walls), 2),
        "wall_seconds_median": round(median, 2),
        "input_mb_per_s": round(corpus_bytes / 1e6 / median, 4),
        "input_mb_per_s_best": round(corpus_bytes / 1e6 / min(walls), 4),
        "cpu_seconds": round(statistics.median(run["cpu"] for run in runs), 2),
        "peak_rss_mb_max_process": max(per_process, default=0.0),
        "peak_rss_mb_per_process": per_process, "processes": len(per_process),
        "peak_rss_mb_sum": round(max(run["rss_sum_kb"] for run in runs) / 1024, 1),
        "peak_pss_mb_sum": round(max(run["pss_sum_kb"] for run in runs) / 1024, 1),
        "output_bytes": runs[-1]["output_bytes"], "instances": runs[-1]["instances"],
        "within_limit_mb": max(per_process, default=0.0) <= LIMIT_MB, "limit_mb": LIMIT_MB,
    })
    return record


def _read_documents(path):
    """Documents (lists of sentence lines) of a blank-line-separated corpus."""
    documents, current = [], []
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            line = line.strip()
            if line:
                current.append(line)
            elif current:
                documents.append(current)
                current = []
    return documents + ([current] if current else [])


def build_large_corpus(path, target_mb, seed):
    """Writes the large corpus (see the module docstring); returns its number of copies."""
    from data_gen.tools import lcqmc_to_docs
    clue = _read_documents(SMALL_CORPUS)
    account = collections.Counter()
    pairs = lcqmc_to_docs.read_pairs(LCQMC_TRAIN, account, report=lambda message: None)
    lcqmc = lcqmc_to_docs.pairs_to_documents(pairs, account)
    written = copies = 0
    with open(path, "w", encoding="utf-8") as out:
        while written < target_mb * 1e6:
            rng = random.Random(f"{seed}-{copies}")
            documents = [rng.sample(doc, len(doc)) for doc in clue]
            documents += lcqmc[copies % LCQMC_SLICES::LCQMC_SLICES]
            rng.shuffle(documents)
            text = "\n\n".join("\n".join(doc) for doc in documents) + "\n\n"
            out.write(text)
            written += len(text.encode("utf-8"))
            copies += 1
    return copies


def _beam_unavailable():
    """Why data_gen.runner.beam_pipeline cannot be imported (None when it can)."""
    result = subprocess.run([sys.executable, "-c", "import data_gen.runner.beam_pipeline"], cwd=REPO,
                            capture_output=True, text=True)
    lines = result.stderr.strip().splitlines()
    return None if result.returncode == 0 else "import data_gen.runner.beam_pipeline failed: " + (
        lines[-1] if lines else f"exit {result.returncode}")


def summarize(results, large_dupe):
    """The final line: limit on the large corpus, large/small MB/s at the same dupe factor."""
    summary = {"bench": BENCH, "summary": True, "limit_mb": LIMIT_MB, "dupe_factor": large_dupe,
               "max_process_peak_mb": {}, "mb_per_s_ratio_large_to_small": {}}
    large = {key[2:]: rec for key, rec in results.items() if key[:2] == ("large", large_dupe)}
    small = {key[2:]: rec for key, rec in results.items() if key[:2] == ("small", large_dupe)}
    for case, record in large.items():
        label = f"{case[0]}-{case[1]}"
        summary["max_process_peak_mb"][label] = {"large": record["peak_rss_mb_max_process"]}
        if case in small:
            summary["max_process_peak_mb"][label]["small"] = small[case]["peak_rss_mb_max_process"]
            summary["mb_per_s_ratio_large_to_small"][label] = round(
                record["input_mb_per_s"] / small[case]["input_mb_per_s"], 3)
    summary["every_process_within_limit_on_large"] = (
        all(rec["within_limit_mb"] for rec in large.values()) if large else None)
    return summary


def measure_two_workers(args, work_dir):
    """--corpora=two_workers: a JSON line per round, then the summary; False on failure."""
    corpus = args.two_workers_corpus
    if not corpus:
        corpus = os.path.join(work_dir, "two_workers_corpus.txt")
        build_large_corpus(corpus, args.two_workers_mb, args.seed)
    record = {"bench": BENCH, "case": "two_workers", "corpus_mb":
              round(os.path.getsize(corpus) / 1e6, 2), "mode": "bert", "dupe_factor": 5}
    rounds = two_worker_rounds.Rounds(
        corpus, two_worker_rounds.base_command(VOCAB, "bert", 5, args.seed), work_dir, REPO,
        args.baseline_repo)
    records = []
    try:
        for number in range(args.rounds):
            records.append(rounds.run_round(number))
            _emit(dict(record, **records[-1]))
    except RuntimeError as error:
        _emit(dict(record, error=str(error)))
        return False
    _emit(dict(record, **two_worker_rounds.summarize(records, rounds.identical_outputs())))
    return True


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpora", default="small,large",
                        help="comma-separated: small (CLUE sample), large (built), lcqmc "
                             "(LCQMC train as documents, bert, dupe 5), two_workers (rounds "
                             "against two processes on the halves)")
    parser.add_argument("--only", choices=("local", "beam"), help="only these runners")
    parser.add_argument("--large_mb", type=float, default=200, help="size of the built corpus")
    parser.add_argument("--large_corpus", help="use this file as the large corpus (kept)")
    parser.add_argument("--mode", default="roberta", choices=("roberta", "albert", "bert"))
    parser.add_argument("--dupe_factor", type=int, default=1, help="dupe factor, large corpus")
    parser.add_argument("--small_dupe_factor", type=int, default=5)
    parser.add_argument("--beam_workers", type=int, default=2)
    parser.add_argument("--seed", type=int, default=12345)
    parser.add_argument("--runs", type=int, default=1, help="repeats of each measurement")
    parser.add_argument("--keep", action="store_true", help="keep the built large corpus")
    parser.add_argument("--two_workers_mb", type=float, default=22,
                        help="size of the corpus built for --corpora=two_workers")
    parser.add_argument("--two_workers_corpus", help="use this file for --corpora=two_workers")
    parser.add_argument("--rounds", type=int, default=5, help="rounds of --corpora=two_workers")
    parser.add_argument("--baseline_repo",
                        help="another checkout (C extensions built) timed in every round too")
    args = parser.parse_args(argv)
    corpora = [name.strip() for name in args.corpora.split(",") if name.strip()]
    missing = [path for path in (VOCAB, SMALL_CORPUS) if not os.path.exists(path)]
    if (("large" in corpora and not args.large_corpus)
            or ("two_workers" in corpora and not args.two_workers_corpus)):
        if not os.path.exists(LCQMC_TRAIN):
            missing.append(LCQMC_TRAIN)
    if missing:
        for path in missing:
            _emit({"bench": BENCH, "skipped": f"{path} not present"})
        return 0
    runners = []
    if args.only != "beam":
        runners += [("local", 1), ("local", 2)]
    if args.only != "local":
        reason = _beam_unavailable()
        if reason:
            _emit({"bench": BENCH, "runner": "beam_direct", "skipped": reason})
        else:
            runners.append(("beam_direct", args.beam_workers))
    work_dir = tempfile.mkdtemp(prefix="data_gen_scale_")
    keep_dir = args.keep and not args.large_corpus
    results, failed = {}, False
    try:
        cases = []
        if "small" in corpora:
            cases.append(("small", SMALL_CORPUS, args.small_dupe_factor, args.mode))
            if "large" in corpora and args.dupe_factor != args.small_dupe_factor:
                cases.append(("small", SMALL_CORPUS, args.dupe_factor, args.mode))  # for the ratio
        if "lcqmc" in corpora and not os.path.exists(LCQMC_TRAIN):
            _emit({"bench": BENCH, "corpus": "lcqmc", "skipped": f"{LCQMC_TRAIN} not present"})
        elif "lcqmc" in corpora:
            # The scaling case: LCQMC train pairs as documents (11.5 MB), bert, dupe 5.
            lcqmc = os.path.join(work_dir, "lcqmc_docs.txt")
            subprocess.run([sys.executable, "-m", "data_gen.tools.lcqmc_to_docs",
                            f"--lcqmc_dir={os.path.dirname(LCQMC_TRAIN)}",
                            f"--output_file={lcqmc}"], cwd=REPO, check=True,
                           capture_output=True)
            cases.append(("lcqmc", lcqmc, 5, "bert"))
        if "large" in corpora:
            large = args.large_corpus
            if not large:
                free = shutil.disk_usage(work_dir).free
                if free < args.large_mb * 1e6 + 1e9:
                    _emit({"bench": BENCH, "corpus": "large", "skipped":
                           f"{free / 1e9:.1f} GB free in {work_dir}"})
                    large = None
                else:
                    large = os.path.join(work_dir, "large_corpus.txt")
                    started = time.monotonic()
                    copies = build_large_corpus(large, args.large_mb, args.seed)
                    _emit({"bench": BENCH, "built_corpus": large, "copies": copies,
                           "corpus_mb": round(os.path.getsize(large) / 1e6, 2),
                           "build_seconds": round(time.monotonic() - started, 1)})
            if large:
                cases.append(("large", large, args.dupe_factor, args.mode))
        for name, corpus, dupe, mode in cases:
            for runner, workers in runners:
                record = measure(runner, workers, name, corpus, dupe, mode, args, work_dir)
                base = results.get((name, dupe, "local", 1))
                if (runner, workers) != ("local", 1) and base and "input_mb_per_s" in record:
                    record["speedup_vs_local_1_worker"] = round(
                        base["wall_seconds_median"] / record["wall_seconds_median"], 3)
                failed |= "error" in record
                if "input_mb_per_s" in record:
                    results[(name, dupe, runner, workers)] = record
                _emit(record)
        if "large" in corpora:
            _emit(summarize(results, args.dupe_factor))
        if "two_workers" in corpora:
            failed |= not measure_two_workers(args, work_dir)
    finally:
        if keep_dir:
            _emit({"bench": BENCH, "kept": work_dir})
        else:
            shutil.rmtree(work_dir, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
