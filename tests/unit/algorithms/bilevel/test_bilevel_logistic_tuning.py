"""P-C with a logistic lower level (testbed P-C, E7): Newton's inner solutions, Eq. (1)
with the exact Hessian, the constants and the tuners on it."""

from __future__ import annotations

import math

import pytest
import torch
from fit_stability import largest_fit_changes, op_sensitivities
from scipy.optimize import minimize

from dpminimax.algorithms import get_method
from dpminimax.algorithms.base import RunSpec
from dpminimax.problems import get_bilevel_problem
from dpminimax.problems.base import stack_examples
from dpminimax.problems.logistic_tuning import LOGISTIC_THIRD, logistic_terms, newton_solve
from dpminimax.seeding import make_generator

CPU = torch.device("cpu")
DELTA = 1e-5
LAM = 110_000.0
PCL = {"problem": "pc_logistic_tuning", "d_x": 1, "d_y": 10, "lam": LAM}


def _problem():
    return get_bilevel_problem("pc_logistic_tuning", d_x=1, d_y=10, seed=0)


def _stats(problem, n: int, seeds=(0, 1, 2)):
    examples = stack_examples([problem.sample(n, make_generator(s, "data")) for s in seeds])
    return examples, problem.statistics(examples)


def _points(problem, *omegas: float) -> torch.Tensor:
    return torch.tensor([[w - problem.omega_center] for w in omegas], dtype=torch.float64)


def _objective(a, b, weights, diagonal):
    """The problem Newton solves, as a scipy objective with its gradient."""
    def value(y):
        loss, grad, _ = logistic_terms(a[None], b[None], weights[None],
                                       torch.from_numpy(y)[None])
        t = torch.from_numpy(y)
        return (float(loss[0] + 0.5 * (diagonal * t * t).sum()),
                (grad[0] + diagonal * t).numpy())
    return value


def test_newton_reaches_the_minimizer_scipy_finds():
    problem = _problem()
    examples, stats = _stats(problem, 600)
    x = _points(problem, 0.001, 0.01, 0.1)
    mine = problem.inner_solution(x, stats)
    for r in range(3):
        diagonal = problem.omegas(x)[r].expand(10)
        found = minimize(_objective(stats["a_tr"][r], stats["b_tr"][r], stats["w_tr"][r],
                                    diagonal), torch.zeros(10).double().numpy(), jac=True,
                         method="L-BFGS-B", options={"gtol": 1e-12, "ftol": 1e-15})
        assert float(torch.linalg.vector_norm(mine[r] - torch.from_numpy(found.x))) < 1e-5
    gradient = problem.mean_grad("g", "y", x, mine, stats)
    assert float(gradient.norm(dim=-1).max()) < 1e-9


def test_newton_refuses_to_return_an_unconverged_point(monkeypatch):
    import dpminimax.problems.logistic_tuning as module

    monkeypatch.setattr(module, "NEWTON_STEPS", 1)
    problem = _problem()
    _, stats = _stats(problem, 200)
    with pytest.raises(RuntimeError, match="did not reach"):
        newton_solve(stats["a_tr"], stats["b_tr"], stats["w_tr"], torch.full((3, 10), 0.001,
                                                                             dtype=torch.float64))


def test_penalty_solution_is_stationary_for_f_plus_lambda_g():
    problem = _problem()
    _, stats = _stats(problem, 600)
    x = _points(problem, 0.002, 0.02, 0.09)
    lam = torch.full((3,), 50.0, dtype=torch.float64)
    y = problem.penalty_solution(x, lam, stats)
    gradient = (problem.mean_grad("f", "y", x, y, stats)
                + lam.unsqueeze(-1) * problem.mean_grad("g", "y", x, y, stats))
    assert float(gradient.norm(dim=-1).max()) < 1e-8
    # Lemma 4.3: ||y^lambda - y*|| shrinks like 1 / lambda
    gaps = [float(torch.linalg.vector_norm(
        problem.penalty_solution(x, torch.full((3,), value, dtype=torch.float64), stats)
        - problem.inner_solution(x, stats), dim=-1).max()) for value in (1e3, 1e4)]
    assert gaps[0] / gaps[1] == pytest.approx(10, rel=0.05)


def test_hypergradient_is_the_derivative_of_the_hyperobjective():
    """Eq. (1) with the exact Hessian against a central difference of F_S."""
    problem = _problem()
    _, stats = _stats(problem, 800)
    x = _points(problem, 0.003, 0.03, 0.08)
    step = 1e-5
    numeric = (problem.hyperobjective(x + step, stats)
               - problem.hyperobjective(x - step, stats)) / (2 * step)
    exact = problem.hypergradient(x, stats)[:, 0]
    torch.testing.assert_close(exact, numeric, rtol=1e-5, atol=1e-7)


def test_per_example_gradients_match_autograd_and_stay_within_the_constants():
    """Each example's gradient against autograd of its loss; the data-dependent part within
    ``l0g_y`` / ``l0f_y`` and the whole within l0g, also at the extreme examples (||a|| = 1
    against y on the boundary of Y)."""
    problem = _problem()
    c = problem.constants
    examples, _ = _stats(problem, 40, seeds=(0,))
    radius = problem.y.radius
    y = problem.y.project(radius * torch.nn.functional.normalize(
        torch.randn(1, 10, generator=torch.Generator().manual_seed(1), dtype=torch.float64)))
    unit = torch.nn.functional.normalize(y, dim=-1)
    extreme = {"a": torch.cat([examples["a"], -unit.unsqueeze(1), unit.unsqueeze(1)], 1),
               "b": torch.cat([examples["b"], torch.ones(1, 2, dtype=torch.float64)], 1),
               "val": torch.cat([examples["val"], torch.tensor([[0.0, 1.0]])], 1)}
    extreme["val"] = extreme["val"].to(torch.float64)
    x = _points(problem, 0.1)
    for level in ("f", "g"):
        grads = problem.per_example_grad(level, "y", x, y, extreme)
        for i in range(extreme["a"].shape[1]):
            one = {k: v[0, i] for k, v in extreme.items()}
            leaf = y[0].clone().requires_grad_(True)
            weight = 2.0 * (one["val"] if level == "f" else 1 - one["val"])
            loss = problem.example_loss(level, x[0], leaf, one)
            (auto,) = torch.autograd.grad(loss, leaf)
            torch.testing.assert_close(grads[0, i], auto)
            data = grads[0, i] - (0.0 if level == "f" else problem.omegas(x)[0, 0] * y[0])
            bound = c.l0f_y if level == "f" else c.l0g_y
            assert float(data.norm()) <= bound * (1 + 1e-12) * float(weight > 0) + 1e-12
            whole = torch.cat([problem.per_example_grad(level, "x", x, y, extreme)[0, i],
                               grads[0, i]])
            assert float(whole.norm()) <= (c.l0f if level == "f" else c.l0g) * (1 + 1e-12)
    # the extreme training example (a = -y / ||y||, b = 1) nearly attains l0g_y
    assert float(grads[0, -2].norm() - (problem.omegas(x)[0, 0] * y[0]).norm()) > 0.0
    grid = torch.linspace(-5, 5, 10001, dtype=torch.float64)
    assert LOGISTIC_THIRD == pytest.approx(max(abs(_third(z)) for z in grid), rel=1e-6)


def _third(z: torch.Tensor) -> float:
    s = torch.sigmoid(z)
    return float(s * (1 - s) * (1 - 2 * s))


def test_replacing_an_example_moves_the_fits_within_their_op_sensitivities():
    """Output perturbation's replace-one sensitivities: 2 l0g_y / (omega n) for y* and
    2 (l0f_y + lambda l0g_y) / ((lambda omega - L1f) n) for y^lambda (split weight 2), against
    a training and a validation example replaced by an extreme one (||a|| = 1 against the
    fit, either label)."""
    problem, n, lam = _problem(), 400, LAM
    examples = problem.sample(n, make_generator(0, "data"))
    lam_t = torch.tensor([lam], dtype=torch.float64)
    for omega in (0.001, 0.01, 0.1):
        changes = largest_fit_changes(problem, examples, _points(problem, omega), lam_t,
                                      (0, n - 1))
        for name, bound in op_sensitivities(problem.constants, omega, lam, n).items():
            assert 0 < changes[name] <= bound, (name, omega, changes[name], bound)


def _fit(name: str, target: float, seeds=(0, 1, 2, 3), **params):
    method = get_method(name)
    given = {key: value for key, value in {**PCL, **params}.items() if key in method.parameters}
    runs = [RunSpec(seed, target, DELTA, given) for seed in seeds]
    fit = method.fit(None, runs, CPU)
    return fit, method.task.evaluate(fit, None, CPU)


def test_np_aid_reaches_the_stationary_point_and_grid_search_its_neighbourhood():
    _, rows = _fit("np_aid", math.inf, n=600, outer_steps=1000, eta=0.05)
    assert max(row["gradient_mapping_norm"] for row in rows) < 1e-8
    _, grid = _fit("np_grid", math.inf, n=600, loss_clip=4.0)
    for row, found in zip(rows, grid, strict=True):
        # the best of 10 log-spaced candidates is within a grid step of the best omega
        assert abs(math.log10(found["omega_out"] / row["omega_out"])) <= 2 / 9 + 1e-9
        assert found["excess_test_loss"] >= row["excess_test_loss"] - 1e-3


def test_private_tuners_run_on_it_within_their_budget():
    for name, params in (("dp_bilevel_pp", {"outer_steps": 5, "eta": 0.03}),
                         ("dp_grid", {"loss_clip": 4.0}), ("fixed_omega", {})):
        fit, rows = _fit(name, 2.0, n=400, **params)
        assert all(record["epsilon"] <= 2.0 for record in fit.accounting)
        problem = _problem()
        for row in rows:
            assert problem.omega_min - 1e-12 <= row["omega_out"] <= problem.omega_max + 1e-12
            assert math.isfinite(row["excess_test_loss"])
    with pytest.raises(ValueError, match="A5"):
        _fit("dp_bilevel_pp", 2.0, n=400, lam=1500.0)
