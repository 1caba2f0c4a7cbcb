#!/usr/bin/env bash
# Paper 004 at the quick scale on one device machine (issue #37), run from the repository root
# there with the wheels in .whl and MNIST / Fashion-MNIST's files in .gpudata carried: the four
# main processes share the GPU (per dataset: DP-SGDA and PrivateDiff; the two SPIDERs and
# SCDRO), two probes try the SPIDER controls with another step size and difference clip.
# CSV rows go to $OUT as each fit ends.
set -uo pipefail
source scripts/gpu/device_env.sh
export OMP_NUM_THREADS=2
BUDGET=${BUDGET:-450}
nvidia-smi -L | tee "$OUT/device.txt"
run() {  # name, then dpdro_quick.py's arguments
  local name=$1; shift
  python3 scripts/gpu/dpdro_quick.py --budget-s "$BUDGET" --out "$OUT/$name.csv" "$@" \
    > "$OUT/$name.log" 2>&1 &
}
for data in mnist-st fashion-mnist-st; do
  run "${data}_sgda" --datasets "$data" --methods dp_sgda_dro privatediff_dro
  run "${data}_spider" --datasets "$data" --methods dp_double_spider dp_recursive_spider scdro
done
run probe_lr --datasets mnist-st --methods dp_double_spider dp_recursive_spider \
  --kinds control --set lr=0.03 --tag lr=0.03
run probe_c --datasets mnist-st --methods dp_double_spider dp_recursive_spider \
  --kinds control --set difference_clip=0.3 period=5 --tag c=0.3,period=5
wait
date
