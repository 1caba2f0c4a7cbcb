"""How long the Jagielski et al. 2019 rows of the DP-FERMI paper (Figs. 4 and 9, spec 001 §10;
issue #4's target: <= 60 minutes) take on this machine: every ``jagielski2019`` job of
``papers/dpfermi/experiments.yaml`` at the ``paper`` scale is fitted as the workflow's train rule
fits it (one batched program per job: seeds x tolerances) and timed. Only the fit is timed;
loading the prepared data, evaluation and the attack are the same for every method and small.
Jobs on datasets not available here are listed as skipped, not estimated.
"""

from __future__ import annotations

import time
from pathlib import Path

import torch

from dpminimax.algorithms import expand_runs, get_method
from dpminimax.data import DatasetNotFoundError, load_dataset
from dpminimax.experiments import expand_jobs, load_experiments
from dpminimax.kernels.allocator import retain_freed_memory

METHOD = "jagielski2019"
TARGET_MINUTES = 60.0


def jagielski_jobs(experiments_file: str | Path = "papers/dpfermi/experiments.yaml",
                   scale: str = "paper"):
    """The ``jagielski2019`` training jobs at ``scale``."""
    return [job for job in expand_jobs(load_experiments(experiments_file), scale)
            if job.method == METHOD]


def job_label(job) -> str:
    """``experiment/dataset/eps~epsilon``: how the benchmark names a job."""
    return f"{job.experiment}/{job.dataset}/eps~{job.epsilon}"


def run_jagielski_benchmark(experiments_file: str | Path = "papers/dpfermi/experiments.yaml",
                            scale: str = "paper") -> dict:
    """Seconds per job and in total, against :data:`TARGET_MINUTES`."""
    retain_freed_memory()
    timed, skipped, datasets = [], [], {}
    for job in jagielski_jobs(experiments_file, scale):
        if job.dataset not in datasets:  # each dataset is prepared once, not once per epsilon
            try:
                datasets[job.dataset] = load_dataset(job.dataset)
            except DatasetNotFoundError:
                datasets[job.dataset] = None
        if datasets[job.dataset] is None:
            skipped.append(job_label(job))
            continue
        runs = expand_runs(job.seeds, float(job.epsilon), job.delta, dict(job.params))
        start = time.perf_counter()
        get_method(METHOD).fit(datasets[job.dataset], runs, torch.device("cpu"))
        timed.append({"job": job_label(job), "runs": len(runs),
                      "seconds": time.perf_counter() - start})
    total = sum(row["seconds"] for row in timed)
    return {"jobs": timed, "skipped": skipped, "total_minutes": total / 60.0,
            "target_minutes": TARGET_MINUTES, "threads": torch.get_num_threads()}
