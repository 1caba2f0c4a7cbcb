"""Tran, Fioretto, Van Hentenryck 2021b ("Differentially private and fair deep learning: a
Lagrangian dual approach", AAAI), PF-LD, re-implemented as a DP-FERMI baseline for binary
logistic regression, R runs (seeds x alpha) at once.

PF-LD's Alg. 1 (F-LD with private primal and dual steps) on ``min_theta mean_i l_i(theta)``
s.t. ``|gap_c(theta)| <= alpha`` per cell c (demographic parity or equalized odds gaps of mean
soft predictions, :mod:`~dpminimax.algorithms.fair.group_stats`), each constraint split into two
one-sided ones with multipliers lam+-_c >= 0. Per epoch: ceil(1/q) primal steps on Poisson
batches (two releases of one batch, clipped to C_p: loss gradients and constraint Jacobians,
the gap's batch estimate Horvitz-Thompson on the released cell counts), then a dual step from
the noisy clipped violations on the whole training set (C_d = ``"bound"``,
:func:`violation_bound`, by default). One event for all releases (:func:`pfld_releases`), one
sigma calibrated to (epsilon, delta).

The derivation, the privacy argument and the deviations from PF-LD with their evidence:
``papers/dpfermi/NOTES.md``.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

import torch

from dpminimax.algorithms.base import Method, RunPlan, RunSpec, nonprivate_twin, per_run
from dpminimax.algorithms.fair.group_stats import (
    FAIRNESS,
    GroupCells,
    cell_gap_weights,
    gap_weights,
    rate_gaps,
)
from dpminimax.algorithms.fair.tran2021a import require_binary
from dpminimax.algorithms.fair.tran2021b_compiled import pfld_sums
from dpminimax.algorithms.params import (
    ACCOUNTANT,
    CLIP,
    COUNT,
    NON_NEGATIVE,
    POSITIVE,
    Check,
    one_of,
)
from dpminimax.data import PreparedDataset
from dpminimax.kernels.gather import RowGatherer, batch_values
from dpminimax.kernels.linear import clipped_outer_sum, linear_logits, noisy_linear_descent
from dpminimax.kernels.rowwise import binary_probs
from dpminimax.kernels.sampling import expected_batch_size, poisson_batches
from dpminimax.kernels.sparse_rows import sparse_rows_supported
from dpminimax.models.batched import BatchedLogisticRegression
from dpminimax.privacy.calibrate import calibrate_release_parameter
from dpminimax.privacy.release import (
    Batch,
    BatchedRelease,
    Release,
    Repeat,
    releases_of,
)
from dpminimax.seeding import make_generator

#: One value per batched program: they fix the sampling rate, the step counts, the constraint
#: shapes and the accountant.
SHARED = ("batch_size", "epochs", "fairness", "accountant")

#: ``clip_dual`` value selecting :func:`violation_bound` (no clipping, no bias).
DUAL_BOUND = "bound"


def pfld_releases(q: float, steps: int, dual_releases: int, sigma: float,
                  ratios: tuple[float, float], clips: tuple[float, float]) -> Repeat:
    """Every release of one PF-LD run (module docstring, "Privacy"): the cell ``counts``
    (sensitivity 1, multiplier ``ratios[1]`` sigma); ``steps`` Poisson(q) batches each
    releasing the clipped loss ``gradient`` and constraint ``jacobian`` sums (sensitivity
    ``clips[0]`` = C_p, multiplier sigma); ``dual_releases`` full-data clipped constraint
    ``violations`` (sensitivity ``clips[1]`` = C_d, multiplier ``ratios[0]`` sigma)."""
    primal_clip, dual_clip = clips
    parts = (Batch((Release("counts", "gaussian", ratios[1] * sigma, 1.0),)),
             Batch((Release("gradient", "gaussian", sigma, primal_clip),
                    Release("jacobian", "gaussian", sigma, primal_clip)), steps, q))
    if dual_releases > 0:
        parts += (Batch((Release("violations", "gaussian", ratios[0] * sigma, dual_clip),),
                        dual_releases),)
    return Repeat(parts)


@functools.lru_cache(maxsize=1024)
def calibrated_sigma(q: float, steps: int, dual_releases: int, ratios: tuple[float, float],
                     epsilon: float, delta: float, accountant: str) -> float:
    """The smallest sigma with which :func:`pfld_releases` meet (epsilon, delta)."""
    return calibrate_release_parameter(
        lambda sigma: pfld_releases(q, steps, dual_releases, sigma, ratios, (1.0, 1.0)),
        epsilon, delta, accountant)


def violation_contributions(probs: torch.Tensor, cells: torch.Tensor, counts: torch.Tensor,
                            parents: torch.Tensor, n: int) -> torch.Tensor:
    """``v_ic = n w_ic p_i`` (R, B, C) for probabilities (R, B, 1), cells (R, B) and released
    counts (R, C): over the whole training set ``mean_i v_ic`` is the gap of cell c."""
    return n * gap_weights(cells, counts, parents) * probs


def violation_bound(counts: torch.Tensor, parents: torch.Tensor, n: int) -> torch.Tensor:
    """``n max_c' ||w(c')||`` (R,): the largest norm of ``v_i`` (:func:`violation_contributions`)
    over every cell c' an example can sit in and every ``p_i`` in [0, 1], from the released
    counts (R, C) only: the sensitivity of the dual release without clipping."""
    weights = cell_gap_weights(counts, parents)                                # (R, C', C)
    return n * torch.linalg.vector_norm(weights, dim=-1).amax(dim=-1)


def constraint_logit_jacobian(probs: torch.Tensor, cells: torch.Tensor, counts: torch.Tensor,
                              parents: torch.Tensor, n: int) -> torch.Tensor:
    """``u_ic = v_ic (1 - p_i) = n w_ic p_i (1 - p_i)`` (R, B, C): m times the derivative with
    respect to z_i of the batch estimate ``gap_c^B = sum_{i in B} v_ic / m``."""
    return violation_contributions(probs, cells, counts, parents, n) * (1.0 - probs)


class Tran2021b(Method):
    """PF-LD: private Lagrangian dual training with fairness constraints (module docstring).

    Parameters: ``alpha`` (tolerance of every constraint), ``fairness`` (``demographic_parity``
    or ``equalized_odds``), ``lr`` (primal step), ``lr_dual`` (s, the dual step),
    ``clip_primal`` (C_p), ``clip_dual`` (C_d: a number or ``"bound"``), ``batch_size``,
    ``epochs``, ``dual_noise_ratio`` / ``count_noise_ratio`` (noise multipliers of the dual
    release and of the counts over sigma), ``accountant``.
    """

    name: ClassVar[str] = "tran2021b"
    label: ClassVar[str] = "Tran et al. 2021b PF-LD (re-impl.)"
    paper: ClassVar[str] = "dpfermi"
    source: ClassVar[str] = "Tran et al. 2021b (DP-FERMI's baseline)"
    private: ClassVar[bool] = True
    parameters: ClassVar[dict[str, Any]] = {
        "alpha": 0.02,
        "fairness": "demographic_parity",
        "lr": 0.1,
        "lr_dual": 1.0,
        "clip_primal": 10.0,
        "clip_dual": DUAL_BOUND,
        "batch_size": 1024,
        "epochs": 20,
        "dual_noise_ratio": 10.0,
        "count_noise_ratio": 10.0,
        "accountant": "rdp",
    }
    checks: ClassVar[dict[str, Check]] = {
        "alpha": NON_NEGATIVE, "fairness": one_of(*FAIRNESS),
        "lr": NON_NEGATIVE, "lr_dual": NON_NEGATIVE, "clip_primal": CLIP,
        "clip_dual": Check("'bound' or a finite number > 0",
                           lambda v: v == DUAL_BOUND or CLIP.accepts(v)),
        "batch_size": COUNT, "epochs": COUNT, "dual_noise_ratio": POSITIVE,
        "count_noise_ratio": POSITIVE, "accountant": ACCOUNTANT}
    shared_parameters: ClassVar[tuple[str, ...]] = SHARED

    def check_data(self, data: PreparedDataset, shared: dict[str, Any]) -> None:
        require_binary(data, self.name)

    def training_violation(self, resolved: Sequence[dict[str, Any]], data: PreparedDataset,
                           device: torch.device) -> Callable[[torch.Tensor], torch.Tensor]:
        """``max_c |gap_c| - alpha`` (R,) of hard predictions (R, n) on the training set: PF-LD's
        own constraint, for the tuning's checkpoint rule."""
        cells = GroupCells(resolved[0]["fairness"], len(data.group_names))
        member = torch.nn.functional.one_hot(
            cells.cell_of(torch.as_tensor(data.y_train, device=device),
                          torch.as_tensor(data.s_train, device=device)),
            cells.num_cells).float()                                               # (n, C)
        counts = member.sum(dim=0)
        parents = cells.parents(device)
        alpha = torch.tensor([float(p["alpha"]) for p in resolved], device=device)

        def violation(predicted: torch.Tensor) -> torch.Tensor:
            sums = predicted.float() @ member                                      # (R, C)
            gaps = rate_gaps(sums, counts.expand_as(sums), parents)
            return gaps.abs().max(dim=-1).values - alpha

        return violation

    def program(self, data: PreparedDataset, runs: Sequence[RunSpec],
                resolved: Sequence[dict[str, Any]], shared: dict[str, Any],
                plans: Sequence[RunPlan], device: torch.device) -> PfldProgram:
        return PfldProgram(data, [run.seed for run in runs], resolved,
                           [plan.releases for plan in plans], device=device)

    def plan(self, run: RunSpec, n: int,
             data: PreparedDataset | None = None) -> RunPlan:
        """The run's releases (:func:`pfld_releases`: E ceil(1/q) primal rounds, E - 1 dual
        releases) with the smallest sigma for which the event derived from them meets the run's
        (epsilon, delta). With C_d = ``"bound"`` the dual release's declared sensitivity is n,
        a bound for any released counts (``||w_i|| <= 1``, cell sizes floored at 1); the program
        tightens it to :func:`violation_bound` of the released counts."""
        params = self.resolve(run.params)
        q = min(1.0, int(params["batch_size"]) / n)
        epochs, per_epoch = int(params["epochs"]), math.ceil(1.0 / q)
        steps = epochs * per_epoch
        ratios = (float(params["dual_noise_ratio"]), float(params["count_noise_ratio"]))
        sigma = self.calibrate(run, lambda: calibrated_sigma(
            q, steps, epochs - 1, ratios, run.epsilon, run.delta, params["accountant"]), 0.0)
        dual_clip = (float(n) if params["clip_dual"] == DUAL_BOUND
                     else float(params["clip_dual"]))
        return RunPlan.account(
            pfld_releases(q, steps, epochs - 1, sigma, ratios,
                          (float(params["clip_primal"]), dual_clip)),
            {"noise_multiplier": sigma, "sampling_rate": q, "steps": steps,
             "steps_per_epoch": per_epoch},
            run.delta, params["accountant"])


Tran2021bNonPrivate = nonprivate_twin(
    Tran2021b, "Tran2021bNonPrivate", name="tran2021b_nonprivate",
    label="Tran et al. 2021b F-LD (re-impl., non-private)",
    doc="The same Lagrangian dual training without privacy (epsilon = inf): exact counts and "
        "violations, no clipping, no noise (F-LD, Tran et al. 2021b Alg. 1, with our batches).",
    fixed={"clip_primal": math.inf, "clip_dual": math.inf, "dual_noise_ratio": 0.0,
           "count_noise_ratio": 0.0, "accountant": "rdp"})


class PfldProgram:
    """State (theta, multipliers ``[lam+, lam-]`` (R, 2C)), released counts and per-run streams
    of R runs.

    Run r makes the releases ``releases[r]`` (:func:`pfld_releases`; with C_d = ``"bound"``
    the dual release's sensitivity is :func:`violation_bound` of the released counts) with
    ``params[r]`` (steps, tolerance, ``sampling_rate``). Streams per run seed: ``"counts"``
    (the counts' noise, drawn here), ``"poisson"`` (batches), ``"noise"`` (loss-gradient
    noise), ``"constraint_noise"`` (Jacobian noise), ``"dual"`` (the violations' noise)."""

    def __init__(self, data: PreparedDataset, seeds: Sequence[int],
                 params: Sequence[dict[str, Any]], releases: Sequence[Repeat], *,
                 device: torch.device) -> None:
        runs = len(seeds)
        self.model = BatchedLogisticRegression(data.x_train.shape[1], num_classes=1)
        self.x = torch.as_tensor(data.x_train, device=device)
        self.rows = RowGatherer(self.x)
        self.y = torch.as_tensor(data.y_train, device=device)
        self.groups = GroupCells(params[0]["fairness"], len(data.group_names))
        self.parents = self.groups.parents(device)
        self.cells = self.groups.cell_of(self.y, torch.as_tensor(data.s_train, device=device))
        self.n = len(self.y)
        self.q = float(params[0]["sampling_rate"])
        self.steps, self.per_epoch = int(params[0]["steps"]), int(params[0]["steps_per_epoch"])
        self.steps_done = 0
        self.batch = expected_batch_size(self.n, self.q)
        self.lr, self.lr_dual, self.alpha = (per_run(params, key, device)
                                             for key in ("lr", "lr_dual", "alpha"))
        named = [{release.name: release for release in releases_of(tree)} for tree in releases]
        self.gradient, self.jacobian = (BatchedRelease.of(named, name, device)
                                        for name in ("gradient", "jacobian"))
        exact = torch.bincount(self.cells, minlength=self.groups.num_cells).to(self.x.dtype)
        self.counts = BatchedRelease.of(named, "counts", device).perturb(
            exact.expand(runs, -1).clone(), [make_generator(s, "counts", device) for s in seeds])
        bound = violation_bound(self.counts, self.parents, self.n)
        # the gap weights of a member of each cell (R, C', C): fixed by the released counts
        self.cell_weights = cell_gap_weights(self.counts, self.parents)
        #: The dual release (None if the plan makes none: one epoch).
        self.dual = BatchedRelease([
            dataclasses.replace(run["violations"], sensitivity=float(bound[r]))
            if p["clip_dual"] == DUAL_BOUND else run["violations"]
            for r, (run, p) in enumerate(zip(named, params, strict=True))
        ], device) if "violations" in named[0] else None
        self.state = self.model.init_state(runs, device)
        self.every_example = torch.arange(self.n, device=device).expand(runs, -1)
        self.multipliers = torch.zeros(runs, 2 * self.groups.num_cells, device=device)
        self.sampling = [make_generator(s, "poisson", device) for s in seeds]
        self.noise = [make_generator(s, "noise", device) for s in seeds]
        self.constraint_noise = [make_generator(s, "constraint_noise", device) for s in seeds]
        self.dual_noise = [make_generator(s, "dual", device) for s in seeds]

    def step(self) -> None:
        """One primal step, preceded by the dual step at the start of every epoch but the
        first (Alg. 1's epochs)."""
        if self.steps_done and self.steps_done % self.per_epoch == 0:
            self.dual_step()
        self.primal_step()
        self.steps_done += 1

    def primal_step(self) -> None:
        """Both primal releases of one Poisson batch at theta_t, then the descent step: the
        clipped sums in one compiled pass (:mod:`dpminimax.algorithms.fair.tran2021b_compiled`, the
        same bits) where the rows can be read in place, else in torch."""
        index, mask = poisson_batches(self.n, self.q, self.sampling, device=self.y.device)
        x = self.rows.take(index)
        if sparse_rows_supported(x, self.state["weight"], self.state["bias"],
                                 self.cell_weights):
            sums = pfld_sums(x, mask, self.y, self.cells, self.state, self.cell_weights,
                             self.n, self.gradient.clip, self.jacobian.clip)
            loss = {"weight": sums.loss_weight, "bias": sums.loss_bias}
            jacobian = {"weight": sums.jacobian_weight, "bias": sums.jacobian_bias}
        else:
            y, cells = batch_values(self.y, index), batch_values(self.cells, index)
            probs = binary_probs(linear_logits(self.state["weight"], self.state["bias"], x))

            def clipped_sums(residual: torch.Tensor,
                             release: BatchedRelease) -> dict[str, torch.Tensor]:
                weight, bias = clipped_outer_sum(residual, x, mask, release.clip)
                return {"weight": weight, "bias": bias}

            loss = clipped_sums(probs - y.to(probs.dtype).unsqueeze(-1), self.gradient)
            jacobian = clipped_sums(constraint_logit_jacobian(probs, cells, self.counts,
                                                              self.parents, self.n),
                                    self.jacobian)
        noisy = self.jacobian.perturb(jacobian, self.constraint_noise)
        step = self.lr / self.batch
        noisy_linear_descent(self.state, loss, release=self.gradient, generators=self.noise,
                             step_size=step)
        mu = self.combined_multipliers()
        self.state["weight"] -= step.view(-1, 1, 1) * (mu.unsqueeze(-1) * noisy["weight"]).sum(
            dim=1, keepdim=True)
        self.state["bias"] -= step.view(-1, 1) * (mu * noisy["bias"]).sum(dim=1, keepdim=True)

    def combined_multipliers(self) -> torch.Tensor:
        """``mu = lam+ - lam-`` (R, C): the weight of each gap in the Lagrangian."""
        plus, minus = self.multipliers.chunk(2, dim=1)
        return plus - minus

    def violations(self) -> torch.Tensor:
        """The released noisy clipped gaps ``g_hat`` (R, C) of the current theta on the whole
        training set."""
        probs = binary_probs(self._all_logits())
        cells = self.cells.expand(probs.shape[0], -1)
        contributions = violation_contributions(probs, cells, self.counts, self.parents, self.n)
        return self.dual.privatize(contributions, self.dual_noise) / self.n

    def _all_logits(self) -> torch.Tensor:
        """Logits (R, n, 1) of the whole training set: over the rows' non-zeros where the
        compiled loop can read them in place (Adult: 13 of 102 features; BENCHMARKS.md), else
        the dense logits of every row."""
        every_row = self.rows.take(self.every_example)
        if sparse_rows_supported(every_row, self.state["weight"], self.state["bias"]):
            return linear_logits(self.state["weight"], self.state["bias"], every_row)
        return self.model.logits(self.state, self.x)

    def dual_step(self) -> None:
        """Projected dual ascent on the released violations of both sides of every constraint."""
        released = self.violations()
        slack = torch.cat([released, -released], dim=1) - self.alpha.view(-1, 1)
        self.multipliers = torch.clamp(self.multipliers + self.lr_dual.view(-1, 1) * slack,
                                       min=0.0)
