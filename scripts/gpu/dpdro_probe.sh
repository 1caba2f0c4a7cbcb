#!/usr/bin/env bash
# Issue #37 probes on MNIST-ST after the quick-scale run (scripts/gpu/dpdro_quick.sh): DP
# Recursive-SPIDER and SCDRO (not reached there), and the step size of the controls, with Phi
# measured on 4,096 training rows. One combined CSV and log come back in $OUT.
set -uo pipefail
source scripts/gpu/device_env.sh
export OMP_NUM_THREADS=2
BUDGET=${BUDGET:-250}
mkdir -p /tmp/probe
run() {  # name, then dpdro_quick.py's arguments
  local name=$1; shift
  python3 scripts/gpu/dpdro_quick.py --budget-s "$BUDGET" --datasets mnist-st \
    --out "/tmp/probe/$name.csv" --curve-rows 4096 "$@" > "/tmp/probe/$name.log" 2>&1 &
}
run rs_private --methods dp_recursive_spider --kinds private --epsilons 1
run rs_control --methods dp_recursive_spider --kinds control
run scdro --methods scdro
run sgda_control --methods dp_sgda_dro --kinds control --tag lr=0.4
run sgda_control_lr --methods dp_sgda_dro --kinds control --set lr=0.1 --tag lr=0.1
run sgda_private_lr --methods dp_sgda_dro --kinds private --epsilons 1 --set lr=0.1 --tag lr=0.1
run ds_control_lr --methods dp_double_spider --kinds control --set lr=0.03 --tag lr=0.03
run pd_control_lr --methods privatediff_dro --kinds control --set lr=0.03 --tag lr=0.03
wait
python3 - <<'PY'
import csv, glob, os
rows = [r for f in sorted(glob.glob("/tmp/probe/*.csv")) for r in csv.DictReader(open(f))]
with open(os.environ["OUT"] + "/probe.csv", "w", newline="") as out:
    w = csv.DictWriter(out, rows[0].keys()); w.writeheader(); w.writerows(rows)
PY
tail -n 4 /tmp/probe/*.log > "$OUT/probe.log"
