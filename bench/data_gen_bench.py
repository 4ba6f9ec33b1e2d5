"""Throughput and peak memory of data_gen.create_pretraining_data, as JSON lines.

    python bench/data_gen_bench.py [EXTRA_CORPUS.txt ...] [--modes=roberta,albert,bert]
        [--workers=1,2] [--maskings=auto,span,macbert --similar_words_file=TSV] [--no-growth]

For every corpus (../shared/data/corpus/clue_small_sample.txt, then any given),
mode and worker count it runs the CLI in a subprocess with seq 128,
20 predictions, dupe_factor 5 and Google's Chinese vocab, and prints one JSON
line: input MB/s, instances/s, CPU seconds and peak memory, reported three ways:
`peak_pss_mb_total` samples /proc every 50 ms and sums the proportional set
size of parent + workers (pages that forked workers share with the parent
counted once: the memory the run really holds); `peak_rss_mb_total` sums
their RSS (shared pages counted in every process);
`peak_rss_mb_largest_process` is ru_maxrss from wait4 on the run (the largest
single process of its tree, as getrusage(RUSAGE_CHILDREN) reports it). A final run on the corpus repeated 3x shows whether
memory grows with corpus size. Missing inputs give a JSON "skipped" line.
The same-machine reference, google-research/bert's own script on the same
corpus and flags, is measured by bench/google_baseline.py --bench=data_gen.
"""
import json
import os
import subprocess
import sys
import tempfile
import threading
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)
from data_gen.records.metadata import metadata_path, read_metadata  # noqa: E402  (after the path)

SHARED = os.path.join(os.path.dirname(REPO), "shared", "data")
DEFAULT_CORPUS = os.path.join(SHARED, "corpus", "clue_small_sample.txt")
VOCAB = os.path.join(SHARED, "vocab", "bert_chinese_vocab.txt")
# 10x google-research/bert's create_pretraining_data.py on the CLUE sample, as
# bench/google_baseline.py measures it on this machine class (0.08-0.108 MB/s;
# `--bench=data_gen --paired` gives the ratio with both runs side by side).
TARGET_MB_PER_S = 1.08
TARGET_PEAK_MB = 500


def _emit(record):
    print(json.dumps(record, sort_keys=True), flush=True)


def _read_kb(path, field):
    with open(path) as handle:
        return int(next((line.split()[1] for line in handle if line.startswith(field)), "0"))


def _tree_memory_kb(root_pid):
    """(sum of VmRSS, sum of Pss) over root_pid and all its descendants (Linux /proc).

    RSS counts a page shared by forked workers once per process; PSS splits it
    between them, so the PSS sum is the memory the run really holds.
    """
    children = {}
    memory = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
            rss = _read_kb(f"/proc/{name}/status", "VmRSS:")
            pss = _read_kb(f"/proc/{name}/smaps_rollup", "Pss:")
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(int(fields[1]), []).append(int(name))
        memory[int(name)] = (rss, pss)
    rss_total = pss_total = 0
    stack = [root_pid]
    while stack:
        pid = stack.pop()
        rss, pss = memory.get(pid, (0, 0))
        rss_total += rss
        pss_total += pss
        stack.extend(children.get(pid, []))
    return rss_total, pss_total


def masking_flags(masking, similar_words=None):
    """The data_gen flags of one --masking recipe (macbert: its similar-words file)."""
    if masking == "macbert":
        if not similar_words:
            raise SystemExit("bench: --masking=macbert needs --similar_words_file=TSV")
        return (f"--masking={masking}", f"--similar_words_file={similar_words}")
    return (f"--masking={masking}",)


def run_once(corpus, mode, workers, out_dir, extra_flags=()):
    output = os.path.join(out_dir, f"{mode}-{workers}.tfrecord")
    command = [sys.executable, "-m", "data_gen.create_pretraining_data",
               f"--input_file={corpus}", f"--output_file={output}", f"--vocab_file={VOCAB}",
               f"--mode={mode}", "--max_seq_length=128", "--max_predictions_per_seq=20",
               "--dupe_factor=5", f"--num_workers={workers}", "--noprogress", *extra_flags]
    started = time.monotonic()
    log = tempfile.TemporaryFile(mode="w+")
    process = subprocess.Popen(command, cwd=REPO, stdout=log, stderr=subprocess.STDOUT, text=True)
    peak = [0, 0]  # RSS sum, PSS sum
    done = threading.Event()

    def sample():
        while not done.is_set():
            rss, pss = _tree_memory_kb(process.pid)
            peak[0], peak[1] = max(peak[0], rss), max(peak[1], pss)
            done.wait(0.05)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    # wait4 gives this run's own rusage: ru_maxrss = largest process of its tree.
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    seconds = time.monotonic() - started
    done.set()
    sampler.join()
    log.seek(0)
    output_text = log.read()
    log.close()
    if process.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed:\n{output_text}")
    meta = read_metadata(output)
    input_mb = os.path.getsize(corpus) / 1e6
    instances = meta["file_counts"]["instances"]
    os.remove(output)
    os.remove(metadata_path(output))
    return {
        "bench": "data_gen", "corpus": corpus, "mode": mode, "num_workers": workers,
        "input_mb": round(input_mb, 3), "seconds": round(seconds, 2),
        "input_mb_per_s": round(input_mb / seconds, 4),
        "instances": instances, "instances_per_s": round(instances / seconds, 1),
        "masked_tokens": meta["file_counts"]["masked_tokens"],
        "peak_rss_mb_total": round(peak[0] / 1024, 1),
        "peak_pss_mb_total": round(peak[1] / 1024, 1),
        "peak_rss_mb_largest_process": round(usage.ru_maxrss / 1024, 1),
        # CPU of the whole run (parent + workers): less sensitive to other load.
        "cpu_seconds": round(usage.ru_utime + usage.ru_stime, 2),
        "flags": "seq 128, 20 predictions, dupe_factor 5, over jieba words "
                 + " ".join(extra_flags),
        "masking": meta.get("masking", "wwm"),
        "target_mb_per_s_2_workers": TARGET_MB_PER_S, "target_peak_mb": TARGET_PEAK_MB,
    }


def main(argv):
    options = {"modes": "roberta,albert,bert", "workers": "1,2", "maskings": "auto",
               "similar_words_file": ""}
    corpora = []
    growth = True
    for arg in argv:
        if arg == "--no-growth":
            growth = False
        elif arg.startswith("--") and "=" in arg:
            key, value = arg[2:].split("=", 1)
            options[key] = value
        else:
            corpora.append(arg)
    if not os.path.exists(VOCAB):
        _emit({"bench": "data_gen", "skipped": f"Google vocab {VOCAB} not present"})
        return
    if os.path.exists(DEFAULT_CORPUS):
        corpora.insert(0, DEFAULT_CORPUS)
    else:
        _emit({"bench": "data_gen", "skipped": f"{DEFAULT_CORPUS} not present"})
    with tempfile.TemporaryDirectory(prefix="data_gen_bench_") as out_dir:
        for corpus in corpora:
            for mode in options["modes"].split(","):
                for workers in [int(w) for w in options["workers"].split(",")]:
                    for masking in options["maskings"].split(","):
                        flags = () if masking == "auto" else masking_flags(
                            masking, options["similar_words_file"])
                        _emit(run_once(corpus, mode, workers, out_dir, flags))
        if growth and corpora:
            tripled = os.path.join(out_dir, "corpus_x3.txt")
            with open(corpora[0], "rb") as source:
                data = source.read()
            with open(tripled, "wb") as target:
                for _ in range(3):
                    target.write(data.rstrip(b"\n") + b"\n\n")
            record = run_once(tripled, "roberta", 2, out_dir)
            record["note"] = "memory growth check: corpus repeated 3x"
            _emit(record)


if __name__ == "__main__":
    main(sys.argv[1:])
