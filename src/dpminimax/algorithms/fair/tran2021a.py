"""Tran, Dinh, Fioretto 2021a ("Differentially private empirical risk minimization under the
fairness lens", NeurIPS), the mitigation re-implemented as a DP-FERMI baseline for demographic
parity, for R runs (seeds x gamma grid) at once.

Tran 2021a mitigates the disparate impact of DP-SGD by adding to the loss a gamma-weighted penalty
on group disparities. For demographic parity it is adapted (our choice, the paper is silent) to the
gaps of the mean soft prediction p_i = sigmoid(z_i) per sensitive group:
``min_theta mean_i l_i(theta) + gamma sum_a |pbar_a(theta) - pbar(theta)|``.
Each step t, on one Poisson batch B (rate q = batch_size / n, expected size m = qn):

1. a noisy histogram ``H[a] = sum_{i in B, a_i = a} (1, p_i) + N(0, (rho sigma sqrt(2))^2 I)``
   (counts and prediction sums per group; an example adds (1, p_i) to one row, l2 sensitivity
   <= sqrt(2), so the noise multiplier is ``rho sigma``, rho = ``histogram_noise_ratio``);
2. from H alone (post-processing): sizes N_a = max(1, H[a, 0]), N = sum_a N_a, rates H[a, 1] / N_a
   and sum_a H[a, 1] / N, and the signs s_a of the gaps
   (:func:`~dpminimax.algorithms.fair.group_stats.rate_gaps`);
3. with these released statistics held fixed, the batch objective is
   ``(1/m) sum_i l_i + gamma sum_a s_a (sum_{i in a} p_i / N_a - sum_i p_i / N)`` (equal to the
   penalty when H is exact), whose per-example logit gradient times m is
   ``r_i = (p_i - y_i) + m gamma p_i (1 - p_i) sum_a s_a w_ia``
   (:func:`penalty_logit_grad`, w from :func:`~dpminimax.algorithms.fair.group_stats.gap_weights`,
   the same for every member of a group);
4. the DP-SGD step (Abadi et al. 2016, Alg. 1): ``r_i ⊗ [x_i, 1]`` clipped to C, summed,
   N(0, (sigma C)^2 I) added, step lr / m
   (:func:`~dpminimax.kernels.linear.private_linear_step`).

Privacy (add/remove one example): each step is ``PoissonSampled(q, Composed([Gaussian(sigma),
Gaussian(rho sigma)]))`` (the histogram and the gradient from the same batch), derived from
:func:`tran2021a_releases`; a run with gamma = 0 releases no histogram and is plain DP-SGD. The
privacy argument and the deviations from Tran et al. 2021a with their reasons:
``papers/dpfermi/NOTES.md``.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from typing import Any, ClassVar

import torch

from dpminimax.algorithms.base import (
    Method,
    RunPlan,
    RunSpec,
    nonprivate_twin,
    per_run,
    require_binary_labels,
)
from dpminimax.algorithms.fair.group_stats import GroupCells, cell_gap_weights, rate_gaps
from dpminimax.algorithms.params import ACCOUNTANT, CLIP, COUNT, NON_NEGATIVE, POSITIVE, Check
from dpminimax.data import PreparedDataset
from dpminimax.kernels.gather import RowGatherer, batch_values
from dpminimax.kernels.grouped import grouped_sums
from dpminimax.kernels.linear import linear_logits, private_linear_step
from dpminimax.kernels.rowwise import binary_probs
from dpminimax.kernels.sampling import expected_batch_size, poisson_batches
from dpminimax.models.batched import BatchedLogisticRegression
from dpminimax.privacy.calibrate import calibrate_release_parameter
from dpminimax.privacy.release import Batch, BatchedRelease, Release, releases_of
from dpminimax.seeding import make_generator

#: One value per batched program: they fix the sampling rate, the step count and the accountant.
SHARED = ("batch_size", "epochs", "accountant")
#: l2 sensitivity of the histogram: one example adds (1, p_i), p_i in [0, 1], to one row.
HISTOGRAM_SENSITIVITY = math.sqrt(2.0)


def tran2021a_releases(q: float, steps: int, sigma: float, clip: float,
                       histogram_multiplier: float | None) -> Batch:
    """T rounds of one Poisson(q) batch each (module docstring, steps 1 and 4): the clipped
    ``gradient`` sum (Gaussian, sensitivity C, multiplier sigma) and, unless
    ``histogram_multiplier`` is None (gamma = 0: plain DP-SGD), the ``histogram`` (Gaussian,
    sensitivity sqrt(2))."""
    releases = (Release("gradient", "gaussian", sigma, clip),)
    if histogram_multiplier is not None:
        releases += (Release("histogram", "gaussian", histogram_multiplier,
                             HISTOGRAM_SENSITIVITY),)
    return Batch(releases, steps, q)


@functools.lru_cache(maxsize=1024)
def calibrated_sigma(q: float, steps: int, ratio: float | None, epsilon: float, delta: float,
                     accountant: str) -> float:
    """The smallest sigma with which :func:`tran2021a_releases` (histogram multiplier ``ratio``
    times sigma, or no histogram) meet (epsilon, delta)."""
    return calibrate_release_parameter(
        lambda sigma: tran2021a_releases(q, steps, sigma, 1.0,
                                         None if ratio is None else ratio * sigma),
        epsilon, delta, accountant)


def penalty_logit_grad(probs: torch.Tensor, groups: torch.Tensor, histogram: torch.Tensor,
                       parents: torch.Tensor) -> torch.Tensor:
    """``d/dz_i sum_a s_a (sum_{j in a} p_j / N_a - sum_j p_j / N)`` (R, B, 1), i.e.
    ``p_i (1 - p_i) sum_a s_a w_ia``, for probabilities (R, B, 1), groups (R, B) and the released
    histogram (R, k, 2) of (count, prediction sum) per group (steps 2-3 of the module
    docstring)."""
    counts, sums = histogram[..., 0], histogram[..., 1]
    signs = torch.sign(rate_gaps(sums, counts, parents))                          # (R, k)
    per_group = (cell_gap_weights(counts, parents) * signs.unsqueeze(1)).sum(-1)  # (R, k)
    return probs * (1.0 - probs) * per_group.gather(1, groups).unsqueeze(-1)


class Tran2021a(Method):
    """DP-SGD with the demographic-parity mitigation penalty (see the module docstring).

    Parameters: ``gamma`` (penalty weight, swept to trace a curve), ``lr``, ``clip`` (C),
    ``batch_size`` (expected Poisson batch size), ``epochs`` (T = ceil(epochs / q)),
    ``histogram_noise_ratio`` (rho: the histogram's noise multiplier over sigma), ``accountant``.
    """

    name: ClassVar[str] = "tran2021a"
    label: ClassVar[str] = "Tran et al. 2021a (re-impl.)"
    paper: ClassVar[str] = "dpfermi"
    source: ClassVar[str] = "Tran et al. 2021a (DP-FERMI's baseline)"
    private: ClassVar[bool] = True
    parameters: ClassVar[dict[str, Any]] = {
        "gamma": 1.0,
        "lr": 1.0,
        "clip": 1.0,
        "batch_size": 1024,
        "epochs": 20,
        "histogram_noise_ratio": 3.0,
        "accountant": "rdp",
    }
    checks: ClassVar[dict[str, Check]] = {
        "gamma": NON_NEGATIVE, "lr": NON_NEGATIVE, "clip": CLIP, "batch_size": COUNT,
        "epochs": POSITIVE, "histogram_noise_ratio": POSITIVE, "accountant": ACCOUNTANT}
    shared_parameters: ClassVar[tuple[str, ...]] = SHARED

    def check_data(self, data: PreparedDataset, shared: dict[str, Any]) -> None:
        require_binary(data, self.name)

    def program(self, data: PreparedDataset, runs: Sequence[RunSpec],
                resolved: Sequence[dict[str, Any]], shared: dict[str, Any],
                plans: Sequence[RunPlan], device: torch.device) -> Tran2021aProgram:
        return Tran2021aProgram(data, [run.seed for run in runs], resolved,
                                [plan.releases for plan in plans], device=device)

    def plan(self, run: RunSpec, n: int,
             data: PreparedDataset | None = None) -> RunPlan:
        """The run's releases (:func:`tran2021a_releases`, the histogram only if gamma > 0)
        with the smallest sigma for which the event derived from them meets the run's
        (epsilon, delta)."""
        params = self.resolve(run.params)
        q = min(1.0, int(params["batch_size"]) / n)
        steps = math.ceil(int(params["epochs"]) / q)
        ratio = float(params["histogram_noise_ratio"]) if params["gamma"] > 0 else None
        sigma = self.calibrate(run, lambda: calibrated_sigma(
            q, steps, ratio, run.epsilon, run.delta, params["accountant"]), 0.0)
        histogram = None if ratio is None else ratio * sigma
        return RunPlan.account(
            tran2021a_releases(q, steps, sigma, float(params["clip"]), histogram),
            {"noise_multiplier": sigma, "sampling_rate": q, "steps": steps,
             "histogram_noise_multiplier": histogram or 0.0},
            run.delta, params["accountant"])


Tran2021aNonPrivate = nonprivate_twin(
    Tran2021a, "Tran2021aNonPrivate", name="tran2021a_nonprivate",
    label="Tran et al. 2021a (re-impl., non-private)",
    doc="The same penalised SGD without privacy (epsilon = inf): exact histogram, no "
        "clipping, no noise.",
    fixed={"clip": math.inf, "histogram_noise_ratio": 0.0, "accountant": "rdp"})


def require_binary(data: PreparedDataset, method: str) -> None:
    """Tabular features, labels in {0, 1} and at least two sensitive groups."""
    require_binary_labels(data, method)
    if len(data.group_names) < 2:
        raise ValueError(f"method {method!r} needs at least 2 sensitive groups; dataset "
                         f"{data.name!r} has {list(data.group_names)}")


class Tran2021aProgram:
    """Parameters and per-run streams of R runs; :meth:`step` is steps 1-4 of the module
    docstring for all of them. Run r makes the releases ``releases[r]``
    (:func:`tran2021a_releases`) with ``params[r]`` (``lr``, ``gamma``, ``sampling_rate``).
    Streams per run seed: ``"poisson"`` (batches), ``"histogram"`` (the histogram's noise),
    ``"noise"`` (the gradient's noise)."""

    def __init__(self, data: PreparedDataset, seeds: Sequence[int],
                 params: Sequence[dict[str, Any]], releases: Sequence[Batch], *,
                 device: torch.device) -> None:
        self.model = BatchedLogisticRegression(data.x_train.shape[1], num_classes=1)
        self.rows = RowGatherer(torch.as_tensor(data.x_train, device=device))
        self.y = torch.as_tensor(data.y_train, device=device)
        self.s = torch.as_tensor(data.s_train, device=device).long()
        self.groups = GroupCells("demographic_parity", len(data.group_names))
        self.parents = self.groups.parents(device)
        self.n = len(self.y)
        self.q = float(params[0]["sampling_rate"])
        self.steps = int(params[0]["steps"])
        self.batch = expected_batch_size(self.n, self.q)
        self.lr, self.gamma = (per_run(params, key, device) for key in ("lr", "gamma"))
        named = [{release.name: release for release in releases_of(batch)}
                 for batch in releases]
        self.gradient = BatchedRelease.of(named, "gradient", device)
        # a run with gamma = 0 releases no histogram: a silent one (no noise, nothing drawn)
        # keeps the batch's shape, and its gradient weighs it by gamma = 0
        self.histogram = BatchedRelease([
            run.get("histogram", Release("histogram", "gaussian", 0.0, HISTOGRAM_SENSITIVITY))
            for run in named], device)
        self.state = self.model.init_state(len(seeds), device)
        self.sampling = [make_generator(s, "poisson", device) for s in seeds]
        self.noise = [make_generator(s, "noise", device) for s in seeds]
        self.histogram_streams = [make_generator(s, "histogram", device) for s in seeds]

    def step(self) -> None:
        index, mask = poisson_batches(self.n, self.q, self.sampling, device=self.y.device)
        x = self.rows.take(index)
        y, groups = batch_values(self.y, index), batch_values(self.s, index)
        logits = linear_logits(self.state["weight"], self.state["bias"], x)
        probs = binary_probs(logits)  # sigmoid, batch-invariant (dpminimax.kernels.rowwise)
        exact = grouped_sums(probs, groups, mask, self.groups.num_cells,
                             counts=True)                                         # step 1
        histogram = self.histogram.perturb(exact, self.histogram_streams)
        residual = probs - y.to(probs.dtype).unsqueeze(-1) + (
            self.batch * self.gamma).view(-1, 1, 1) * penalty_logit_grad(
            probs, groups, histogram, self.parents)                               # steps 2-3
        private_linear_step(self.state, residual, x, mask, release=self.gradient,  # step 4
                            generators=self.noise, step_size=self.lr / self.batch)
