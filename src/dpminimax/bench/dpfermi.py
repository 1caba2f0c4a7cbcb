"""The DP-FERMI paper's benchmarks, their settings in the ``benchmarks:`` block of
papers/dpfermi/experiments.yaml.

``fermi_grid``: how long the tabular grid (Figs. 2-4, 6-9, without Jagielski et al.;
issue #4) takes here, from timed steps of every method's own paper-scale program. The grid's work
is counted exactly from experiments.yaml at the ``paper`` scale: per job, R runs (seeds x swept
values) x T steps (ceil(epochs / q), q = batch / n_train) x the expected batch, i.e. its
per-example gradients. Each method is timed on its own job of the settings' timing experiment
(Adult, Fig. 2; first epsilon) through its real ``fit`` (setup and calibration excluded), over at
least one epoch, and its work charged at its own throughput; other datasets' jobs at Adult's
per-example rate. The estimate errs on the fast side (denser rows elsewhere, per-job start-up and
Snakemake's work not charged; BENCHMARKS.md compares it with real runs). :func:`time_floor`
times the parts no step can skip, for a lower bound.

``jagielski``: every ``jagielski2019`` job (Figs. 4 and 9) at the ``paper`` scale, fitted as the
workflow's train rule fits it (one batched program per job) and timed; loading, evaluation and the
attack are not timed. Jobs on datasets not available here are listed as skipped, not estimated.
"""

from __future__ import annotations

import contextlib
import functools
import json
import math
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch

from dpminimax.algorithms import get_method
from dpminimax.algorithms.base import expand_runs
from dpminimax.bench.common import StopFit, benchmark_settings
from dpminimax.data import DatasetNotFoundError, load_dataset
from dpminimax.experiments import Job, expand_jobs, load_experiments
from dpminimax.kernels.allocator import retain_freed_memory

EXPERIMENTS_FILE = Path("papers/dpfermi/experiments.yaml")   # from the repository root


def grid_work(experiments_file: str | Path = EXPERIMENTS_FILE,
              scale: str = "paper") -> dict[str, float]:
    """Per-example gradients of every job of the grid (the ``fermi_grid`` settings'
    ``experiments`` less its ``exclude_methods``) at ``scale``, summed per method."""
    grid = benchmark_settings(experiments_file, "fermi_grid")
    jobs = [job for job in expand_jobs(load_experiments(experiments_file), scale)
            if job.experiment in grid["experiments"]
            and job.method not in grid["exclude_methods"]]
    work: dict[str, float] = {}
    for job in jobs:
        runs = len(job.seeds) * math.prod(len(v) for v in job.params.values()
                                          if isinstance(v, list))
        n = _loaded_n_train(job.dataset) or grid["n_train"][job.dataset]
        batch = job.params["batch_size"]
        steps = math.ceil(job.params["epochs"] / min(1.0, batch / n))
        work[job.method] = work.get(job.method, 0.0) + runs * steps * min(batch, n)
    return work


@functools.cache
def _loaded_n_train(dataset: str) -> int | None:
    """Training rows of ``dataset`` if it is on the search path (else the settings' paper
    number)."""
    try:
        return len(load_dataset(dataset).y_train)
    except DatasetNotFoundError:
        return None


def _timing_job(method: str, experiments_file: str | Path) -> Job:
    """The method's job of the settings' timing experiment at the paper scale, first epsilon."""
    experiment = benchmark_settings(experiments_file, "fermi_grid")["timing_experiment"]
    return next(job for job in expand_jobs(load_experiments(experiments_file), "paper")
                if job.experiment == experiment and job.method == method)


def time_method(method: str, steps: int = 30, warmup: int = 3,
                experiments_file: str | Path = EXPERIMENTS_FILE,
                runs: int | None = None, batch: int | None = None,
                ready: Callable[[], None] | None = None) -> dict[str, float]:
    """Mean seconds per step of ``method``'s paper-scale Adult program over at least one epoch
    of steps (``steps`` or more), so that work done once per epoch (PF-LD's full-data dual
    step) is charged too, after a warm-up of ``warmup`` steps and at least one epoch (a kernel
    first called at the epoch's end would otherwise be compiled inside the timed steps when
    numba's cache is cold: PF-LD read 24 ms per step instead of 2.5); optionally with only the
    first ``runs`` runs or another ``batch`` size, for quick checks. ``ready`` (if given) is
    called once after the warm-up, just before the timed steps
    (:func:`time_method_side_by_side` starts its jobs together there)."""
    retain_freed_memory()
    job = _timing_job(method, experiments_file)
    params = dict(job.params) if batch is None else {**job.params, "batch_size": batch}
    specs = expand_runs(job.seeds, float(job.epsilon), job.delta, params)[:runs]
    data = load_dataset(job.dataset)
    expected_batch = min(params["batch_size"], len(data.y_train))
    per_epoch = math.ceil(len(data.y_train) / expected_batch)
    steps = max(steps, per_epoch)
    warmup = max(warmup, per_epoch + 1)   # per-epoch work compiled before the timed steps
    stamps: list[float] = []

    def monitor(step, model, state) -> None:
        if ready is not None and len(stamps) == warmup:
            ready()
        stamps.append(time.perf_counter())
        if len(stamps) > warmup + steps:
            raise StopFit

    with contextlib.suppress(StopFit):
        get_method(method).fit(data, specs, torch.device("cpu"), monitor=monitor)
    seconds = (stamps[-1] - stamps[warmup]) / (len(stamps) - 1 - warmup)
    return {"seconds_per_step": seconds, "runs": len(specs), "batch": expected_batch,
            "steps_timed": len(stamps) - 1 - warmup,
            "example_gradients_per_second": len(specs) * expected_batch / seconds}


#: The start of every one-thread timing process: numba's pool sized before numba starts
#: (:mod:`dpminimax.threads`), torch on one thread.
_ONE_THREAD = """
import json, sys
from dpminimax.threads import reserve_threads
reserve_threads(1)
import torch
torch.set_num_threads(1)
"""

#: A one-thread job timing one method, started by :func:`time_method_side_by_side`: it says
#: "ready" after the warm-up and starts timing when it reads a line.
_SIDE_JOB = _ONE_THREAD + """
from dpminimax.bench.dpfermi import time_method

def ready():
    print("ready", flush=True)
    sys.stdin.readline()

print(json.dumps(time_method({method!r}, steps={steps}, runs={runs}, batch={batch},
                             ready=ready)), flush=True)
"""


def time_method_side_by_side(method: str, steps: int = 30, jobs: int = 2,
                             runs: int | None = None,
                             batch: int | None = None) -> dict[str, float]:
    """``method`` timed as the workflow's default profile runs it: ``jobs`` one-thread
    processes (numba pool and torch on one thread, :mod:`dpminimax.threads`) side by side, each
    :func:`time_method` (``steps``, ``runs``, ``batch``), warmed up, then timed from the same
    moment. The machine's throughput is the sum of theirs; ``seconds_per_step`` is their mean
    step time."""
    code = _SIDE_JOB.format(method=method, steps=steps, runs=runs, batch=batch)
    processes = [subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
                 for _ in range(jobs)]
    for process in processes:                     # every job warmed up ...
        if process.stdout.readline().strip() != "ready":
            raise RuntimeError(f"side-by-side timing job for {method!r} failed to start")
    for process in processes:                     # ... then all start timing at once
        process.stdin.write("go\n")
        process.stdin.flush()
    results = []
    for process in processes:
        out, _ = process.communicate()
        if process.returncode != 0:
            raise RuntimeError(f"side-by-side timing job for {method!r} failed")
        results.append(json.loads(out.strip().splitlines()[-1]))
    return {"seconds_per_step": sum(r["seconds_per_step"] for r in results) / jobs,
            "runs": results[0]["runs"], "batch": results[0]["batch"], "jobs": jobs,
            "steps_timed": min(r["steps_timed"] for r in results),
            "example_gradients_per_second": sum(r["example_gradients_per_second"]
                                                for r in results)}


def floor_parts(repeats: int = 200, experiments_file: str | Path = EXPERIMENTS_FILE) -> dict:
    """Milliseconds per step, on this process's threads, of the three parts no linear method's
    step can skip, on DP-FERMI's paper-scale Adult job (its R runs, batch 1,024, each run's own
    batch stream): drawing the Poisson batches (:func:`~dpminimax.kernels.sampling.poisson_batches`,
    torch's per-run streams), one pass over the sampled rows for the logits
    (:func:`~dpminimax.kernels.sparse_rows.sparse_logits`, one class as in binary logistic
    regression) and one pass accumulating the clipped rows
    (:func:`~dpminimax.kernels.sparse_rows.sparse_clipped_outer_sum`). No fairness terms, noise,
    update or per-job start-up. Every grid method's step measured here costs more than their
    sum (DP-FERMI's fused compiled pass does both row passes and its fairness terms: about 3.6
    ms for these batches, against about 2.6 for the two passes alone)."""
    from dpminimax.data.inputs import training_rows
    from dpminimax.kernels.sampling import poisson_batches
    from dpminimax.kernels.sparse_rows import sparse_clipped_outer_sum, sparse_logits
    from dpminimax.seeding import make_generator

    job = _timing_job("dpfermi", experiments_file)
    data = load_dataset(job.dataset)
    runs = len(expand_runs(job.seeds, float(job.epsilon), job.delta, job.params))
    n = len(data.y_train)
    q = min(1.0, job.params["batch_size"] / n)
    generators = [make_generator(r, "floor") for r in range(runs)]
    index, mask = poisson_batches(n, q, generators)
    rows = training_rows(data, torch.device("cpu")).take(index)
    dtype = rows.source.dtype
    weight = torch.randn(runs, 1, rows.source.shape[1], dtype=dtype)
    bias = torch.zeros(runs, 1, dtype=dtype)
    residual = torch.randn(*index.shape, 1, dtype=dtype)
    clip = torch.ones(runs, dtype=torch.float64)
    parts = {"batches": lambda: poisson_batches(n, q, generators),
             "logits": lambda: sparse_logits(weight, bias, rows),
             "accumulation": lambda: sparse_clipped_outer_sum(residual, rows, mask, clip)}
    timed = {}
    for name, part in parts.items():
        for _ in range(max(1, repeats // 10)):
            part()
        start = time.perf_counter()
        for _ in range(repeats):
            part()
        timed[name] = (time.perf_counter() - start) / repeats * 1e3
    return {"ms_per_step": timed, "runs": runs, "examples_per_step": int(mask.sum())}


#: :func:`floor_parts` in a one-thread process.
_FLOOR_JOB = _ONE_THREAD + """
from dpminimax.bench.dpfermi import floor_parts
print(json.dumps(floor_parts({repeats})), flush=True)
"""


def time_floor(repeats: int = 200, jobs: int = 2) -> dict:
    """A lower bound on the grid's time with ``jobs`` one-thread jobs side by side (or one
    process on ``jobs`` threads): :func:`floor_parts` timed in a one-thread process, per
    example gradient, times the grid's work (:func:`grid_work`), divided by ``jobs`` as if
    side-by-side jobs (threads) never slowed each
    other down (they do: the bound is generous). ``minutes_sampling_and_logits`` charges the
    batches and the logits pass only; ``minutes`` adds the clipped accumulation."""
    out = subprocess.run([sys.executable, "-c", _FLOOR_JOB.format(repeats=repeats)],
                         capture_output=True, text=True, check=True)
    parts = json.loads(out.stdout.strip().splitlines()[-1])
    per_example = {name: ms * 1e6 / parts["examples_per_step"]
                   for name, ms in parts["ms_per_step"].items()}      # nanoseconds
    work = sum(grid_work().values())

    def minutes(nanoseconds: float) -> float:
        return work * nanoseconds * 1e-9 / jobs / 60.0

    return {**parts, "ns_per_example": per_example, "jobs": jobs,
            "minutes_sampling_and_logits": minutes(per_example["batches"]
                                                   + per_example["logits"]),
            "minutes": minutes(sum(per_example.values()))}


def run_fermi_grid_benchmark(steps: int = 30, jobs: int | None = None) -> dict:
    """The grid's work per method, every method's measured throughput and the estimated
    minutes (against the settings' target): each method timed as one process on all of torch's
    threads, or, with ``jobs``, as that many one-thread jobs side by side (the workflow's
    default); and the floor no implementation on these kernels and streams can beat
    (:func:`time_floor`)."""
    work = grid_work()
    timing = {method: (time_method(method, steps=steps) if jobs is None
                       else time_method_side_by_side(method, steps=steps, jobs=jobs))
              for method in work}
    minutes = {method: work[method] / timing[method]["example_gradients_per_second"] / 60.0
               for method in work}
    return {"work_per_method": work, "example_gradients": sum(work.values()),
            "timing_per_method": timing, "minutes_per_method": minutes,
            "estimated_minutes": sum(minutes.values()),
            "target_minutes": benchmark_settings(EXPERIMENTS_FILE, "fermi_grid")["target_minutes"],
            "threads": 1 if jobs else torch.get_num_threads(), "jobs": jobs or 1,
            "floor": time_floor(jobs=jobs or torch.get_num_threads())}


def jagielski_jobs(experiments_file: str | Path = EXPERIMENTS_FILE, scale: str = "paper"):
    """The training jobs of the ``jagielski`` settings' method at ``scale`` in the settings'
    ``experiments`` (the paper's figures; not the cross-paper comparison)."""
    settings = benchmark_settings(experiments_file, "jagielski")
    return [job for job in expand_jobs(load_experiments(experiments_file), scale)
            if job.method == settings["method"]
            and job.experiment in settings["experiments"]]


def job_label(job) -> str:
    """``experiment/dataset/eps~epsilon``: how the benchmark names a job."""
    return f"{job.experiment}/{job.dataset}/eps~{job.epsilon}"


def run_jagielski_benchmark(experiments_file: str | Path = EXPERIMENTS_FILE,
                            scale: str = "paper") -> dict:
    """Seconds per job and in total, against the settings' ``target_minutes``."""
    settings = benchmark_settings(experiments_file, "jagielski")
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
        get_method(job.method).fit(datasets[job.dataset], runs, torch.device("cpu"))
        timed.append({"job": job_label(job), "runs": len(runs),
                      "seconds": time.perf_counter() - start})
    total = sum(row["seconds"] for row in timed)
    return {"jobs": timed, "skipped": skipped, "total_minutes": total / 60.0,
            "target_minutes": settings["target_minutes"], "threads": torch.get_num_threads()}
