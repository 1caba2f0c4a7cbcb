"""Private tuning by random repetition (Papernot & Steinke 2022, "Hyperparameter tuning with
Renyi differential privacy", Sec. 3 and Thm. 2), the private-selection competitor Section 7
names, on DP-Grid's tuning problems (:mod:`.bilevel_grid`).

One run: draw the number of trials K from the truncated negative binomial with shape 1, the
geometric P[K = k] = gamma (1 - gamma)^(k - 1), k >= 1, gamma = 1 / ``trials_mean`` (the
authors' experiments' choice; mean DP-Grid's K = 10 by default), from the run's own seed
stream ``trials``. Each trial draws its candidate omega uniformly from DP-Grid's candidate
set (the same stream), releases the OP fit at it (release ``fit``, DP-Grid's, noise shrunk to
the modulus at omega) and its validation loss, each example's clipped at ``loss_clip`` B,
with Gaussian noise (release ``score``, replace-one sensitivity B). The output is the trial
with the smallest noisy validation loss: its omega and its released fit, the deployed model
(``test_loss_released``); nothing else of the other trials is released.

Assumptions of Papernot & Steinke's Sec. 3.3, as met here: the candidate is random per trial
and the trials are independent given the data; one RDP bound holds for every candidate (the
plan's ``fit`` sensitivity is the worst candidate's, omega_min = mu_g; a larger omega shrinks
sensitivity and noise together, keeping the noise multiplier and so the event); only the best
trial's output is released (the losses of the others are compared, never published).

Accounting (not written here): a trial's event is the composition of its two Gaussian
releases (``GaussianDpEvent`` with multiplier = noise std / replace-one sensitivity), wrapped
in dp_accounting's ``RepeatAndSelectDpEvent(trial, mean, shape=1)``, whose ``RdpAccountant``
applies Thm. 2 (arXiv 2110.03620v2, p. 5). The one noise multiplier of both releases is the
smallest whose RDP epsilon at the run's delta meets its epsilon (bisection,
:func:`~dpminimax.privacy.calibrate.calibrate_release_parameter`); the plan records it and the
epsilon of one trial alone (``epsilon_one_trial``), which the repetition raises.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import torch

from dpminimax.algorithms.base import RunPlan, RunSpec
from dpminimax.algorithms.bilevel.bilevel_grid import (
    DpGrid,
    GridProgram,
    clipped_validation_loss,
    released_fit,
)
from dpminimax.algorithms.bilevel.bilevel_inner import subproblems
from dpminimax.algorithms.bilevel.dp_bilevel import run_samples
from dpminimax.algorithms.params import COUNT, one_of
from dpminimax.privacy.accounting import epsilon
from dpminimax.privacy.calibrate import calibrate_release_parameter
from dpminimax.privacy.release import Batch, Release, RepeatAndSelect
from dpminimax.problems import BilevelProblem, FixedSample
from dpminimax.seeding import make_generator

#: The truncated negative binomial's shape: 1, the geometric distribution.
GEOMETRIC = 1.0
TRIAL_RELEASES = ("fit", "score")


def trial_count(generator: torch.Generator, mean: float) -> int:
    """K ~ geometric with success probability gamma = 1 / mean: P[K = k] = gamma (1 -
    gamma)^(k - 1), k >= 1 (dp_accounting's ``_gamma_truncated_negative_binomial`` at shape 1)."""
    draw = torch.empty(1, dtype=torch.float64).geometric_(1.0 / mean, generator=generator)
    return int(draw.item())


class PsTuning(DpGrid):
    """Papernot & Steinke's random-repetition tuner (module docstring)."""

    name: ClassVar[str] = "ps_tuning"
    label: ClassVar[str] = "Papernot-Steinke: geometric # of trials, OP fit + noisy loss, best"
    paper: ClassVar[str] = "bilevel"
    source: ClassVar[str] = "Papernot & Steinke 2022"
    parameters: ClassVar[dict[str, Any]] = {**DpGrid.parameters, "trials_mean": 10}
    checks: ClassVar[dict[str, Any]] = {**DpGrid.checks, "trials_mean": COUNT,
                                        "accountant": one_of("rdp")}
    shared_parameters: ClassVar[tuple[str, ...]] = (*DpGrid.shared_parameters, "trials_mean")

    def plan(self, run: RunSpec, n: int, data: FixedSample | None = None) -> RunPlan:
        """One trial (``fit``, ``score``) in a :class:`RepeatAndSelect`, its noise multiplier
        calibrated to the target (module docstring)."""
        params = self.resolve(run.params)
        problem = self.problem(params)
        self.candidates(problem, params)
        fit = subproblems(problem.constants, float(params["lam"]))["y"].output_sensitivity(n)
        clip, mean = float(params["loss_clip"]), float(params["trials_mean"])

        def trial(noise: float) -> tuple[Batch, ...]:
            return (Batch((Release("fit", "gaussian", noise, fit),
                           Release("score", "gaussian", noise, clip))),)

        def tree(noise: float) -> RepeatAndSelect:
            return RepeatAndSelect(trial(noise), mean, GEOMETRIC)

        noise = self.calibrate(run, lambda: calibrate_release_parameter(
            tree, run.epsilon, run.delta, "rdp"), 0.0)
        one = epsilon(trial(noise)[0].event(), run.delta)
        plan = RunPlan.account(tree(noise), {"noise_multiplier": noise, "trials_mean": mean,
                                             "trials_shape": GEOMETRIC,
                                             "epsilon_one_trial": one}, run.delta, "rdp")
        return RunPlan(plan.releases, plan.values,
                       plan.record | self.guarantee(run, plan.releases, plan, None))

    def program(self, data: FixedSample | None, runs: Sequence[RunSpec],
                resolved: Sequence[dict[str, Any]], shared: dict[str, Any],
                plans: Sequence[RunPlan], device: torch.device) -> TrialsProgram:
        problem = self.problem(shared)
        return TrialsProgram(problem, run_samples(problem, data, runs, shared, device), runs,
                             self.candidates(problem, shared).to(device),
                             float(shared["loss_clip"]), float(shared["trials_mean"]), plans,
                             device)


class TrialsProgram(GridProgram):
    """R runs of :class:`PsTuning` in one step; ``state`` is the best trial's candidate x.
    Every run makes max_r K_r trials (vectorised); run r's trials beyond its K_r are dropped
    before the selection, its noise streams and its output unchanged by the other runs."""

    RELEASES = TRIAL_RELEASES

    def __init__(self, problem: BilevelProblem, samples: list[dict[str, torch.Tensor]],
                 runs: Sequence[RunSpec], points: torch.Tensor, loss_clip: float,
                 mean: float, plans: Sequence[RunPlan], device: torch.device) -> None:
        super().__init__(problem, samples, runs, points, loss_clip, plans, device)
        streams = [make_generator(run.seed, "trials") for run in runs]
        counts = [trial_count(stream, mean) for stream in streams]
        #: each run's candidate index per trial (R, max K); -1 past its K_r
        self.choices = torch.full((len(runs), max(counts)), -1, dtype=torch.long)
        for r, (stream, count) in enumerate(zip(streams, counts, strict=True)):
            self.choices[r, :count] = torch.randint(len(points), (count,), generator=stream)
        self.choices = self.choices.to(device)

    @property
    def counters(self) -> list[dict[str, float]]:
        return [{"test_loss_released": float(value), "trials": float(count)}
                for value, count in zip(self.released, (self.choices >= 0).sum(1),
                                        strict=True)]

    def step(self) -> None:
        problem, runs = self.model, len(self.x_out)
        best = torch.full((runs,), torch.inf, dtype=problem.dtype, device=self.x_out.device)
        fit_out = torch.zeros(runs, problem.y.dim, dtype=problem.dtype,
                              device=self.x_out.device)
        for choice in self.choices.T:
            x = self.points[choice.clamp(min=0)]
            fit = released_fit(problem, self.stats, x, self.releases["fit"], self.noise["fit"])
            loss = clipped_validation_loss(problem, fit.unsqueeze(1), self.examples,
                                           self.loss_clip).squeeze(1)
            noisy = self.releases["score"].perturb(loss, self.noise["score"])
            better = (choice >= 0) & (noisy < best)
            best = torch.where(better, noisy, best)
            self.x_out = torch.where(better.unsqueeze(-1), x, self.x_out)
            fit_out = torch.where(better.unsqueeze(-1), fit, fit_out)
        self.released = problem.test_loss(fit_out)
