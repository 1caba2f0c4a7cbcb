#!/usr/bin/env bash
# The GPU checks of a session lent a device machine (run from the repository root there, with the
# wheels in .whl and MNIST's four files in .gpudata/mnist carried): the CUDA tests, the kernel
# benchmarks on CUDA, and one paper-scale network job, timed. Results go to $OUT.
set -uo pipefail
source scripts/gpu/device_env.sh
nvidia-smi -L | tee "$OUT/device.txt"
python3 -c "import torch; print(torch.__version__, torch.cuda.get_device_name())" | tee -a "$OUT/device.txt"
timeout 150 python3 -m pytest tests/gpu -q -p no:cacheprovider 2>&1 | tail -15 | tee "$OUT/gpu_tests.txt"
timeout 120 python3 -m dpminimax.cli bench kernels --repeats 30 > "$OUT/bench_kernels.json" 2> "$OUT/bench_kernels.err"
tail -c 1500 "$OUT/bench_kernels.json"
timeout 240 python3 scripts/gpu/paper_scale_job.py /tmp/paperjob "${EPOCHS:-0.5}" 2>&1 | tail -25 | tee "$OUT/paper_job.txt"
cp /tmp/paperjob/paper_scale_job.json "$OUT/" 2>/dev/null || true
