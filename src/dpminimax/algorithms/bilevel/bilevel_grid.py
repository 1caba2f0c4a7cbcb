"""DP-Grid and Fixed-omega, the baselines of Section 7's tuner (our experiment E6), on a tuning
problem (:class:`~dpminimax.problems.ridge_tuning.RidgeTuning`).

DP-Grid: K log-spaced candidates omega_k; for each, the exact ridge fit on the training split
released by output perturbation (release ``fit``, replace-one sensitivity 2 L / (omega_k n):
the plan's 2 L / (mu_g n) shrunk by mu_g / omega_k, a public factor), projected onto Y; then
the validation losses of the K released fits, each example's clipped at ``loss_clip`` B
(min{f_i, B} in [0, B], so replacing one example moves each of the K summed losses by at most
B), and the candidate with the smallest loss is chosen by report-noisy-min (release ``select``:
Gumbel noise, the exponential mechanism; only the index is released); its released fit is the
deployed private model (``test_loss_released``). zCDP: rho* / 2 over the K fits, rho* / 2 for
the selection (epsilon_EM = sqrt(8 rho* / 2), Cesar & Rogers 2021). K is the number of points
the problem's ``candidates`` returns (a product grid for a vector omega). Fixed-omega is
DP-Grid with one candidate, omega_min: no selection, its one fit takes all of rho*.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import torch

from dpminimax.algorithms.base import RunPlan, RunSpec, nonprivate_twin
from dpminimax.algorithms.bilevel.bilevel_inner import modulus_shrink, subproblems
from dpminimax.algorithms.bilevel.dp_bilevel import (
    SHARED,
    TUNING,
    DpBilevel,
    inner_release,
    multiplier,
    run_samples,
    zcdp_budget,
)
from dpminimax.algorithms.params import COUNT, POSITIVE
from dpminimax.privacy.release import Batch, BatchedRelease, Release, Repeat, release_counts
from dpminimax.problems import BilevelProblem, FixedSample
from dpminimax.problems.base import stack_examples
from dpminimax.seeding import make_generator

GRID_RELEASES = ("fit", "select")


class DpGrid(DpBilevel):
    """DP-Grid (module docstring)."""

    name: ClassVar[str] = "dp_grid"
    label: ClassVar[str] = "DP-Grid: K candidate omegas, OP fits, report-noisy-min"
    parameters: ClassVar[dict[str, Any]] = {**DpBilevel.parameters, **TUNING, "candidates": 10,
                                            "loss_clip": 2.0}
    checks: ClassVar[dict[str, Any]] = {**DpBilevel.checks, "candidates": COUNT,
                                        "loss_clip": POSITIVE}
    shared_parameters: ClassVar[tuple[str, ...]] = (*SHARED, "candidates", "loss_clip")

    def plan(self, run: RunSpec, n: int, data: FixedSample | None = None) -> RunPlan:
        """K ``fit`` releases and, for K > 1, one ``select`` release (module docstring)."""
        params = self.resolve(run.params)
        problem = self.problem(params)
        count = len(self.candidates(problem, params))
        rho = self.calibrate(run, lambda: zcdp_budget(run.epsilon, run.delta), 0.0)
        fit_share = rho / (2 * count) if count > 1 else rho / count
        lower = subproblems(problem.constants, float(params["lam"]))["y"]
        parts = [Batch((inner_release("fit", params["inner"], lower, n, fit_share, None),),
                       count)]
        if count > 1:
            parts.append(Batch((Release("select", "exponential", multiplier(rho / 2),
                                        float(params["loss_clip"])),)))
        tree = Repeat(tuple(parts), 1)
        plan = RunPlan.account(tree, {"rho_per_fit": fit_share}, run.delta,
                               params["accountant"])
        return RunPlan(tree, plan.values, plan.record | self.guarantee(run, tree, plan, None))

    def candidates(self, problem: BilevelProblem, params: dict[str, Any]) -> torch.Tensor:
        """The problem's ``candidates`` points x (K, d_x) (refused for a problem without)."""
        if not hasattr(problem, "candidates"):
            raise ValueError(f"method {self.name!r} tunes a hyperparameter: problem "
                             f"{params['problem']!r} has no candidates")
        return problem.candidates(int(params["candidates"]))

    def program(self, data: FixedSample | None, runs: Sequence[RunSpec],
                resolved: Sequence[dict[str, Any]], shared: dict[str, Any],
                plans: Sequence[RunPlan], device: torch.device) -> GridProgram:
        problem = self.problem(shared)
        return GridProgram(problem, run_samples(problem, data, runs, shared, device), runs,
                           self.candidates(problem, shared).to(device),
                           float(shared["loss_clip"]), plans, device)


class FixedOmega(DpGrid):
    """Fixed-omega: DP-Grid with one candidate, omega_min (module docstring)."""

    name: ClassVar[str] = "fixed_omega"
    label: ClassVar[str] = "Fixed-ω (ω_min, no tuning), OP fit"
    fixed: ClassVar[dict[str, Any]] = {**DpGrid.fixed, "candidates": 1}
    parameters: ClassVar[dict[str, Any]] = {
        key: value for key, value in DpGrid.parameters.items() if key != "candidates"}


class GridProgram:
    """R runs of DP-Grid in one step over the candidate ``points`` (K, d_x); ``state`` is the
    chosen candidate x."""

    steps = 1
    #: The releases this program can make (those of its plan are batched, with their streams).
    RELEASES: tuple[str, ...] = GRID_RELEASES

    def __init__(self, problem: BilevelProblem, samples: list[dict[str, torch.Tensor]],
                 runs: Sequence[RunSpec], points: torch.Tensor, loss_clip: float,
                 plans: Sequence[RunPlan], device: torch.device) -> None:
        self.model, self.samples, self.points, self.loss_clip = problem, samples, points, loss_clip
        self.examples = stack_examples(samples)
        self.stats = problem.statistics(self.examples)
        names = [name for name in self.RELEASES if name in release_counts(plans[0].releases)]
        self.releases = {name: BatchedRelease([plan.release(name) for plan in plans], device)
                         for name in names}
        self.noise = {name: [make_generator(run.seed, f"noise_{name}", device) for run in runs]
                      for name in names}
        self.x_out = self.points[0].expand(len(runs), -1).clone()
        self.released = torch.zeros(len(runs), dtype=problem.dtype, device=device)

    @property
    def state(self) -> dict[str, torch.Tensor]:
        return {"x": self.x_out}

    @property
    def counters(self) -> list[dict[str, float]]:
        return [{"test_loss_released": float(value)} for value in self.released]

    def step(self) -> None:
        problem, runs = self.model, len(self.x_out)
        stacked = torch.stack([released_fit(problem, self.stats, point.expand(runs, -1),
                                            self.releases["fit"], self.noise["fit"])
                               for point in self.points], 1)
        chosen = torch.zeros(runs, dtype=torch.long, device=self.x_out.device)
        if "select" in self.releases:
            chosen = self._select(stacked)
        self.x_out = self.points[chosen]
        self.released = problem.test_loss(stacked[torch.arange(runs), chosen])

    def _select(self, fits: torch.Tensor) -> torch.Tensor:
        """The index of each run's smallest noisy validation loss (release ``select``)."""
        losses = clipped_validation_loss(self.model, fits, self.examples, self.loss_clip)
        return self.releases["select"].select_min(losses, self.noise["select"])


def released_fit(problem: BilevelProblem, stats: dict[str, torch.Tensor], x: torch.Tensor,
                 release: BatchedRelease, noise: Sequence[torch.Generator]) -> torch.Tensor:
    """The exact inner fit at each run's x (R, d_x) released by output perturbation
    (``release``, its sensitivity shrunk by mu_g / omega at x: the noise multiplier, hence the
    event, is the planned one), projected onto Y: (R, d_y)."""
    exact = problem.inner_solution(x, stats)
    factor = modulus_shrink(problem.constants, "y", problem.lower_modulus(x))
    return problem.y.project(release.shrunk(factor).perturb(exact, noise))


def clipped_validation_loss(problem: BilevelProblem, fits: torch.Tensor,
                            examples: dict[str, torch.Tensor], clip: float) -> torch.Tensor:
    """The validation loss of fits (R, M, d_y), each example's clipped at ``clip`` B: sums
    of terms in [0, B], so replacing one example moves each by at most B: (R, M)."""
    return torch.clamp(problem.validation_losses(fits, examples), max=clip).sum(-1)


NonPrivateGrid = nonprivate_twin(
    DpGrid, "NonPrivateGrid", name="np_grid", label="Grid search, exact fits and losses",
    doc="DP-Grid without noise: the best of the K candidates on the validation split.",
    fixed={"inner": "exact"})
