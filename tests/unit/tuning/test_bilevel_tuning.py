"""Section 7's tuning (DP bilevel, testbed P-C, E6): P-C's closed forms, the exact
stationary point of the non-private references, the sign error of A10, and the privacy of the
tuners, checked against quantities derived here: the inner fits' replace-one sensitivity at the
current omega (2 L / (omega n) for g, 2 (L_f + lambda L_g) / ((lambda omega - L1f) n) for
f + lambda g) bounds the measured change of the exact fits when one example is replaced, the
post-processing variant plans the 2 T inner fits only, DP-Grid's noise has the scale of its
zCDP split, and every plan's epsilon is within its target."""

from __future__ import annotations

import math
from collections import defaultdict

import pytest
import torch
from fit_stability import largest_fit_changes, op_sensitivities
from release_spy import spied_fit

from dpminimax.algorithms import get_method
from dpminimax.algorithms.base import RunSpec
from dpminimax.algorithms.bilevel.dp_bilevel import zcdp_budget
from dpminimax.privacy import epsilon
from dpminimax.privacy.release import BatchedRelease, release_counts, releases_of
from dpminimax.problems import get_bilevel_problem
from dpminimax.problems.base import stack_examples
from dpminimax.seeding import make_generator

CPU = torch.device("cpu")
DELTA = 1e-5
PC = {"problem": "pc_ridge_tuning", "d_x": 1, "d_y": 10, "lam": 1500.0, "eta": 3.0}


def _problem():
    return get_bilevel_problem("pc_ridge_tuning", d_x=1, d_y=10, seed=0)


def _stats(problem, n: int, seeds=(0, 1, 2)):
    examples = stack_examples([problem.sample(n, make_generator(s, "data")) for s in seeds])
    return examples, problem.statistics(examples)


def _points(*omegas: float) -> torch.Tensor:
    problem = _problem()
    return torch.tensor([[w - problem.omega_center] for w in omegas], dtype=torch.float64)


def test_pc_closed_forms_are_the_argmins_and_eq_1_is_the_derivative():
    problem = _problem()
    examples, stats = _stats(problem, 400)
    x = _points(0.05, 0.3, 0.9)
    lam = torch.full((3,), 50.0, dtype=torch.float64)
    y = problem.inner_solution(x, stats)
    y_lam = problem.penalty_solution(x, lam, stats)
    for level in "fg":
        for block in "xy":
            probe = torch.randn(3, 10, dtype=torch.float64)
            torch.testing.assert_close(problem.per_example_grad(level, block, x, probe,
                                                                examples).mean(1),
                                       problem.mean_grad(level, block, x, probe, stats))
    assert float(problem.mean_grad("g", "y", x, y, stats).abs().max()) < 1e-12
    stationary = (problem.mean_grad("f", "y", x, y_lam, stats)
                  + lam.unsqueeze(-1) * problem.mean_grad("g", "y", x, y_lam, stats))
    assert float(stationary.abs().max()) < 1e-12
    h = 1e-6
    numeric = (problem.hyperobjective(x + h, stats) - problem.hyperobjective(x - h, stats)) / (
        2 * h)
    torch.testing.assert_close(problem.hypergradient(x, stats).squeeze(-1), numeric,
                               rtol=1e-6, atol=1e-10)
    assert float(torch.linalg.vector_norm(y, dim=-1).max()) <= problem.y.radius


def test_the_penalty_vector_tends_to_the_hypergradient_like_one_over_lambda():
    """A check of Sec. 7's rule: lambda (R(y^lambda) - R(y*)) -> F'(omega), error ~ 1 / lambda; so
    descent must subtract it (A10)."""
    problem = _problem()
    _, stats = _stats(problem, 2000, seeds=(0,))
    x = _points(0.2)
    exact = problem.hypergradient(x, stats)
    errors = []
    for lam in (1e2, 1e3, 1e4):
        lam_t = torch.tensor([lam], dtype=torch.float64)
        vector = problem.public_outer(x, problem.inner_solution(x, stats),
                                      problem.penalty_solution(x, lam_t, stats), lam_t)
        torch.testing.assert_close(vector, problem.penalty_gradient(x, lam_t, stats))
        errors.append(float((vector - exact).abs()))
    assert errors[0] / errors[1] == pytest.approx(10, rel=0.05)
    assert errors[1] / errors[2] == pytest.approx(10, rel=0.05)


def _fit(name: str, target: float, seeds=(0, 1, 2, 3), **params):
    method = get_method(name)
    given = {key: value for key, value in {**PC, **params}.items() if key in method.parameters}
    runs = [RunSpec(seed, target, DELTA, given) for seed in seeds]
    fit = method.fit(None, runs, CPU)
    return method, fit, method.task.evaluate(fit, None, CPU)


def test_np_aid_reaches_the_exact_stationary_point_of_pc():
    """Done means (issue #22): the non-private reference's ||G_{F_S,eta}(x_out)|| < 1e-8."""
    _, _, rows = _fit("np_aid", math.inf, n=400, outer_steps=3000)
    assert max(row["gradient_mapping_norm"] for row in rows) < 1e-8
    for row in rows:  # F_S is unimodal here: its stationary point is the grid's best omega
        assert row["omega_out"] == pytest.approx(row["omega_best"], rel=0.02, abs=1e-3)


def test_the_printed_closed_form_ascends_and_the_fixed_sign_descends():
    """A10: Section 7's final expression adds N(R(y~l) - R(y~), .) (ascent): with exact inner
    solutions it ends at a higher validation loss than where it started, the penalty method
    with the fixed sign at a lower one."""
    problem = _problem()
    start = _points(problem.omega_center)
    final = {}
    for name in ("np_pen", "sec7_paper_sign"):
        _, fit, rows = _fit(name, math.inf, n=1000, outer_steps=400)
        stats = problem.statistics(stack_examples(fit.samples))
        initial = problem.hyperobjective(start.expand(len(rows), -1), stats)
        final[name] = torch.tensor([row["hyperobjective"] for row in rows],
                                   dtype=torch.float64)
    assert bool((final["np_pen"] <= initial + 1e-12).all())
    assert bool((final["sec7_paper_sign"] >= initial - 1e-12).all())
    assert bool((final["sec7_paper_sign"] > final["np_pen"]).all())


def test_inner_sensitivities_at_omega_bound_the_exact_fits_change():
    """Replacing one example within its split moves y*(x) and y^lambda(x) by at most the
    sensitivity the post-processing variant releases them with at x (the plan's, shrunk to
    omega); checked on extreme replacements (a on the unit sphere along y, b = -+1)."""
    method = get_method("dp_bilevel_pp")
    problem, n, lam = _problem(), 400, 1500.0
    run = RunSpec(0, 1.0, DELTA, {"n": n, "outer_steps": 2})
    program = method.program(None, [run], [method.resolve(run.params)],
                             method.resolve(run.params), [method.plan(run, n)], CPU)
    examples = problem.sample(n, make_generator(3, "data"))
    lam_t = torch.tensor([lam], dtype=torch.float64)
    for omega in (0.02, 0.1, 0.5, 1.0):
        x = _points(omega)
        # a training and a validation example replaced by an extreme one
        changes = largest_fit_changes(problem, examples, x, lam_t, (0, n - 1))
        for name, value in op_sensitivities(problem.constants, omega, lam, n).items():
            shrunk = program.shrunk(program.releases[f"inner_{name}"], name, x)
            assert shrunk.releases[0].sensitivity == pytest.approx(value, rel=1e-12)
            assert changes[name] <= value, (name, omega, changes[name], value)


def test_post_processing_variant_plans_the_inner_fits_only_and_refuses_pa():
    method = get_method("dp_bilevel_pp")
    for target in (0.5, 2.0, 8.0):
        run = RunSpec(0, target, DELTA, {"n": 1000, "outer_steps": 20})
        plan = method.plan(run, 1000)
        assert release_counts(plan.releases) == {"inner_y": 20, "inner_y_lambda": 20}
        assert plan.values["rho_per_mechanism"] == pytest.approx(
            zcdp_budget(target, DELTA) / 40)
        assert plan.record["epsilon"] == pytest.approx(epsilon(plan.event(), DELTA, "rdp"))
        assert plan.record["epsilon"] <= target and plan.record["guarantee_covered"]
    with pytest.raises(ValueError, match="reads the data"):
        method.plan(RunSpec(0, 1.0, DELTA, {"problem": "pa_linear_response", "d_x": 4,
                                            "d_y": 16, "lam": 10.0}), 1000)


def _spied(name: str, target: float, seeds, selections=None, **params):
    """(method, runs, plans, {(run, release): [noise]}, {(run, release): [sensitivity]});
    report-noisy-min calls are appended to ``selections``."""
    method = get_method(name)
    runs = [RunSpec(seed, target, DELTA, params) for seed in seeds]
    calls = spied_fit(method, None, runs, selections=selections)
    plans = [method.plan(run, params["n"]) for run in runs]
    noise, sensitivities = defaultdict(list), defaultdict(list)
    for releases, summed, out in calls:
        for r, release in enumerate(releases):
            planned = {p.name: p for p in releases_of(plans[r].releases)}[release.name]
            assert release.noise_multiplier == planned.noise_multiplier
            assert release.sensitivity <= planned.sensitivity * (1 + 1e-12)
            noise[r, release.name].append((out[r] - summed[r]).flatten())
            sensitivities[r, release.name].append(release.sensitivity)
    return method, runs, plans, noise, sensitivities


def test_dp_grid_noise_is_its_zcdp_split():
    """K fits at rho* / (2 K) each with sensitivity 2 L / (omega_k n): each fit's noise /
    (its planned std) is N(0, 1); the selection is report-noisy-min at rho* / 2 over the
    clipped loss sums (each moves by at most B), accounted as exactly that zCDP."""
    n, count, clip = 1000, 5, 2.0
    selections = []
    method, runs, plans, noise, sens = _spied("dp_grid", 1.0, range(8), selections, n=n,
                                              candidates=count, loss_clip=clip)
    problem, c = _problem(), _problem().constants
    budget = zcdp_budget(1.0, DELTA)
    omegas = [float(w) for w in problem.candidates(count)[:, 0] + problem.omega_center]
    assert release_counts(plans[0].releases) == {"fit": count, "select": 1}
    for r in range(len(runs)):
        assert sens[r, "fit"] == pytest.approx([2 * c.l0g_y / (w * n) for w in omegas])
    rho = budget / (2 * count)
    scaled = torch.cat([draw / (s / math.sqrt(2 * rho)) for r in range(len(runs))
                        for draw, s in zip(noise[r, "fit"], sens[r, "fit"], strict=True)])
    measured = float(scaled.pow(2).mean().sqrt())
    assert abs(math.log(measured)) <= 4.0 / math.sqrt(2 * len(scaled)) + 0.02
    ((releases, scores, chosen),) = selections
    assert scores.shape == (len(runs), count)
    for release in releases:
        assert release.mechanism == "exponential" and release.sensitivity == clip
        assert release.event().rho == pytest.approx(budget / 2, rel=1e-12)
    assert {r.name: r for r in releases_of(plans[0].releases)}["select"] == releases[0]
    assert plans[0].record["epsilon"] <= 1.0


def test_fixed_omega_releases_one_fit_with_the_whole_budget():
    n = 1000
    method, runs, plans, noise, sens = _spied("fixed_omega", 2.0, range(40), n=n)
    assert release_counts(plans[0].releases) == {"fit": 1}
    c = _problem().constants
    std = 2 * c.l0g_y / (0.02 * n) / math.sqrt(2 * zcdp_budget(2.0, DELTA))
    draws = torch.cat([torch.cat(noise[r, "fit"]) for r in range(len(runs))])
    assert float(draws.pow(2).mean().sqrt()) == pytest.approx(std, rel=0.1)
    assert plans[0].record["epsilon"] <= 2.0


def test_dp_grid_selection_clips_each_examples_losses():
    """A fit far from the data (the released fits are projected onto Y, radius 10) gives
    validation losses above the clip: each example's loss enters the released sum at most
    ``loss_clip`` (the selection's sensitivity), so the noiseless sum is at most n_val B."""
    from dpminimax.algorithms.bilevel.bilevel_grid import GridProgram

    method = get_method("np_grid")
    run = RunSpec(0, math.inf, DELTA, {"n": 200, "candidates": 3, "loss_clip": 0.5})
    resolved = method.resolve(run.params)
    program = method.program(None, [run], [resolved], resolved, [method.plan(run, 200)], CPU)
    assert isinstance(program, GridProgram)
    far = torch.full((1, 3, 10), 3.0, dtype=torch.float64)
    raw = program.model.validation_losses(far, program.examples).sum(-1)
    captured = []
    original = BatchedRelease.select_min

    def select_min(release, scores, generators):
        captured.append(scores.clone())
        return original(release, scores, generators)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(BatchedRelease, "select_min", select_min)
        program._select(far)
    assert bool((raw > 100 * 0.5).all())
    assert bool((captured[0] <= 200 * 0.5 + 1e-12).all())


def test_tuning_metrics_and_a_run_alone_equals_it_in_a_batch():
    for name in ("dp_bilevel_pp", "dp_grid", "fixed_omega"):
        _, batch, rows = _fit(name, 2.0, n=400, outer_steps=5)
        _, alone, _ = _fit(name, 2.0, seeds=(2,), n=400, outer_steps=5)
        torch.testing.assert_close(alone.state["x"][0], batch.state["x"][2])
        problem = _problem()
        for row in rows:
            assert problem.omega_min - 1e-12 <= row["omega_out"] <= problem.omega_max + 1e-12
            assert row["test_loss"] >= row["test_loss_best"] - 1e-3


def test_example_dependent_lipschitz_constants_bound_the_extreme_examples():
    """``l0g_y`` and ``l0f_y`` (the inner sensitivities' L) bound the example-dependent part of
    grad_y g and grad_y f over Y, and the extreme example (a along y, b = -1 at ||y|| = R_Y)
    attains them: 2 (R_Y + 1)."""
    problem = _problem()
    c = problem.constants
    y = problem.y.radius * torch.eye(10, dtype=torch.float64)[:1]
    x = _points(0.5)
    examples = {"a": torch.eye(10, dtype=torch.float64)[[0, 0]].unsqueeze(0),
                "b": torch.tensor([[-1.0, -1.0]], dtype=torch.float64),
                "val": torch.tensor([[0.0, 1.0]], dtype=torch.float64)}
    lower = problem.per_example_grad("g", "y", x, y, examples) - 0.5 * y.unsqueeze(1)
    upper = problem.per_example_grad("f", "y", x, y, examples)
    assert float(torch.linalg.vector_norm(lower[0, 0])) == pytest.approx(c.l0g_y, rel=1e-12)
    assert float(torch.linalg.vector_norm(upper[0, 1])) == pytest.approx(c.l0f_y, rel=1e-12)
    generator = make_generator(5, "points")
    many = problem.sample(400, generator)
    batch = {k: v.unsqueeze(0).expand(64, *v.shape) for k, v in many.items()}
    ys = problem.y.radius * torch.nn.functional.normalize(
        torch.randn(64, 10, generator=generator, dtype=torch.float64), dim=-1)
    xs = _points(*[0.02 + 0.98 * k / 63 for k in range(64)])
    data_part = (problem.per_example_grad("g", "y", xs, ys, batch)
                 - problem.omega(xs).view(-1, 1, 1) * ys.unsqueeze(1))
    assert float(torch.linalg.vector_norm(data_part, dim=-1).max()) <= c.l0g_y
    assert float(torch.linalg.vector_norm(problem.per_example_grad(
        "f", "y", xs, ys, batch), dim=-1).max()) <= c.l0f_y
