"""P-DRO (``kl_dro_logistic``, paper 004's Eq. (3) for a linear model): the known answers beyond
the generic problem checks of ``test_problems_exact``: the truncated conjugate and its slope are
the DP-DRO programs' weights, the KL duality (eta profiled out, an uncapped W gives
lam log E e^{l / lam}), the class prior, the tightness of the Lipschitz constant, and a ball too
small for the solution refused in one line."""

from __future__ import annotations

import math

import pytest
import torch
from scipy.optimize import minimize_scalar

from dpminimax.metrics.kl_dro import dual_weights
from dpminimax.problems import get_problem
from dpminimax.problems.kl_dro import KlDroLogistic, conjugate, conjugate_slope
from dpminimax.seeding import make_generator

F64 = torch.float64


def test_the_conjugate_is_exp_minus_one_up_to_the_cap_then_linear_with_its_slope():
    s = torch.linspace(-3.0, 4.0, 701, dtype=F64, requires_grad=True)
    cap = 5.0
    value = conjugate(s, cap)
    (slope,) = torch.autograd.grad(value.sum(), s)
    assert torch.allclose(slope, conjugate_slope(s.detach(), cap))
    below = s.detach() <= math.log(cap)
    assert torch.allclose(value.detach()[below], torch.expm1(s.detach()[below]))
    assert torch.allclose(conjugate_slope(s.detach(), cap)[~below], torch.full_like(
        s.detach()[~below], cap))


def test_the_weights_are_the_dp_dro_programs_dual_weights():
    """grad_eta f = 1 - w with w = dual_weights(l, eta, lam, W) of the DP-DRO programs."""
    problem = KlDroLogistic(d=4, lam=0.5, cap=3.0)
    sample = problem.sample(32, make_generator(0, "data"))
    z = torch.randn(2, 5, dtype=F64, generator=make_generator(1, "z"))
    examples = {k: v.expand(2, *v.shape) for k, v in sample.items()}
    losses = torch.nn.functional.softplus(
        -examples["b"] * torch.einsum("rbd,rd->rb", examples["a"], z[:, :-1]))
    w = dual_weights(losses, z[:, -1], torch.full((2,), 0.5, dtype=F64),
                     torch.full((2,), 3.0, dtype=F64))
    grads = problem.per_example_grads({"x": z}, examples)["x"]
    assert torch.allclose(grads[..., -1], 1.0 - w)


def test_profiling_eta_out_gives_the_kl_dual_lam_log_mean_exp():
    """min over eta of the population objective at a fixed x is lam log E e^{l / lam} (the
    KL-DRO duality of paper 004's Sec. 3), where the cap never binds."""
    problem = KlDroLogistic(d=6, lam=2.0, cap=1e6, radius=50.0)
    x = 0.3 * torch.randn(6, dtype=F64, generator=make_generator(2, "x"))
    a, b, weights = problem._population_rows()
    losses = torch.nn.functional.softplus(-b * (a @ x))

    def objective(eta: float) -> float:
        z = torch.cat([x, torch.tensor([eta], dtype=F64)]).unsqueeze(0)
        return float(problem.population_objective({"x": z})[0])

    best = minimize_scalar(objective, bounds=(-5.0, 10.0), method="bounded",
                           options={"xatol": 1e-12})
    assert best.fun == pytest.approx(
        float(2.0 * torch.log(weights @ torch.exp(losses / 2.0))), rel=1e-9)


def test_the_positive_class_is_rare_at_the_stated_prior():
    problem = get_problem("kl_dro_logistic", seed=3, d=10)
    assert float(problem.positive.mean()) == pytest.approx(0.1, abs=1e-12)
    sample = problem.sample(20000, make_generator(0, "data"))
    assert float((sample["b"] > 0).double().mean()) == pytest.approx(0.1, abs=0.01)


def test_the_lipschitz_constant_is_nearly_attained():
    """The bound sqrt((W r_a)^2 + max(1, W - 1)^2) holds and comes within 5% on examples whose
    loss saturates the weight cap."""
    problem = KlDroLogistic(d=4)
    sample = problem.sample(256, make_generator(0, "data"))
    z = torch.cat([-20.0 * sample["b"][:1, None] * sample["a"][:1, :], torch.tensor([[-3.0]],
                                                                                     dtype=F64)],
                  dim=1)
    grads = problem.per_example_grads({"x": z}, {k: v.unsqueeze(0) for k, v in sample.items()})
    norms = torch.linalg.vector_norm(grads["x"], dim=-1)
    assert float(norms.max()) <= problem.constants.lipschitz
    assert float(norms.max()) >= 0.95 * problem.constants.lipschitz


def test_a_ball_that_cuts_the_population_solution_is_refused():
    with pytest.raises(ValueError, match="^radius: the population solution"):
        KlDroLogistic(d=10, radius=1.0)
