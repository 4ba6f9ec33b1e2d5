"""Runs test files on each CPU kernel path this machine can take, and prints the margins.

    .venv/bin/python tests/testutil/kernel_paths.py tests/pretrain/models/test_modeling_numerics.py [more files]

Paths: Eigen (TF_ENABLE_ONEDNN_OPTS=0) and oneDNN capped at AVX2, at AVX-512
(ONEDNN_MAX_CPU_ISA=AVX512_CORE) and uncapped (avx512_bf16 / AMX kernels where the CPU has
them). Under the AVX2 cap, tests with bf16 in their id are deselected: TensorFlow still
sees the CPU's avx512_bf16 and sends bf16 matmuls to oneDNN, which aborts the process
under the cap (a real AVX2 CPU has no such kernels to choose). One JSON line per path: the pytest outcome, and each comparison's largest measured
difference against its bound (tests/testutil/float32_bounds.py, FLOAT32_BOUNDS_REPORT), worst
ratio first.
"""
import json
import os
import subprocess
import sys
import tempfile

PATHS = {
    "eigen": {"TF_ENABLE_ONEDNN_OPTS": "0"},
    "onednn_avx2": {"TF_ENABLE_ONEDNN_OPTS": "1", "ONEDNN_MAX_CPU_ISA": "AVX2",
                    "-k": "not bf16"},
    "onednn_avx512": {"TF_ENABLE_ONEDNN_OPTS": "1", "ONEDNN_MAX_CPU_ISA": "AVX512_CORE"},
    "onednn_default": {"TF_ENABLE_ONEDNN_OPTS": "1", "ONEDNN_MAX_CPU_ISA": "DEFAULT"},
}


def run(path_name, files):
    """(pytest's last line, [{test, what, measured_ulps, bound_ulps}] worst first)."""
    with tempfile.NamedTemporaryFile(suffix=".jsonl", delete=False) as report:
        report_path = report.name
    settings = dict(PATHS[path_name])
    selection = ["-k", settings.pop("-k")] if "-k" in settings else []
    env = dict(os.environ, FLOAT32_BOUNDS_REPORT=report_path, **settings)
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           *selection, *files], env=env, capture_output=True, text=True,
                          check=False)
    with open(report_path, encoding="utf-8") as lines:
        rows = [json.loads(line) for line in lines]
    os.unlink(report_path)
    rows.sort(key=lambda row: -row["measured_ulps"] / max(row["bound_ulps"], 1e-30))
    summary = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else done.stderr
    return summary, rows


def main(files):
    for path_name in PATHS:
        summary, rows = run(path_name, files)
        worst = rows[0] if rows else {}
        print(json.dumps({"path": path_name, "pytest": summary, "comparisons": len(rows),
                          "worst_ratio": round(worst.get("measured_ulps", 0)
                                               / max(worst.get("bound_ulps", 1), 1e-30), 4),
                          "worst": worst}, ensure_ascii=False), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:] or ["tests"])
