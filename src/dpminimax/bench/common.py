"""What the benchmarks share: a paper's benchmark settings, the interleaved median timer and the
exception that stops a timed fit."""

from __future__ import annotations

import statistics
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from dpminimax.experiments import ExperimentConfigError, load_experiments

Step = Callable[[], None]


class StopFit(Exception):
    """Raised by a timing monitor to stop a fit once its steps are timed."""


def benchmark_settings(experiments_file: str | Path, name: str) -> dict[str, Any]:
    """The ``benchmarks.<name>`` block of a paper's experiments.yaml."""
    benchmarks = load_experiments(experiments_file).get("benchmarks") or {}
    if name not in benchmarks:
        raise ExperimentConfigError(f"{experiments_file}: no benchmarks.{name} block "
                                    f"(have {sorted(benchmarks)})")
    return dict(benchmarks[name])


def interleaved_medians(
    steps: dict[str, Step], repeats: int, warmup: int, device: torch.device
) -> dict[str, float]:
    """Median ms per step of every step function, run round by round (so background load hits
    them alike), after ``warmup`` untimed rounds."""
    times: dict[str, list[float]] = {name: [] for name in steps}
    for round_ in range(warmup + repeats):
        for name, step in steps.items():
            _synchronize(device)
            start = time.perf_counter()
            step()
            _synchronize(device)
            if round_ >= warmup:
                times[name].append((time.perf_counter() - start) * 1e3)
    return {name: statistics.median(values) for name, values in times.items()}


def _synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def opacus_private(model: torch.nn.Module, loader, lr: float, noise_multiplier: float,
                   max_grad_norm: float, mode: str = "hooks", criterion=None) -> tuple:
    """Opacus's ``PrivacyEngine().make_private`` of ``model`` with plain SGD at ``lr`` and no
    Poisson sampling (the benchmarks draw their own batches): ``(module, optimizer, loader)``
    and, where a ``criterion`` is given (ghost clipping wraps it), the criterion last."""
    import opacus

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return opacus.PrivacyEngine().make_private(
            module=model, optimizer=torch.optim.SGD(model.parameters(), lr=lr),
            data_loader=loader, noise_multiplier=noise_multiplier,
            max_grad_norm=max_grad_norm, poisson_sampling=False, grad_sample_mode=mode,
            **({} if criterion is None else {"criterion": criterion}))
