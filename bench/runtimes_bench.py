"""Both runtimes side by side in one run: JSON lines per runtime and training loop.

    python bench/runtimes_bench.py                   # step times and examples/s, 3 rounds
    python bench/runtimes_bench.py --demo --rounds 1 # and `make demo`'s wall time per runtime

The runtimes are the environments `make setup` builds (.venv: TensorFlow 2.15, whose
Estimator and session loop are both measured; .venv-tf2.21: the session loop); --pythons
names others. Each round runs, in every runtime in turn, bench/training_loop_bench.py
(the tiny pretraining step) and bench/finetune_bench.py (tiny classification, train and
predict), one repeat each, and with --demo the whole of scripts/demo.sh in a scratch
folder; rounds alternate the runtimes so that a busy moment of the machine shows up as
spread instead of deciding the comparison. Each measurement's line comes last as the
median over rounds with its min and max.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_PYTHONS = (".venv/bin/python", ".venv-tf2.21/bin/python")


def _lines(command, env=None):
    """The JSON lines a bench command prints (a failure stops the run with its output)."""
    done = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True)
    if done.returncode:
        sys.exit(f"{' '.join(command)} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]


def _runtime(python):
    out = subprocess.run([python, "-c", "import sys, tensorflow as tf; "
                          "print(tf.__version__, sys.version.split()[0])"],
                         capture_output=True, text=True, check=True,
                         env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
    tensorflow, version = out.stdout.split()[-2:]
    return f"tf{tensorflow}-py{version}"


def measure(python, demo, work_dir):
    """{(measurement, training loop): value} of one round in one runtime."""
    values = {}
    for line in _lines([python, "bench/training_loop_bench.py", "--quick", "--repeats", "1"]):
        if "training_loop" in line:
            values[("pretraining_seconds_per_step", line["training_loop"])] = \
                line["seconds_per_step"]
    for line in _lines([python, "bench/finetune_bench.py", "--quick", "--shapes", "tiny",
                        "--tasks", "classification"]):
        values[(f"finetune_{line['phase']}_examples_per_second", line["training_loop"])] = \
            line["examples_per_second"]
    if demo:
        env = dict(os.environ, PYTHON=os.path.abspath(python),
                   DEMO_DIR=tempfile.mkdtemp(dir=work_dir))
        start = time.perf_counter()
        done = subprocess.run(["bash", "scripts/demo.sh"], cwd=REPO, env=env,
                              capture_output=True, text=True)
        if done.returncode:
            sys.exit(f"scripts/demo.sh with {python} failed:\n{done.stderr[-3000:]}")
        values[("demo_seconds", "auto")] = round(time.perf_counter() - start, 1)
    return values


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pythons", default=",".join(
        p for p in DEFAULT_PYTHONS if os.path.exists(os.path.join(REPO, p))))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--demo", action="store_true", help="also time scripts/demo.sh")
    args = parser.parse_args(argv)
    pythons = [p for p in args.pythons.split(",") if p]
    if not pythons:
        parser.error("no runtime: run `make setup` or pass --pythons")
    names = {python: _runtime(python) for python in pythons}
    samples = {}
    with tempfile.TemporaryDirectory(prefix="runtimes_bench_") as work_dir:
        for round_index in range(args.rounds):
            for python in pythons:
                for (measurement, loop), value in measure(python, args.demo, work_dir).items():
                    samples.setdefault((names[python], measurement, loop), []).append(value)
                    print(json.dumps({"bench": "runtimes", "round": round_index,
                                      "runtime": names[python], "training_loop": loop,
                                      "measurement": measurement, "value": value}), flush=True)
    for (runtime, measurement, loop), values in sorted(samples.items()):
        print(json.dumps({"bench": "runtimes", "runtime": runtime, "training_loop": loop,
                          "measurement": measurement, "rounds": len(values),
                          "median": statistics.median(values), "min": min(values),
                          "max": max(values), "cpu_count": os.cpu_count(),
                          "at": time.strftime("%Y-%m-%dT%H:%M:%S")}), flush=True)


if __name__ == "__main__":
    main()
