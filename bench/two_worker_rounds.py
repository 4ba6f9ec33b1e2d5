"""How close 2 workers come to what two independent processes reach (data_gen_scale --corpora=two_workers).

A round runs four things on one corpus, in an order that rotates from round
to round (so that a machine getting slower or faster mid-run hits each alike):

  one             1 worker on the whole corpus;
  two             2 workers on the whole corpus;
  halves_side     two 1-worker processes at once, one per half (cut at the
                  blank line after the middle byte);
  halves_in_turn  the same two processes one after the other.

From one round's four wall times (whole processes, start-up included):
  speedup = one / two;
  ceiling = one / halves_side: what two independent processes, one per
    half, reach against one process alone; ratio = speedup / ceiling
    (= halves_side / two), how much of that the 2-worker run reaches;
  ceiling_in_turn = halves_in_turn / halves_side and ratio_in_turn =
    speedup / ceiling_in_turn = ratio * start_up_cap: the same against the
    halves run one after the other, which counts each process's fixed cost
    (interpreter, dictionary, final sync) twice, so even a 2-worker run as
    fast as halves_side reaches only start_up_cap = one / halves_in_turn.
With --baseline_repo (another checkout, its C extensions built) each round
also runs `one` and `two` from there, so both versions are timed in one run.
"""
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from common.file_utils import file_sha256
from process_tree import TreeSampler

CASES = ("one", "two", "halves_side", "halves_in_turn")
RATIOS = ("speedup", "ceiling", "ratio", "ceiling_in_turn", "ratio_in_turn", "start_up_cap")


def split_in_halves(corpus, work_dir):
    """Two files: the corpus up to the first blank line after its middle byte, and the rest."""
    with open(corpus, "rb") as handle:
        data = handle.read()
    cut = data.find(b"\n\n", len(data) // 2)
    cut = len(data) if cut < 0 else cut + 2
    halves = []
    for number, part in enumerate((data[:cut], data[cut:])):
        path = os.path.join(work_dir, f"half{number}.txt")
        with open(path, "wb") as out:
            out.write(part)
        halves.append(path)
    return halves


def _start(command, cwd):
    log = tempfile.TemporaryFile(mode="w+")
    process = subprocess.Popen(command, cwd=cwd, stdout=log, stderr=subprocess.STDOUT)
    sampler = TreeSampler(process.pid)
    sampler.start()
    return process, sampler, log


def _finish(process, sampler, log, command):
    _, status, usage = os.wait4(process.pid, 0)
    sampler.stop()
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        log.seek(0)
        raise RuntimeError(f"exit {code}: {' '.join(command)}\n{log.read()[-2000:]}")
    log.close()
    return usage.ru_utime + usage.ru_stime, max(sampler.peak_kb.values(), default=0)


def run_together(commands, cwd):
    """Runs the commands at once -> (wall seconds, cpu seconds, largest process peak RSS kB)."""
    started = time.monotonic()
    running = [(_start(command, cwd), command) for command in commands]
    results = [_finish(*handles, command) for handles, command in running]
    return (time.monotonic() - started, sum(cpu for cpu, _ in results),
            max(peak for _, peak in results))


class Rounds:
    """The commands of one corpus; `run_round(r)` -> one JSON record."""

    def __init__(self, corpus, base_command, work_dir, repo, baseline_repo=None):
        self.corpus, self.base, self.work_dir = corpus, base_command, work_dir
        self.repo, self.baseline_repo = repo, baseline_repo
        self.halves = split_in_halves(corpus, work_dir)
        self.digests = {}

    def _command(self, workers, corpus, output):
        return self.base + [f"--input_file={corpus}", f"--output_file={output}",
                            f"--num_workers={workers}"]

    def _case(self, case, cwd, tag):
        out_dir = tempfile.mkdtemp(prefix=f"{tag}_{case}_", dir=self.work_dir)
        try:
            if case in ("one", "two"):
                output = os.path.join(out_dir, "out.tfrecord")
                result = run_together([self._command(1 if case == "one" else 2, self.corpus,
                                                     output)], cwd)
                self.digests.setdefault((tag, case), file_sha256(output))
                return result
            commands = [self._command(1, half, os.path.join(out_dir, f"half{n}.tfrecord"))
                        for n, half in enumerate(self.halves)]
            if case == "halves_side":
                return run_together(commands, cwd)
            walls, cpus, peaks = zip(*(run_together([command], cwd) for command in commands))
            return sum(walls), sum(cpus), max(peaks)
        finally:
            shutil.rmtree(out_dir, ignore_errors=True)

    def run_round(self, number):
        cases = [(case, self.repo, "ours") for case in CASES]
        if self.baseline_repo:
            cases += [(case, self.baseline_repo, "baseline") for case in ("one", "two")]
        shift = number % len(cases)
        cases = cases[shift:] + cases[:shift]
        record = {"round": number, "order": [f"{tag}:{case}" for case, _, tag in cases]}
        for case, cwd, tag in cases:
            wall, cpu, peak_kb = self._case(case, cwd, tag)
            prefix = case if tag == "ours" else f"baseline_{case}"
            record[f"{prefix}_s"] = round(wall, 3)
            record[f"{prefix}_cpu_s"] = round(cpu, 2)
            record[f"{prefix}_peak_rss_mb_max_process"] = round(peak_kb / 1024, 1)
        record.update(ratios(record))
        return record

    def identical_outputs(self):
        """Whether every run of `one` and `two` (ours and the baseline's) wrote the same bytes."""
        return len(set(self.digests.values())) == 1


def ratios(record):
    one, two = record["one_s"], record["two_s"]
    side, in_turn = record["halves_side_s"], record["halves_in_turn_s"]
    speedup, ceiling, ceiling_in_turn = one / two, one / side, in_turn / side
    return {"speedup": round(speedup, 3), "ceiling": round(ceiling, 3),
            "ratio": round(speedup / ceiling, 3), "ceiling_in_turn": round(ceiling_in_turn, 3),
            "ratio_in_turn": round(speedup / ceiling_in_turn, 3),
            "start_up_cap": round(one / in_turn, 3)}


def summarize(records, identical):
    """Median and range over rounds of every ratio, and of the wall times."""
    summary = {"summary": True, "rounds": len(records), "identical_output": identical}
    keys = [key for key in records[0] if key.endswith("_s") or key in RATIOS]
    keys += [key for key in records[0] if key.endswith("_peak_rss_mb_max_process")]
    for key in keys:
        values = [record[key] for record in records]
        summary[key] = {"median": round(statistics.median(values), 3),
                        "min": min(values), "max": max(values)}
    medians = {key: summary[key]["median"] for key in ("one_s", "two_s", "halves_side_s",
                                                         "halves_in_turn_s")}
    summary["ratios_of_median_times"] = ratios(medians)
    for key in ("ratio", "ratio_in_turn"):
        summary[f"{key}_at_least_0.9_in_rounds"] = sum(record[key] >= 0.9 for record in records)
    return summary


def base_command(vocab, mode, dupe, seed):
    return [sys.executable, "-m", "data_gen.create_pretraining_data", f"--vocab_file={vocab}",
            f"--mode={mode}", "--max_seq_length=128", "--max_predictions_per_seq=20",
            f"--dupe_factor={dupe}", f"--random_seed={seed}", "--noprogress"]
