"""Smoke test of the kernel benchmark at tiny sizes (no timing assertions)."""

import math

from dpminimax.bench.kernels import run_kernel_benchmarks

RATIOS = [
    "lr_dp_over_nonprivate", "lr_opacus_over_dp", "cnn_dp_over_nonprivate",
    "cnn_opacus_over_dp", "batched_per_run_over_single",
]


def test_bench_smoke():
    result = run_kernel_benchmarks(
        repeats=2, device="cpu", warmup=1, lr_examples=256, lr_features=6, lr_batch=32,
        cnn_examples=64, cnn_batch=8, batched_runs=3,
    )
    for key in RATIOS:
        assert math.isfinite(result[key]) and result[key] > 0
    assert all(math.isfinite(v) for v in result["median_ms"].values())
    assert {"torch", "opacus", "device"} <= result.keys()
