"""Bilevel optimization on a problem with exact answers (:mod:`dpminimax.problems.bilevel`): each
run's output x_out is measured on its own sample, exactly.

* ``gradient_mapping_norm``, the primary metric: ||G_{F_S,eta}(x_out)|| with the run's eta
  (A18: at x_{t_out}); ``hypergradient_norm`` ||grad F_S(x_out)|| (Eq. (1)); where the
  problem knows its population, ``population_gradient_mapping_norm`` ||G_{F_P,eta}(x_out)||
  (Thm. 6.1, E4); ``gradient_mapping_norm_last`` and ``_random`` at the last and at a
  uniformly random iterate (the output-rule ablation, E9);
* ``hyperobjective`` F_S(x_out); the dimensions ``d_x``, ``d_y`` of the run's problem;
  ``penalty_bias`` ||grad L*_lambda - grad F_S|| at x_out
  (Lemma 4.3 (ii));
* the program's counters: the largest inner errors ||y~_t - y*(x_t)||,
  ||y~l_t - y^lambda(x_t)|| and bias ||g_t - grad L*_lambda(x_t)|| over the steps, and how
  often the outer projection (A4) was active;
* on a tuning problem (Section 7), the problem's tuning metrics: the tuned omega, the test
  loss of the exact fit at it, and the sample's best omega and its test loss;
* the trivial baseline (``trivial_<metric>``, issue 36): every metric above that depends on
  the output, at x0 = 0 (the start point of Algs. 1 and 3 and the centre of X, a point every
  method could release without data) on the run's own sample, with the run's eta; and
  ``trivial_inner_error_max`` ||y0 - y*(x0)||, the error of the inner solvers' start y0 = 0,
  and for a released fit (DP-Grid) ``trivial_test_loss_released``, the test loss of y = 0.

Not attacked by membership inference (each run draws its own sample); the bilevel leak attack
(:mod:`dpminimax.attacks.bilevel_leak`) is its privacy check.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

import torch

from dpminimax.problems.base import stack_examples
from dpminimax.tasks.base import Task
from dpminimax.trivial import OUTPUT, column, prefixed

if TYPE_CHECKING:
    from dpminimax.fit_result import FitResult


#: Metrics that are no utility of the output: the dimensions, the penalty method's bias at it
#: and the sample's own tuning optimum (the same for every output).
NOT_OUTPUT = frozenset({"d_x", "d_y", "penalty_bias", "omega_best", "test_loss_best",
                        "test_loss_shared", "excess_test_loss_shared"})


class BilevelOptimization(Task):
    """The DP bilevel paper's study (module docstring)."""

    name: ClassVar[str] = "bilevel_optimization"
    attacked: ClassVar[bool] = False
    draws_data: ClassVar[bool] = True

    def evaluate(self, fit: FitResult, data: Any,
                 device: torch.device) -> list[dict[str, Any]]:
        problem = fit.method.problem(fit.resolved_params[0])
        if len(fit.samples) != len(fit.runs):
            raise ValueError(f"method {fit.method.name!r}: its program kept no training samples")
        rows: list[dict[str, Any]] = [dict(c) for c in fit.counters] or [{} for _ in fit.runs]
        # the runs of one job may differ in n (api.fit_by_shared joins the groups), and a
        # problem's statistics may be its examples (P-C logistic): runs grouped by n
        groups: dict[int, list[int]] = {}
        for r, sample in enumerate(fit.samples):
            groups.setdefault(len(next(iter(sample.values()))), []).append(r)
        for members in groups.values():
            each = [problem.statistics(stack_examples([fit.samples[r]])) for r in members]
            stats = {key: torch.cat([one[key] for one in each]) for key in each[0]}
            found = self._measure(problem, fit.state, fit, members, stats)
            start = {key: torch.zeros_like(value) for key, value in fit.state.items()}
            trivial = self._measure(problem, start, fit, members, stats)
            x0 = start["x"][members].to(problem.dtype)
            inner = torch.linalg.vector_norm(problem.inner_solution(x0, stats), dim=-1)
            for r, values, base, y0 in zip(members, found, trivial, inner, strict=True):
                rows[r] |= values | prefixed(
                    {key: value for key, value in base.items() if key not in NOT_OUTPUT})
                if "inner_error_max" in rows[r]:  # the inner solvers' start y0 = 0 at x0
                    rows[r][column("inner_error_max")] = float(y0)
                if "test_loss_released" in rows[r]:  # a released fit's: y = 0
                    rows[r][column("test_loss_released")] = float(problem.test_loss(
                        torch.zeros(1, problem.y.dim, dtype=problem.dtype))[0])
                rows[r][OUTPUT] = "x0 = 0"
        return rows

    @staticmethod
    def _measure(problem, state: dict[str, torch.Tensor], fit: FitResult, members: list[int],
                 stats: dict[str, torch.Tensor]) -> list[dict[str, Any]]:
        """The metrics of the outputs ``state`` of runs ``members`` (one n), whose samples'
        statistics are ``stats``."""
        x = state["x"][members].to(problem.dtype)
        eta, lam = (torch.tensor([float(fit.resolved_params[r][key]) for r in members],
                                 dtype=problem.dtype, device=x.device) for key in ("eta", "lam"))
        gradient = problem.hypergradient(x, stats)
        metrics = {
            "gradient_mapping_norm": problem.gradient_mapping(x, gradient, eta),
            "hypergradient_norm": gradient,
            "penalty_bias": problem.penalty_gradient(x, lam, stats) - gradient,
        }
        for rule in ("last", "random"):  # the output-rule ablation (E9)
            if f"x_{rule}" in state:
                other = state[f"x_{rule}"][members].to(problem.dtype)
                metrics[f"gradient_mapping_norm_{rule}"] = problem.gradient_mapping(
                    other, problem.hypergradient(other, stats), eta)
        norms = {key: torch.linalg.vector_norm(value, dim=-1) for key, value in metrics.items()}
        objective = problem.hyperobjective(x, stats)
        tuning = problem.tuning_metrics(x, stats)
        population = problem.population_statistics()
        if population is not None:  # Thm. 6.1: the same point measured on F_P
            every = {key: value.expand(len(x), *value.shape[1:])
                     for key, value in population.items()}
            norms["population_gradient_mapping_norm"] = torch.linalg.vector_norm(
                problem.gradient_mapping(x, problem.hypergradient(x, every), eta), dim=-1)
        rows = []
        for r in range(len(members)):
            row = {key: float(value[r]) for key, value in norms.items()}
            row |= {key: float(value[r]) for key, value in tuning.items()}
            row["hyperobjective"] = float(objective[r])
            row |= {"d_x": problem.x.dim, "d_y": problem.y.dim}
            rows.append(row)
        return rows


BILEVEL_OPTIMIZATION = BilevelOptimization()
