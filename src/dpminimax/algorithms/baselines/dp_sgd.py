"""DP-SGD (Abadi et al. 2016, Algorithm 1) and its non-private twin, for R runs at once.

Each step draws a Poisson batch (rate q = batch_size / n), sums per-example gradients clipped to
norm C, adds N(0, (sigma C)^2 I) and divides by the *expected* batch size qn. The noise
multiplier sigma is calibrated to the run's (epsilon, delta) for the fixed step count
T = ceil(epochs / q). The model is logistic regression on tabular data or, with ``model`` set to
a network architecture, that network on image data (:mod:`dpminimax.models.network`).
``dp_sgd_nonprivate`` is the same program with C = inf and sigma = 0, which is plain
mini-batch SGD with Poisson batches, so the two differ only in privacy.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from typing import Any, ClassVar

import torch

from dpminimax.algorithms.base import Method, RunPlan, RunSpec, nonprivate_twin
from dpminimax.algorithms.baselines.noisy_sgd import NoisySgd
from dpminimax.algorithms.params import (
    ACCOUNTANT,
    CLIP,
    COUNT,
    MODEL,
    NON_NEGATIVE,
    POSITIVE,
    Check,
)
from dpminimax.data import PreparedDataset
from dpminimax.data.inputs import training_rows
from dpminimax.kernels.membership import member_rows
from dpminimax.models.network import batched_model
from dpminimax.privacy.calibrate import calibrate_release_parameter
from dpminimax.privacy.release import Batch, BatchedRelease, Release

SHARED_PARAMETERS = ("batch_size", "epochs", "accountant", "model")


class DpSgd(Method):
    """Differentially private SGD with per-example clipping and Gaussian noise."""

    name: ClassVar[str] = "dp_sgd"
    label: ClassVar[str] = "DP-SGD"
    paper: ClassVar[str] = "baselines"
    source: ClassVar[str] = "Abadi et al. 2016, Alg. 1"
    private: ClassVar[bool] = True
    parameters: ClassVar[dict[str, Any]] = {
        "lr": 1.0,
        "clip": 1.0,
        "batch_size": 1024,
        "epochs": 20,
        "accountant": "rdp",
        "model": "logistic_regression",
    }
    checks: ClassVar[dict[str, Check]] = {
        "lr": NON_NEGATIVE, "clip": CLIP, "batch_size": COUNT, "epochs": POSITIVE,
        "accountant": ACCOUNTANT, "model": MODEL}
    shared_parameters: ClassVar[tuple[str, ...]] = SHARED_PARAMETERS
    uses_sensitive_attribute: ClassVar[bool] = False
    shadowable: ClassVar[bool] = True

    def plan(self, run: RunSpec, n: int,
             data: PreparedDataset | None = None) -> RunPlan:
        """T = ceil(epochs / q) Poisson(q) rounds of one Gaussian release, the clipped gradient
        sum (l2 sensitivity C), with sigma calibrated to the run's (epsilon, delta)."""
        params = self.resolve(run.params)
        q = min(1.0, params["batch_size"] / n)
        steps = math.ceil(params["epochs"] / q)
        sigma = self.calibrate(
            run, lambda: calibrated_sigma(q, steps, run.epsilon, run.delta,
                                          params["accountant"]), 0.0)
        releases = gradient_rounds(q, steps, Release("gradient", "gaussian", sigma,
                                                     float(params["clip"])))
        return RunPlan.account(releases, {"noise_multiplier": sigma, "sampling_rate": q,
                                          "steps": steps}, run.delta, params["accountant"])

    def program(self, data: PreparedDataset, runs: Sequence[RunSpec],
                resolved: Sequence[dict[str, Any]], shared: dict[str, Any],
                plans: Sequence[RunPlan], device: torch.device) -> NoisySgd:
        """:class:`~dpminimax.algorithms.baselines.noisy_sgd.NoisySgd` over the job's model."""
        model = batched_model(data, shared["model"],
                              num_classes=1 if data.kind == "tabular" else len(data.label_names))
        return NoisySgd(
            model, training_rows(data, device), torch.as_tensor(data.y_train, device=device),
            [run.seed for run in runs],
            lr=torch.tensor([p["lr"] for p in resolved], device=device),
            release=BatchedRelease([plan.release("gradient") for plan in plans], device),
            q=resolved[0]["sampling_rate"], steps=resolved[0]["steps"],
            members=member_rows([run.shadow for run in runs], data, device),
        )


def gradient_rounds(q: float, steps: int, gradient: Release) -> Batch:
    """DP-SGD's releases (Abadi et al. 2016, Alg. 1): one clipped gradient sum per Poisson(q)
    batch, ``steps`` times."""
    return Batch((gradient,), count=steps, sampling_rate=q)


@functools.lru_cache(maxsize=1024)
def calibrated_sigma(q: float, steps: int, epsilon: float, delta: float,
                     accountant: str) -> float:
    """Smallest noise multiplier with which :func:`gradient_rounds` meets (epsilon, delta)."""
    return calibrate_release_parameter(
        lambda sigma: gradient_rounds(q, steps, Release("gradient", "gaussian", sigma, 1.0)),
        epsilon, delta, accountant)


NonPrivateSgd = nonprivate_twin(
    DpSgd, "NonPrivateSgd", name="dp_sgd_nonprivate", label="Non-private SGD",
    doc="Mini-batch SGD with Poisson batches and no clipping or noise (epsilon = inf).",
    fixed={"clip": math.inf})
