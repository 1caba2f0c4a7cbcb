"""How long the DP-FERMI paper's tabular grid (spec 001 §10 rows 1-7, without Jagielski et al.)
takes on this machine, from timed steps of one paper-scale batched program.

The grid's work is counted exactly from ``papers/dpfermi/experiments.yaml`` at the ``paper``
scale: per job, R runs (seeds x swept values) x T steps (ceil(epochs / q), q = batch / n_train) x
the expected batch, i.e. the number of per-example gradients it evaluates. One DP-FERMI program
(example-level mode, Adult, R = 90 runs = 15 seeds x 6 lambdas, batch 1024: a paper-scale job) is
timed for ``steps`` steps; its throughput in per-example gradients per second turns the work into
an estimated wall time. Every method is charged DP-FERMI's throughput (DP-FERMI's two privacy
modes are 2/3 of the work; the Tran et al. steps cost about the same per example).
"""

from __future__ import annotations

import functools
import math
import time
from pathlib import Path

import torch

from dpminimax.algorithms.base import expand_runs
from dpminimax.algorithms.dpfermi import DpFermi
from dpminimax.data import DatasetNotFoundError, load_dataset
from dpminimax.experiments import expand_jobs, load_experiments
from dpminimax.kernels.allocator import retain_freed_memory

#: Spec 001 §10 rows 1-7: the tabular figures (Jagielski et al. has its own, 60-minute target).
TABULAR_EXPERIMENTS = ("fig2_adult_dp", "fig7_credit_dp", "fig3_8_parkinsons_dp",
                       "fig6_retired_dp", "fig9_adult_eo", "fig4_credit_eo", "fig10_retired_eo")
EXCLUDED_METHODS = ("jagielski2019",)
#: Training rows of the datasets not available on the development machines (the deltas of
#: experiments.yaml are 1 / n_train^2 of these; spec 001 §4).
PAPER_N_TRAIN = {"parkinsons": 4_406, "retired-adult": 34_387}


def grid_work(experiments_file: str | Path = "papers/dpfermi/experiments.yaml",
              scale: str = "paper") -> dict[str, float]:
    """Per-example gradients of every job of :data:`TABULAR_EXPERIMENTS` at ``scale``, summed
    per method."""
    jobs = [job for job in expand_jobs(load_experiments(experiments_file), scale)
            if job.experiment in TABULAR_EXPERIMENTS and job.method not in EXCLUDED_METHODS]
    work: dict[str, float] = {}
    for job in jobs:
        runs = len(job.seeds) * math.prod(len(v) for v in job.params.values()
                                          if isinstance(v, list))
        n = _n_train(job.dataset)
        batch = job.params.get("batch_size", 1024)
        steps = math.ceil(job.params.get("epochs", 200) / min(1.0, batch / n))
        work[job.method] = work.get(job.method, 0.0) + runs * steps * min(batch, n)
    return work


@functools.cache
def _n_train(dataset: str) -> int:
    try:
        return len(load_dataset(dataset).y_train)
    except DatasetNotFoundError:
        return PAPER_N_TRAIN[dataset]


def time_fermi_program(runs: int = 90, batch: int = 1024, steps: int = 30,
                       warmup: int = 3) -> dict[str, float]:
    """Median seconds per step of one example-level DP-FERMI program on Adult."""
    retain_freed_memory()
    data = load_dataset("adult")
    specs = expand_runs(list(range(runs // 6)), 1.0, 1e-5, {
        "lam": [0.0, 1.0, 2.0, 5.0, 10.0, 20.0], "batch_size": batch, "epochs": 10**6})
    program, batches, *_ = DpFermi().build(data, specs, torch.device("cpu"))
    times = []
    for step in range(warmup + steps):
        start = time.perf_counter()
        program.step(*next(batches))
        if step >= warmup:
            times.append(time.perf_counter() - start)
    times.sort()
    return {"seconds_per_step": times[len(times) // 2], "runs": len(specs), "batch": batch,
            "example_gradients_per_second": len(specs) * batch / times[len(times) // 2]}


def run_fermi_grid_benchmark(steps: int = 30) -> dict:
    """The grid's work, the measured throughput and the estimated minutes (target <= 10)."""
    work = grid_work()
    timing = time_fermi_program(steps=steps)
    total = sum(work.values())
    minutes = total / timing["example_gradients_per_second"] / 60.0
    return {"work_per_method": work, "example_gradients": total, **timing,
            "estimated_minutes": minutes, "target_minutes": 10.0,
            "threads": torch.get_num_threads()}
