#!/usr/bin/env bash
# docs/performance.md's figures in one run: the benches that the README and that
# page quote (all but the kill table's faults.py and startup's --packages row), one
# after the other, so that their ratios come from the same hour of the same machine
# (machines of this kind drift by a third from hour to hour).
#
#   bash bench/run_all.sh FSDD_RECORDINGS_DIR [OUT_DIR] [TF215_VENV]
#
# Run it with nothing else running (13 minutes on 2 cores on 2026-12-03).
# Without TF215_VENV, the first bench that needs TF 2.15 creates its default
# environment (a pip install) inside the run: create it before, or pass one.
# Each bench's whole output goes to OUT_DIR/NAME.log (and JSON where the bench writes
# one); its last lines are printed as it ends.
set -u
if [ $# -lt 1 ] || [ ! -d "$1" ]; then
  echo "usage: bash bench/run_all.sh FSDD_RECORDINGS_DIR [OUT_DIR] [TF215_VENV]" >&2
  echo "FSDD_RECORDINGS_DIR must be a folder of FSDD's WAV files (got '${1:-}')" >&2
  exit 2
fi
data_dir=$(cd "$1" && pwd)
out=${2:-${TMPDIR:-/tmp}/bench-all}
mkdir -p "$out" && out=$(cd "$out" && pwd)
venv_flag=()
if [ $# -ge 3 ]; then venv_flag=(--venv "$(realpath -m "$3")"); fi
# The benches are run as bench/NAME.py from the repository root, wherever this is called from.
cd "$(dirname "$0")/.."
python=${PYTHON:-.venv/bin/python}
echo "benches: $(date -u '+%Y-%m-%d %H:%M:%S UTC'), commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"

failed=0
run() {
  local name=$1; shift
  echo "== $name ($(date -u +%H:%M:%S))"
  if "$python" "$@" >"$out/$name.log" 2>&1; then
    tail -n 14 "$out/$name.log"
  else
    echo "$name failed (exit $?): see $out/$name.log"; failed=1
  fi
}
run vs_tf215 bench/vs_tf215.py --data_dir "$data_dir" --rounds 3 "${venv_flag[@]}" --json "$out/vs_tf215.json"
run time_to_accuracy bench/time_to_accuracy.py --data_dir "$data_dir" --rounds 3 "${venv_flag[@]}" --json "$out/time_to_accuracy.json"
run startup bench/startup.py --rounds 6 "${venv_flag[@]}"
run pipeline bench/pipeline.py --data_dir "$data_dir" --json "$out/pipeline.json"
run memory bench/memory.py --data_dir "$data_dir"
run device_prefetch bench/device_prefetch.py --data_dir "$data_dir" --rounds 1
run overlap bench/overlap.py --data_dir "$data_dir" --rounds 5 --modes
run stages bench/stages.py --data_dir "$data_dir" --rounds 5
run input_cache bench/input_cache.py --data_dir "$data_dir" --rounds 7
run ps_cluster bench/ps_cluster.py --rounds 3 "${venv_flag[@]}"
echo "benches ended: $(date -u '+%H:%M:%S UTC')"
exit $failed
