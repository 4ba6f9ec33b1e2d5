# Sourced by the entry scripts with their name as $1: chooses and exports the interpreter the
# script execs and its tools run with: $PYTHON, else the project's .venv (TensorFlow 2.15),
# else .venv-tf2.21, else python3; the checkout on PYTHONPATH, TensorFlow's C++ INFO lines off.
REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if [[ -z "${PYTHON:-}" ]]; then
  if [[ -x "${REPO_ROOT}/.venv/bin/python" ]]; then PYTHON="${REPO_ROOT}/.venv/bin/python"
  elif [[ -x "${REPO_ROOT}/.venv-tf2.21/bin/python" ]]; then
    PYTHON="${REPO_ROOT}/.venv-tf2.21/bin/python"
  else PYTHON="$(command -v python3 || true)"; fi
fi
[[ -n "${PYTHON}" ]] || { echo "$1: error: no Python found; run 'make setup' or set PYTHON to \
a Python with the toolkit installed (3.9-3.11: TensorFlow 2.15; 3.12/3.13: 2.21)" >&2; exit 2; }
export PYTHON PYTHONPATH="${REPO_ROOT}${PYTHONPATH:+:${PYTHONPATH}}"
export TF_CPP_MIN_LOG_LEVEL="${TF_CPP_MIN_LOG_LEVEL:-2}"
