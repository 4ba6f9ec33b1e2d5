# Sourced by the entry scripts (after SCRIPT_NAME is set): the interpreter, errors, the
# command-line convention and dry runs.

# The interpreter: $PYTHON, else the project's .venv (TensorFlow 2.15), else .venv-tf2.21,
# else python3 (REPO_ROOT set by the caller); exports PYTHONPATH and TF's log level for
# every tool the script runs.
choose_python() {
  if [[ -z "${PYTHON:-}" ]]; then
    if [[ -x "${REPO_ROOT}/.venv/bin/python" ]]; then PYTHON="${REPO_ROOT}/.venv/bin/python"
    elif [[ -x "${REPO_ROOT}/.venv-tf2.21/bin/python" ]]; then
      PYTHON="${REPO_ROOT}/.venv-tf2.21/bin/python"
    else PYTHON="$(command -v python3 || true)"; fi
  fi
  [[ -n "${PYTHON}" ]] || { echo "${SCRIPT_NAME}: error: no Python found; run 'make setup' or \
set PYTHON to a Python with the toolkit installed (3.9-3.11: TensorFlow 2.15; 3.12/3.13: 2.21)" \
>&2; exit 2; }
  export PYTHONPATH="${REPO_ROOT}${PYTHONPATH:+:${PYTHONPATH}}"
  export TF_CPP_MIN_LOG_LEVEL="${TF_CPP_MIN_LOG_LEVEL:-2}"
}

die() { echo "${SCRIPT_NAME}: error: $*" >&2; exit 2; }

# The scripts' one command-line convention: -h/--help prints usage (the script's own
# function), --dry_run sets DRY_RUN=1, anything else starting with - is refused, and the
# other arguments land in POSITIONAL (settings are environment variables).
parse_script_args() {
  POSITIONAL=()
  local argument
  for argument in "$@"; do
    case "${argument}" in
      -h|--help) usage; exit 0 ;;
      --dry_run) DRY_RUN=1 ;;
      -*) die "unknown option '${argument}' (see --help; settings are environment variables)" ;;
      *) POSITIONAL+=("${argument}") ;;
    esac
  done
}

# Runs a command, or with DRY_RUN=1 prints it (shell-quoted) instead.
run() { if [[ "${DRY_RUN:-0}" == "1" ]]; then printf '%q ' "$@"; printf '\n'; else "$@"; fi; }
