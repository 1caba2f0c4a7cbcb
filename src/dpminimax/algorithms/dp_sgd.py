"""DP-SGD (Abadi et al. 2016, Algorithm 1) and its non-private twin, for R runs at once.

Each step draws a Poisson batch (rate q = batch_size / n), sums per-example gradients clipped to
norm C, adds N(0, (sigma C)^2 I) and divides by the *expected* batch size qn. The noise
multiplier sigma is calibrated to the run's (epsilon, delta) for the fixed step count
T = ceil(epochs / q). The model is logistic regression on tabular data or, with ``model`` set to
a network architecture, that network on image data (:mod:`dpminimax.models.network`).
``nonprivate`` is the same program with C = inf and sigma = 0, which is plain
mini-batch SGD with Poisson batches, so the two differ only in privacy.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from typing import Any, ClassVar

import torch
from tqdm.auto import tqdm

from dpminimax.algorithms.base import (
    FitResult,
    Method,
    Monitor,
    RunPlan,
    RunSpec,
)
from dpminimax.algorithms.noisy_sgd import NoisySgd
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
from dpminimax.models.batched import BatchedLogisticRegression
from dpminimax.models.network import BatchedNetwork, batched_model
from dpminimax.privacy import calibrate_event_parameter
from dpminimax.privacy.release import Batch, BatchedRelease, Release, plan_event

SHARED_PARAMETERS = ("batch_size", "epochs", "accountant", "model")


class DpSgd(Method):
    """Differentially private SGD with per-example clipping and Gaussian noise."""

    name: ClassVar[str] = "dp_sgd"
    label: ClassVar[str] = "DP-SGD"
    paper: ClassVar[str] = "Abadi et al. 2016, Alg. 1 (baseline)"
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

    def plan(self, run: RunSpec, n: int,
             data: PreparedDataset | None = None) -> RunPlan:
        """T = ceil(epochs / q) Poisson(q) rounds of one Gaussian release, the clipped gradient
        sum (l2 sensitivity C), with sigma calibrated to the run's (epsilon, delta)."""
        params = self.resolve(run.params)
        q = min(1.0, params["batch_size"] / n)
        steps = math.ceil(params["epochs"] / q)
        sigma = self.noise_multiplier(q, steps, run, params["accountant"])
        releases = gradient_rounds(q, steps, Release("gradient", "gaussian", sigma,
                                                     self.clip_norm(params)))
        return RunPlan.account(releases, {"noise_multiplier": sigma, "sampling_rate": q,
                                          "steps": steps}, run.delta, params["accountant"])

    def noise_multiplier(self, q: float, steps: int, run: RunSpec, accountant: str) -> float:
        """sigma calibrated so that T steps at rate q are (epsilon, delta)-DP."""
        return calibrated_sigma(q, steps, run.epsilon, run.delta, accountant)

    def clip_norm(self, params: dict[str, Any]) -> float:
        return float(params["clip"])

    def fit(self, data: PreparedDataset, runs: Sequence[RunSpec], device: torch.device,
            monitor: Monitor | None = None) -> FitResult:
        """Train ``runs`` as one program; ``monitor(step, model, state)`` (if given) is called
        after every step."""
        resolved, shared, plans = self.plan_runs(data, runs)
        q, steps = resolved[0]["sampling_rate"], resolved[0]["steps"]

        model = batched_model(data, shared["model"],
                              num_classes=1 if data.kind == "tabular" else len(data.label_names))
        lr = torch.tensor([p["lr"] for p in resolved], device=device)
        release = BatchedRelease([plan.release("gradient") for plan in plans], device)
        state = train_noisy_sgd(
            model, data, runs, lr=lr, release=release, q=q, steps=steps,
            device=device, description=f"{self.name} x{len(runs)} runs", monitor=monitor,
        )
        return FitResult(model, state, list(runs), [plan.record for plan in plans], resolved)


def gradient_rounds(q: float, steps: int, gradient: Release) -> Batch:
    """DP-SGD's releases (Abadi et al. 2016, Alg. 1): one clipped gradient sum per Poisson(q)
    batch, ``steps`` times."""
    return Batch((gradient,), count=steps, sampling_rate=q)


@functools.lru_cache(maxsize=1024)
def calibrated_sigma(q: float, steps: int, epsilon: float, delta: float,
                     accountant: str) -> float:
    """Smallest noise multiplier with which :func:`gradient_rounds` meets (epsilon, delta)."""
    return calibrate_event_parameter(
        lambda sigma: plan_event(gradient_rounds(q, steps, Release("gradient", "gaussian",
                                                                   sigma, 1.0))),
        epsilon, delta, accountant)


class NonPrivateSgd(DpSgd):
    """Mini-batch SGD with Poisson batches and no clipping or noise (epsilon = inf)."""

    name: ClassVar[str] = "nonprivate"
    label: ClassVar[str] = "Non-private SGD"
    private: ClassVar[bool] = False
    parameters: ClassVar[dict[str, Any]] = {
        "lr": 1.0,
        "batch_size": 1024,
        "epochs": 20,
        "accountant": "rdp",
        "model": "logistic_regression",
    }
    shared_parameters: ClassVar[tuple[str, ...]] = SHARED_PARAMETERS

    def noise_multiplier(self, q: float, steps: int, run: RunSpec, accountant: str) -> float:
        if not math.isinf(run.epsilon):
            raise ValueError(
                f"method 'nonprivate' trains without privacy; its epsilon must be 'inf', "
                f"got {run.epsilon}"
            )
        return 0.0

    def clip_norm(self, params: dict[str, Any]) -> float:
        return math.inf


def train_noisy_sgd(
    model: BatchedLogisticRegression | BatchedNetwork,
    data: PreparedDataset,
    runs: Sequence[RunSpec],
    *,
    lr: torch.Tensor,
    release: BatchedRelease,
    q: float,
    steps: int,
    device: torch.device,
    description: str,
    monitor: Monitor | None = None,
) -> dict[str, torch.Tensor]:
    """``steps`` steps of :class:`~dpminimax.algorithms.noisy_sgd.NoisySgd` with a progress bar
    (and ``monitor`` after each)."""
    program = NoisySgd(
        model, training_rows(data, device),
        torch.as_tensor(data.y_train, device=device), [run.seed for run in runs],
        lr=lr, release=release, q=q,
    )
    for step in tqdm(range(1, steps + 1), desc=description, mininterval=5.0, leave=False):
        program.step()
        if monitor is not None:
            monitor(step, model, program.state)
    return program.state
