"""The RaCO-DP paper's benchmarks, their settings in the ``benchmarks:`` block of
papers/racodp/experiments.yaml.

``table2``: Table 2 as ratios, the per-step time of SGD, DP-SGD, RaCO-DP and DP-FERMI in one
process. Absolute times depend on hardware and JIT; the ratios RaCO-DP / DP-SGD (paper 1.7x,
target <= 2x) and DP-SGD / SGD are what we reproduce. All are our batched programs with R = 1 on
the same data: SGD is the DP-SGD program with C = inf and no noise, RaCO-DP adds the noisy
histogram, the constraint weights and the dual step (demographic parity, binary group), DP-FERMI
is our Algorithm 1 (example-level DP mode; the issue's target is <= 3x DP-SGD). The paper timed
the released per-sample DP-FERMI loop instead, so its DP-FERMI claims are not filled.

``tuning``: how long the App. E.2 tuning protocol of Fig. 4 takes (issue #3), on the tuned
``racodp`` jobs of ``fig4_dp`` at the ``paper`` scale, with ``configs`` phase-1 configurations.
Mode ``full`` runs each job as the workflow does (``api.tune``, ``select_configs``, ``train``
on data prepared in a temporary directory) and times each phase. Mode ``estimate`` fits each
phase-1 batch-size group through the real ``fit``, times ``steps`` steps and extrapolates (setup
+ median step x T + evaluations); phase 2 is taken pessimistically (every cell chose the costliest
configuration, trained as a program of its own). Neither times preparing the data.
"""

from __future__ import annotations

import math
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path

import torch

from dpminimax import api
from dpminimax.algorithms import get_method
from dpminimax.algorithms.base import RunSpec
from dpminimax.algorithms.baselines.noisy_sgd import NoisySgd
from dpminimax.algorithms.fair.dpfermi import DpFermi
from dpminimax.algorithms.fair.racodp import RacoDp, RacoDpProgram, racodp_releases
from dpminimax.atomic import write_json
from dpminimax.bench.common import StopFit, benchmark_settings, interleaved_medians
from dpminimax.data import PreparedDataset, load_dataset, load_prepared
from dpminimax.epsilon import Epsilon
from dpminimax.experiments import expand_jobs, load_experiments
from dpminimax.kernels.allocator import retain_freed_memory
from dpminimax.kernels.gather import RowGatherer
from dpminimax.models.batched import BatchedLogisticRegression
from dpminimax.privacy.release import BatchedRelease, Release
from dpminimax.provenance import code_fingerprint
from dpminimax.report.claims.reference import load_claims
from dpminimax.tuning.protocol import (
    TuningSpec,
    cell_grid,
    checkpoint_selector,
    fixed_params,
    phase1_runs,
    program_groups,
    split_validation,
)

EXPERIMENTS_FILE = Path("papers/racodp/experiments.yaml")   # from the repository root
#: Table 2's claims (papers/racodp/claims.yaml) that the benchmark measures, by ``measure.metric``
#: (the DP-FERMI ones are the released code's times, which we do not run).
MEASURED_CLAIMS = ("median_ms.sgd", "median_ms.dp_sgd", "median_ms.racodp", "racodp_over_dp_sgd")


def run_racodp_benchmark(dataset: str = "adult", repeats: int | None = None,
                         batch: int | None = None, *, data: PreparedDataset | None = None,
                         experiments_file: str | Path = EXPERIMENTS_FILE) -> dict:
    """Median per-step ms of SGD, DP-SGD, RaCO-DP and DP-FERMI on ``dataset``, their ratios and
    the paper's; ``repeats`` and ``batch`` default to the ``table2`` settings."""
    settings = benchmark_settings(experiments_file, "table2")
    repeats = settings["repeats"] if repeats is None else repeats
    batch = settings["batch_size"] if batch is None else batch
    retain_freed_memory()
    data = data if data is not None else load_dataset(dataset)
    device = torch.device("cpu")
    x = torch.as_tensor(data.x_train)
    y = torch.as_tensor(data.y_train)
    q = batch / len(y)
    model = BatchedLogisticRegression(x.shape[1], num_classes=2)
    one = torch.ones(1)

    def noisy_sgd(clip: float, sigma: float) -> NoisySgd:
        release = BatchedRelease([Release("gradient", "gaussian", sigma, clip)])
        return NoisySgd(model, RowGatherer(x), y, [0], lr=one, release=release, q=q,
                        steps=1 << 30)

    method = RacoDp()
    params = method.resolve({"batch_size": batch})
    releases = racodp_releases(q, method.privacy_plan(params, len(y))[1], params["clip"], 1 << 30)
    program = RacoDpProgram(model, data, [method.constraint_set(params, data)], [0], [params],
                            [releases], device=device)
    fermi, *_ = DpFermi().build(
        data, [RunSpec(0, 1.0, 1e-5, {"batch_size": batch, "epochs": 10**6})], device)
    steps = {"sgd": noisy_sgd(math.inf, 0.0).step, "dp_sgd": noisy_sgd(1.0, 1.0).step,
             "racodp": program.step, "dpfermi": fermi.step}
    ms = interleaved_medians(steps, repeats, warmup=10, device=device)
    paper = paper_table2_ms(experiments_file).get(dataset)
    return {
        "racodp_over_dp_sgd": ms["racodp"] / ms["dp_sgd"],
        "dpfermi_over_dp_sgd": ms["dpfermi"] / ms["dp_sgd"],
        "dpfermi_over_racodp": ms["dpfermi"] / ms["racodp"],
        "dp_sgd_over_sgd": ms["dp_sgd"] / ms["sgd"],
        "racodp_over_sgd": ms["racodp"] / ms["sgd"],
        "median_ms": ms,
        "paper_ms": paper,
        "paper_racodp_over_dp_sgd": paper["racodp"] / paper["dp_sgd"] if paper else None,
        "dataset": data.name, "batch": batch, "repeats": repeats,
        "threads": torch.get_num_threads(),
    }


def _table2_claims(experiments_file: str | Path) -> list[dict]:
    return [claim for claim in load_claims(Path(experiments_file).with_name("claims.yaml"))
            if claim["figure"] == "Table 2"]


def paper_table2_ms(experiments_file: str | Path = EXPERIMENTS_FILE) -> dict[str, dict]:
    """The paper's Table 2, ``{dataset: {method: ms per step}}``, from its claims."""
    table: dict[str, dict] = {}
    for claim in _table2_claims(experiments_file):
        if claim["unit"] == "ms":
            table.setdefault(claim["dataset"], {})[claim["method"]] = claim["value"]
    return table


def table2_claims(results: Mapping[str, dict],
                  experiments_file: str | Path = EXPERIMENTS_FILE) -> dict[str, float]:
    """The Table 2 claims our benchmark measures (:data:`MEASURED_CLAIMS`), by claim id, from
    ``{dataset: run_racodp_benchmark result}``."""
    measured = {}
    for claim in _table2_claims(experiments_file):
        metric, result = claim["measure"]["metric"], results.get(claim["dataset"])
        if result is not None and metric in MEASURED_CLAIMS:
            value = result
            for key in metric.split("."):
                value = value[key]
            measured[claim["id"]] = value
    return measured


def run_table2(data_dirs: Mapping[str, str | Path] | None = None, repeats: int | None = None,
               experiments_file: str | Path = EXPERIMENTS_FILE) -> dict[str, dict]:
    """:func:`run_racodp_benchmark` on the prepared datasets ``{name: data_dir}``, or else on
    the ``table2`` datasets, loaded."""
    if data_dirs is None:
        names = benchmark_settings(experiments_file, "table2")["datasets"]
        return {name: run_racodp_benchmark(name, repeats, experiments_file=experiments_file)
                for name in names}
    return {name: run_racodp_benchmark(name, repeats, data=load_prepared(path),
                                       experiments_file=experiments_file)
            for name, path in data_dirs.items()}


def write_table2(data_dirs: Mapping[str, str | Path], out_path: str | Path,
                 experiments_file: str | Path = EXPERIMENTS_FILE) -> dict:
    """The workflow's ``table2`` (rule paper_benchmark): JSON with every result and the
    ``claims`` they measure."""
    results = run_table2(data_dirs, experiments_file=experiments_file)
    payload = {"results": results, "claims": table2_claims(results, experiments_file),
               "note": "timed inside the workflow: other jobs may share the cores"}
    write_json(out_path, payload)
    return payload


def tuning_jobs(configs: int | None = None, datasets: Sequence[str] | None = None,
                epsilons: Sequence[str] | None = None, scale: str = "paper",
                experiments_file: str | Path = EXPERIMENTS_FILE):
    """The tuned jobs of the ``tuning`` benchmark at ``scale`` with ``configs`` configurations
    (default: the settings' ``configs`` and ``datasets``)."""
    settings = benchmark_settings(experiments_file, "tuning")
    configs = settings["configs"] if configs is None else configs
    datasets = settings["datasets"] if datasets is None else datasets
    wanted = None if epsilons is None else {Epsilon.parse(e, "--epsilons") for e in epsilons}
    jobs = [job for job in expand_jobs(load_experiments(experiments_file), scale,
                                       tuning="protocol")
            if job.experiment == settings["experiment"] and job.method == settings["method"]
            and job.dataset in datasets and (wanted is None or job.epsilon in wanted)]
    return [replace(job, tuning={**job.tuning, "configs": configs}) for job in jobs]


def run_tuning_benchmark(mode: str = "estimate", configs: int | None = None,
                         datasets: Sequence[str] | None = None,
                         epsilons: Sequence[str] | None = None, steps: int = 20,
                         scale: str = "paper",
                         experiments_file: str | Path = EXPERIMENTS_FILE) -> dict:
    """Minutes per job and in all (``mode`` "full" or "estimate"), against the target."""
    if mode not in ("full", "estimate"):
        raise ValueError(f"mode must be 'full' or 'estimate', got {mode!r}")
    settings = benchmark_settings(experiments_file, "tuning")
    configs = settings["configs"] if configs is None else configs
    retain_freed_memory()
    jobs = tuning_jobs(configs, datasets, epsilons, scale, experiments_file)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        prepared: dict[str, Path] = {}
        for job in jobs:
            if job.dataset not in prepared:  # untimed, once per dataset
                prepared[job.dataset] = Path(tmp, job.dataset)
                api.prepare_dataset(job.dataset, prepared[job.dataset])
            seconds = (_run_job(job, prepared[job.dataset], Path(tmp, str(job.epsilon)))
                       if mode == "full" else _estimate_job(job, steps))
            rows.append({"job": f"{job.dataset}/eps~{job.epsilon}", **seconds,
                         "minutes": sum(seconds.values()) / 60.0})
            print(rows[-1], flush=True)
    total = sum(row["minutes"] for row in rows)
    target = settings["target_minutes"]
    return {"mode": mode, "configs": configs, "jobs": rows, "total_minutes": total,
            "target_minutes": target, "met": total <= target,
            "threads": torch.get_num_threads()}


def _run_job(job, data_dir: Path, out: Path) -> dict[str, float]:
    """Phase 1, the choice and phase 2 of one job, exactly as the workflow's rules call them."""
    config = job.run_config(code_fingerprint())
    times = {}
    start = time.perf_counter()
    api.tune(config, data_dir, out / "trials.parquet")
    times["phase1_s"] = time.perf_counter() - start
    start = time.perf_counter()
    api.select_configs(config, out / "trials.parquet", out / "selected.json")
    times["select_s"] = time.perf_counter() - start
    start = time.perf_counter()
    api.train(config, data_dir, out / "train", selection=out / "selected.json")
    times["phase2_s"] = time.perf_counter() - start
    return times


def _estimate_job(job, steps: int) -> dict[str, float]:
    method = get_method(job.method)
    tuning = TuningSpec.from_dict(job.tuning)
    data, x_val, y_val = split_validation(load_dataset(job.dataset), tuning.validation_fraction)
    runs, _ = phase1_runs(tuning, job.params, float(job.epsilon), job.delta)
    phase1 = sum(_estimate_fit(method, data, [runs[i] for i in group], x_val, y_val, tuning,
                               steps)
                 for group in program_groups(method, runs))
    # Phase 2, pessimistically: every cell chose the configuration with the largest T x batch
    # and trains as a program of its own (20 seeds).
    fixed, cells = fixed_params(job.params, tuning), cell_grid(job.params, tuning.cell)
    costliest = max(tuning.config_list(), key=lambda config: _run_steps(
        method, data, replace(runs[0], params={**fixed, **config, **cells[0]}))
        * config["batch_size"])
    phase2_runs = [replace(runs[0], seed=seed, params={**fixed, **costliest, **cells[0]})
                   for seed in job.seeds]
    phase2 = len(cells) * _estimate_fit(method, data, phase2_runs, x_val, y_val, tuning, steps)
    return {"phase1_s": phase1, "phase2_pessimistic_s": phase2}


def _run_steps(method, data, run) -> int:
    """The step count T the fit calibrates for ``run`` (RaCO-DP: largest T <= max_steps within
    the target epsilon)."""
    params = method.resolve(run.params)
    return method.steps(*method.privacy_plan(params, len(data.y_train)), run, params)


def _estimate_fit(method, data, runs, x_val, y_val, tuning, steps: int) -> float:
    """Estimated seconds of ``fit_with_selection`` on ``runs`` (one batched program): the
    measured setup, the median of ``steps`` timed steps x T, one timed evaluation x the
    number of evaluations."""
    device = torch.device("cpu")
    selector = checkpoint_selector(method, data, runs, device, x_val=x_val, y_val=y_val,
                                   eval_every=tuning.eval_every)
    stamps: list[float] = []
    last: dict = {}

    def monitor(step, model, state):
        stamps.append(time.perf_counter())
        last.update(model=model, state=state)
        if step > steps + 3:
            raise StopFit

    start = time.perf_counter()
    try:
        method.fit(data, runs, device, monitor=monitor)
    except StopFit:
        pass
    setup = stamps[0] - start
    gaps = sorted(b - a for a, b in zip(stamps[3:], stamps[4:], strict=False))
    step_seconds = gaps[len(gaps) // 2] if gaps else 0.0
    evaluation = time.perf_counter()
    selector.evaluate(1, last["model"], last["state"])
    evaluation = time.perf_counter() - evaluation
    keys = {repr(sorted(method.resolve(run.params).items())): run for run in runs}
    total = max(_run_steps(method, data, run) for run in keys.values())
    return setup + step_seconds * total + evaluation * (total // tuning.eval_every + 1)
