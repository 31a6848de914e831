#!/usr/bin/env bash
# docs/performance.md's figures, in one sitting: every bench the README and that page
# quote, one after the other, so that their ratios come from the same hour of the same
# machine (this kind of machine drifts by a third from hour to hour).
#
#   bash bench/sitting.sh FSDD_RECORDINGS_DIR [OUT_DIR] [TF215_VENV]
#
# Run it from the repository root with nothing else running (about 15-30 minutes on
# 2 cores). Each bench's whole output goes to OUT_DIR/NAME.log (JSON where the bench
# writes one); its last lines are printed as it ends.
set -u
if [ $# -lt 1 ] || [ ! -d "$1" ]; then
  echo "usage: bash bench/sitting.sh FSDD_RECORDINGS_DIR [OUT_DIR] [TF215_VENV]" >&2
  echo "FSDD_RECORDINGS_DIR must be a folder of FSDD's WAV files (got '${1:-}')" >&2
  exit 2
fi
data_dir=$1
out=${2:-${TMPDIR:-/tmp}/bench-sitting}
python=${PYTHON:-.venv/bin/python}
venv_flag=()
if [ $# -ge 3 ]; then venv_flag=(--venv "$3"); fi
mkdir -p "$out"
echo "sitting: $(date -u '+%Y-%m-%d %H:%M:%S UTC'), commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"

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
run time_to_accuracy bench/time_to_accuracy.py --data_dir "$data_dir" --rounds 2 "${venv_flag[@]}" --json "$out/time_to_accuracy.json"
run startup bench/startup.py --rounds 6 "${venv_flag[@]}"
run pipeline bench/pipeline.py --data_dir "$data_dir" --json "$out/pipeline.json"
run memory bench/memory.py --data_dir "$data_dir"
run device_prefetch bench/device_prefetch.py --data_dir "$data_dir" --rounds 1
run overlap bench/overlap.py --data_dir "$data_dir" --rounds 5 --modes
run stages bench/stages.py --data_dir "$data_dir" --rounds 5
run ps_cluster bench/ps_cluster.py --rounds 3 "${venv_flag[@]}"
echo "sitting ended: $(date -u '+%H:%M:%S UTC')"
exit $failed
