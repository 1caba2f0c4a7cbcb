"""Jagielski et al. 2019 ("Differentially private fair learning", ICML), in-processing,
re-implemented: a private version of the reductions approach of Agarwal et al. 2018 (Alg. 1,
"exponentiated gradient") for equalized odds in binary classification (a DP-FERMI
baseline).

Constraints (Agarwal et al. 2018, §2, the EO moment): for every label y in {0, 1} and group a,
``gamma_ay(h) = P[h = 1 | A = a, Y = y] - P[h = 1 | Y = y]`` (group TPR / FPR against the overall
one), constrained by ``+gamma_ay - tolerance <= 0`` and ``-gamma_ay - tolerance <= 0``: K = 4k
constraints for k groups. Lagrangian ``L(h, lambda) = err(h) + sum_j lambda_j g_j(h)``, with
``lambda = B exp(theta) / (1 + sum_j exp(theta_j))`` (``B`` = ``multiplier_bound``). R runs
(seeds x tolerance grid) are played as one batched program; round t = 1..T (``rounds``):

1. learner (the cost-sensitive oracle, Agarwal et al. 2018 §3.1): the Lagrangian of lambda_t is,
   times n, ``sum_i 1[h(x_i) != y_i] + sum_i h(x_i) n c_i`` with the per-cell cost
   ``c_ay = mu_ay / n_hat_ay - sum_a' mu_a'y / n_hat_y`` (``mu = lambda_+ - lambda_-``), so
   predicting 1 instead of 0 costs ``Delta_ay = (1 - 2y) + n c_ay``: a weighted classification
   problem with label ``1[Delta < 0]`` and weight ``|Delta|``. It is solved approximately by
   ``oracle_steps`` DP-SGD steps (Abadi et al. 2016, Alg. 1) of the weighted logistic loss
   (:func:`~dpminimax.kernels.linear.private_linear_step`), warm-started from the previous
   round; the result is the iterate h_t;
2. auditor (Jagielski et al.'s private auditor): the cell sums ``sum_{i in (a, y)} h_t(x_i)`` of
   the hard predictions over the whole training set plus Gaussian noise, divided by the noisy
   cell counts, give ``gamma_hat(h_t)``;
3. exponentiated-gradient step ``theta <- theta + eg_lr * g_hat(h_t)`` (Agarwal Alg. 1).

Output: the uniform mixture of h_1..h_T (:class:`LogisticMixture`).

Privacy (add/remove one example): the 2k noisy cell counts once, then per round one DP-SGD
oracle step set and one Gaussian auditor release, all in ONE event derived from
:func:`jagielski_releases`, one sigma calibrated to (epsilon, delta). The privacy argument and
the deviations from both papers, with their reasons: ``papers/dpfermi/NOTES.md``.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass
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
from dpminimax.algorithms.params import ACCOUNTANT, CLIP, COUNT, NON_NEGATIVE, POSITIVE, Check
from dpminimax.data import PreparedDataset
from dpminimax.kernels.gather import RowGatherer, batch_values
from dpminimax.kernels.linear import linear_logits, linear_residuals, private_linear_step
from dpminimax.kernels.sampling import expected_batch_size, poisson_batches
from dpminimax.privacy.calibrate import calibrate_release_parameter
from dpminimax.privacy.release import (
    Batch,
    BatchedRelease,
    Part,
    Release,
    Repeat,
    releases_of,
)
from dpminimax.seeding import make_generator

#: One value per batched program: they fix the sampling rate, the step counts and the accountant.
SHARED = ("batch_size", "oracle_steps", "rounds", "accountant")


def jagielski_releases(q: float, sigma: float, params: dict[str, Any]) -> Repeat:
    """Every release of one run (module docstring, "Privacy"): the noisy cell ``counts``
    (Gaussian, l2 sensitivity 1, multiplier ``count_noise_ratio * sigma``) on the full data,
    then ``rounds`` times the oracle's ``oracle_steps`` Poisson(q) clipped ``gradient`` sums
    (sensitivity ``clip``, multiplier sigma) and the ``auditor``'s full-data cell sums of hard
    predictions (sensitivity 1, multiplier ``auditor_noise_ratio * sigma``)."""
    counts = Release("counts", "gaussian", float(params["count_noise_ratio"]) * sigma, 1.0)
    gradient = Release("gradient", "gaussian", sigma, float(params["clip"]))
    auditor = Release("auditor", "gaussian", float(params["auditor_noise_ratio"]) * sigma, 1.0)
    one_round = (Batch((gradient,), int(params["oracle_steps"]), q), Batch((auditor,)))
    return Repeat((Batch((counts,)), Repeat(one_round, int(params["rounds"]))))


@functools.lru_cache(maxsize=1024)
def calibrated_sigma(q: float, ratios: tuple[float, float], oracle_steps: int, rounds: int,
                     epsilon: float, delta: float, accountant: str) -> float:
    """The smallest sigma with which :func:`jagielski_releases` (auditor and count multipliers
    ``ratios`` times sigma) meet (epsilon, delta)."""
    shape = {"auditor_noise_ratio": ratios[0], "count_noise_ratio": ratios[1], "clip": 1.0,
             "oracle_steps": oracle_steps, "rounds": rounds}
    return calibrate_release_parameter(lambda sigma: jagielski_releases(q, sigma, shape),
                                       epsilon, delta, accountant)


def multipliers(theta: torch.Tensor, bound: torch.Tensor) -> torch.Tensor:
    """``lambda_j = B exp(theta_j) / (1 + sum_j' exp(theta_j'))`` (R, K) (Agarwal et al. 2018,
    Alg. 1), computed as ``B softmax([theta, 0])`` without the last entry."""
    padded = torch.cat([theta, torch.zeros_like(theta[:, :1])], dim=1)
    return bound.view(-1, 1) * torch.softmax(padded, dim=1)[:, :-1]


def cell_costs(lam: torch.Tensor, counts: torch.Tensor, n: int) -> torch.Tensor:
    """``Delta`` (R, 2k): cost of predicting 1 minus cost of predicting 0 for an example of cell
    ``y * k + a``, in units of one misclassification (the Lagrangian times n).

    ``lam`` (R, 4k) holds lambda_+ for the 2k cells, then lambda_-; ``counts`` (R, 2k) the
    (noisy) cell sizes n_hat_ay >= 1. ``Delta_ay = (1 - 2y) + n (mu_ay / n_hat_ay
    - sum_a' mu_a'y / n_hat_y)`` with ``mu = lambda_+ - lambda_-``, n_hat_y = sum_a n_hat_ay.
    """
    runs, cells = counts.shape
    mu = (lam[:, :cells] - lam[:, cells:]).view(runs, 2, -1)
    per_label = counts.view(runs, 2, -1)
    c = mu / per_label - (mu.sum(-1, keepdim=True) / per_label.sum(-1, keepdim=True))
    error = torch.tensor([1.0, -1.0], dtype=counts.dtype, device=counts.device).view(1, 2, 1)
    return (error + n * c).reshape(runs, cells)


def violations(cell_sums: torch.Tensor, counts: torch.Tensor, tolerance: torch.Tensor):
    """Constraint values ``g = [gamma - tolerance, -gamma - tolerance]`` (R, 4k) from (noisy)
    cell sums of hard predictions and cell counts (R, 2k), ``gamma_ay = sum_ay / n_hat_ay -
    sum_a' sum_a'y / n_hat_y`` (Agarwal et al. 2018 §2, the EO moment)."""
    runs, cells = counts.shape
    sums, per_label = cell_sums.view(runs, 2, -1), counts.view(runs, 2, -1)
    gamma = (sums / per_label
             - sums.sum(-1, keepdim=True) / per_label.sum(-1, keepdim=True)).reshape(runs, cells)
    slack = tolerance.view(-1, 1)
    return torch.cat([gamma - slack, -gamma - slack], dim=1)


@dataclass(frozen=True)
class LogisticMixture:
    """The uniform mixture of T binary logistic-regression iterates, for R runs.

    State: ``weight`` (R, T, d), ``bias`` (R, T) and ``seed`` (R,). The mixture is a randomized
    classifier (Agarwal et al. 2018): on x it predicts h_t(x) = 1[z_t(x) > 0] for a uniform t,
    i.e. 1 with probability ``v(x)`` = the fraction of iterates voting 1. :meth:`predict` draws
    that sample once per example, ``1[u < v(x)]`` with u uniform from the run's fixed stream
    ``(seed, "mixture")`` (the same x give the same predictions). :meth:`losses` is the
    cross-entropy of the iterates' mean probability ``mean_t sigmoid(z_t(x))``.
    """

    num_features: int
    num_classes: int = 1

    name = "logistic_mixture"

    def iterate_logits(self, state: dict[str, torch.Tensor], x: torch.Tensor) -> torch.Tensor:
        """Logits (R, n, T) of every iterate on inputs x (n, d), one iterate at a time through
        the batch-invariant :func:`~dpminimax.kernels.linear.linear_logits`."""
        runs, iterates, _ = state["weight"].shape
        shared = x.unsqueeze(0).expand(runs, -1, -1)
        return torch.cat([
            linear_logits(state["weight"][:, t:t + 1], state["bias"][:, t:t + 1], shared)
            for t in range(iterates)
        ], dim=-1)

    def vote_fraction(self, state: dict[str, torch.Tensor], x: torch.Tensor) -> torch.Tensor:
        """``v(x)`` (R, n): the probability that the mixture predicts 1."""
        return (self.iterate_logits(state, x) > 0).to(x.dtype).mean(dim=-1)

    def predict(self, state: dict[str, torch.Tensor], x: torch.Tensor) -> torch.Tensor:
        """One sample (R, n) of the randomized mixture per example (see the class docstring)."""
        votes = self.vote_fraction(state, x)
        uniforms = torch.stack([
            torch.rand(x.shape[0], generator=make_generator(int(seed), "mixture", x.device),
                       dtype=votes.dtype, device=x.device)
            for seed in state["seed"].tolist()
        ])
        return (uniforms < votes).long()

    def losses(self, state: dict[str, torch.Tensor], x: torch.Tensor,
               y: torch.Tensor) -> torch.Tensor:
        """Per-example cross-entropy (R, n) of the mean probability of the T iterates."""
        logits = self.iterate_logits(state, x)
        signed = torch.where(y.view(1, -1, 1) == 1, logits, -logits)
        log_mean = (torch.logsumexp(torch.nn.functional.logsigmoid(signed), dim=-1)
                    - math.log(logits.shape[-1]))
        return -log_mean


class Jagielski2019(Method):
    """Private exponentiated-gradient reductions for equalized odds (see the module docstring).

    Parameters: ``tolerance`` (EO slack per constraint, swept to trace a curve),
    ``multiplier_bound`` (B, the l1 bound of lambda), ``eg_lr`` (exponentiated-gradient step),
    ``rounds`` (T), ``oracle_steps`` (DP-SGD steps per round), ``lr`` / ``clip`` /
    ``batch_size`` (the oracle's DP-SGD), ``auditor_noise_ratio`` / ``count_noise_ratio``
    (noise multipliers of the auditor's cell sums and of the counts, relative to the calibrated
    gradient noise multiplier), ``accountant``.
    """

    name: ClassVar[str] = "jagielski2019"
    label: ClassVar[str] = "Jagielski et al. 2019 (re-impl.)"
    paper: ClassVar[str] = "dpfermi"
    source: ClassVar[str] = "Jagielski et al. 2019 (DP-FERMI's baseline)"
    private: ClassVar[bool] = True
    parameters: ClassVar[dict[str, Any]] = {
        "tolerance": 0.05,
        "multiplier_bound": 5.0,
        "eg_lr": 1.0,
        "rounds": 50,
        "oracle_steps": 20,
        "lr": 1.0,
        "clip": 1.0,
        "batch_size": 1024,
        "auditor_noise_ratio": 5.0,
        "count_noise_ratio": 5.0,
        "accountant": "rdp",
    }
    checks: ClassVar[dict[str, Check]] = {
        "tolerance": NON_NEGATIVE, "multiplier_bound": POSITIVE, "eg_lr": POSITIVE,
        "rounds": COUNT, "oracle_steps": COUNT, "lr": NON_NEGATIVE, "clip": CLIP,
        "batch_size": COUNT,
        "auditor_noise_ratio": POSITIVE, "count_noise_ratio": POSITIVE, "accountant": ACCOUNTANT}
    shared_parameters: ClassVar[tuple[str, ...]] = SHARED

    def check_data(self, data: PreparedDataset, shared: dict[str, Any]) -> None:
        require_binary_labels(data, self.name)

    def program(self, data: PreparedDataset, runs: Sequence[RunSpec],
                resolved: Sequence[dict[str, Any]], shared: dict[str, Any],
                plans: Sequence[RunPlan], device: torch.device) -> JagielskiProgram:
        """:class:`JagielskiProgram`: one step is one round of the game, and its state is the
        mixture of the iterates so far (the model the method outputs)."""
        return JagielskiProgram(data, [run.seed for run in runs], resolved,
                                [plan.releases for plan in plans], device=device)

    def plan(self, run: RunSpec, n: int,
             data: PreparedDataset | None = None) -> RunPlan:
        """The run's releases (:func:`jagielski_releases`) with sigma calibrated on the event
        derived from them, q = batch_size / n."""
        params = self.resolve(run.params)
        for name in ("rounds", "oracle_steps"):
            if int(params[name]) < 1:
                raise ValueError(f"method {self.name!r}: {name} must be >= 1, got {params[name]}")
        q = min(1.0, params["batch_size"] / n)
        sigma = self.calibrate(run, lambda: calibrated_sigma(
            q, (float(params["auditor_noise_ratio"]), float(params["count_noise_ratio"])),
            int(params["oracle_steps"]), int(params["rounds"]), run.epsilon, run.delta,
            params["accountant"]), 0.0)
        return RunPlan.account(jagielski_releases(q, sigma, params),
                               {"noise_multiplier": sigma, "sampling_rate": q}, run.delta,
                               params["accountant"])


Jagielski2019NonPrivate = nonprivate_twin(
    Jagielski2019, "Jagielski2019NonPrivate", name="jagielski2019_nonprivate",
    label="Agarwal et al. 2018 reductions (non-private, SGD oracle)",
    doc="The same game without privacy (epsilon = inf): exact counts and cell sums, no "
        "clipping, no noise (Agarwal et al. 2018 with the SGD oracle).",
    fixed={"clip": math.inf, "auditor_noise_ratio": 0.0, "count_noise_ratio": 0.0})


class JagielskiProgram:
    """State (oracle parameters, theta, iterates) and per-run random streams of R runs;
    :meth:`step` is one round of the game (steps 1-3 of the module docstring); ``oracle`` holds
    the learner's current parameters and ``state`` the method's output, the mixture of the
    iterates so far.

    Run r makes the releases ``releases[r]`` (:func:`jagielski_releases`: the noise of the
    counts, the oracle's gradients and the auditor's sums, the clip) with ``params[r]`` (the
    game's parameters, ``sampling_rate``). Streams per run seed: ``"counts"`` (the counts'
    noise, drawn here), ``"poisson"`` and ``"noise"`` (the oracle's batches and gradient noise),
    ``"auditor"`` (the cell sums' noise).
    """

    def __init__(self, data: PreparedDataset, seeds: Sequence[int],
                 params: Sequence[dict[str, Any]], releases: Sequence[Part], *,
                 device: torch.device) -> None:
        self.x = torch.as_tensor(data.x_train, device=device)
        self.rows = RowGatherer(self.x)
        self.n = len(data.y_train)
        groups = len(data.group_names)
        self.cells = torch.as_tensor(data.y_train * groups + data.s_train, device=device).long()
        self.cell_indicator = torch.nn.functional.one_hot(self.cells, 2 * groups).to(self.x.dtype)
        self.model = LogisticMixture(self.x.shape[1])
        self.seeds = torch.tensor([int(s) for s in seeds], dtype=torch.long)
        runs = len(seeds)
        self.q = float(params[0]["sampling_rate"])
        self.oracle_steps = int(params[0]["oracle_steps"])
        named = [{release.name: release for release in releases_of(tree)} for tree in releases]
        self.gradient, self.auditor, count_release = (
            BatchedRelease.of(named, name, device) for name in ("gradient", "auditor", "counts"))
        self.step_size = per_run(params, "lr", device) / expected_batch_size(self.n, self.q)
        self.bound = per_run(params, "multiplier_bound", device)
        self.eg_lr = per_run(params, "eg_lr", device)
        self.tolerance = per_run(params, "tolerance", device)
        self.sampling = [make_generator(s, "poisson", device) for s in seeds]
        self.noise = [make_generator(s, "noise", device) for s in seeds]
        self.auditor_noise = [make_generator(s, "auditor", device) for s in seeds]
        exact = self.cell_indicator.sum(dim=0).expand(runs, -1).contiguous()
        counts = count_release.perturb(exact, [make_generator(s, "counts", device) for s in seeds])
        self.counts = torch.clamp(counts, min=1.0)                  # post-processing
        self.steps = int(params[0]["rounds"])
        self.oracle = {"weight": torch.zeros(runs, 1, self.x.shape[1], device=device),
                       "bias": torch.zeros(runs, 1, device=device)}
        self.theta = torch.zeros(runs, 4 * groups, device=device)
        self.iterates: list[dict[str, torch.Tensor]] = []

    def step(self) -> None:
        """Learner's oracle steps on lambda_t, the auditor's noisy violations of the new iterate,
        then the exponentiated-gradient step of theta."""
        delta = cell_costs(multipliers(self.theta, self.bound), self.counts, self.n)
        scale = (self.counts * delta.abs()).sum(1, keepdim=True) / self.counts.sum(1, keepdim=True)
        weights = delta.abs() / torch.clamp(scale, min=torch.finfo(delta.dtype).tiny)
        labels = (delta < 0).to(delta.dtype)
        for _ in range(self.oracle_steps):
            self.oracle_step(weights, labels)
        self.iterates.append({k: v[:, 0].clone() for k, v in self.oracle.items()})
        self.theta = self.theta + self.eg_lr.view(-1, 1) * violations(
            self.noisy_cell_sums(), self.counts, self.tolerance)

    def oracle_step(self, weights: torch.Tensor, labels: torch.Tensor) -> None:
        """One DP-SGD step on ``sum_i w_cell(i) BCE(z_i, label_cell(i))`` (weights, labels
        (R, 2k) per cell)."""
        index, mask = poisson_batches(self.n, self.q, self.sampling, device=self.x.device)
        x, cells = self.rows.gather(index), batch_values(self.cells, index)
        residual = weights.gather(1, cells).unsqueeze(-1) * linear_residuals(
            self.oracle["weight"], self.oracle["bias"], x, labels.gather(1, cells))
        private_linear_step(self.oracle, residual, x, mask, release=self.gradient,
                            generators=self.noise, step_size=self.step_size)

    def noisy_cell_sums(self) -> torch.Tensor:
        """``sum_{i in cell} h_t(x_i) + N(0, s_a^2)`` (R, 2k) over the whole training set (exact
        integer sums: 0/1 products summed in float32 below 2^24)."""
        shared = self.x.unsqueeze(0).expand(len(self.seeds), -1, -1)
        hard = (linear_logits(self.oracle["weight"], self.oracle["bias"], shared)[..., 0] > 0)
        return self.auditor.perturb(hard.to(self.x.dtype) @ self.cell_indicator,
                                    self.auditor_noise)

    @property
    def state(self) -> dict[str, torch.Tensor]:
        """The mixture's state: iterates (R, T, d), biases (R, T) and the run seeds."""
        return {"weight": torch.stack([it["weight"] for it in self.iterates], dim=1),
                "bias": torch.stack([it["bias"] for it in self.iterates], dim=1),
                "seed": self.seeds.clone()}
