# Sourced by the entry scripts (after SCRIPT_NAME and DEPRECATED_SETTINGS=(OLD:NEW ...) are set):
# old setting names keep working, with one warning line each, and --help can list them.
deprecated() { echo "${SCRIPT_NAME}: warning: $1 is deprecated; use $2" >&2; }

deprecated_help() {
  local pair old new
  for pair in "${DEPRECATED_SETTINGS[@]}"; do
    old="${pair%%:*}"; new="${pair#*:}"
    printf '  %-30s -> %s\n' "${old} (--${old,,})" "${new} (--${new,,})"
  done
}

# An old name set in the environment warns and fills the new one, exported (the new name wins
# when both are set).
apply_deprecated_settings() {
  local pair old new
  for pair in "${DEPRECATED_SETTINGS[@]}"; do
    old="${pair%%:*}"; new="${pair#*:}"
    if [[ -n "${!old:-}" ]]; then
      deprecated "${old}" "${new}"
      [[ -n "${!new:-}" ]] || declare -gx "${new}=${!old}"  # exported: finetune.sh reads it
    fi
  done
}
