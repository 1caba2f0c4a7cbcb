"""P-B, group-ridge multi-hyperparameter tuning (DP bilevel, testbed P-B, E8): its closed
forms against autograd and finite differences (y*, y^lambda, Eq. (1) over K omegas), one group
is P-C bit for bit, the box X and its projection, the a-priori constants on random and extreme
examples (joint gradients, the example-dependent parts the inner sensitivities use, the joint
Hessian and its Lipschitz constant), the replace-one sensitivities the OP inner fits and DP-AID
are released with (measured on extreme replacements within each split), the search for the
sample's best omega, DP-Grid's product grid, and a run of each E8 method."""

from __future__ import annotations

import math

import pandas as pd
import pytest
import torch
from fit_stability import largest_fit_changes, op_sensitivities

from dpminimax.algorithms import get_method
from dpminimax.algorithms.base import RunSpec
from dpminimax.algorithms.bilevel.bilevel_inner import modulus_shrink, subproblems
from dpminimax.privacy.release import release_counts, releases_of
from dpminimax.problems import get_bilevel_problem
from dpminimax.problems.base import Box, stack_examples
from dpminimax.problems.bilevel import ball
from dpminimax.problems.group_ridge import GroupRidgeTuning
from dpminimax.problems.ridge_tuning import RidgeTuning
from dpminimax.seeding import make_generator

CPU = torch.device("cpu")
DELTA = 1e-5
F64 = torch.float64
#: A small P-B: K = 3 groups of 4 coordinates.
K, D = 3, 12
PB = {"problem": "pb_group_ridge", "d_x": 2, "d_y": 8, "lam": 1500.0, "eta": 3.0}


def _problem(groups: int = K, d: int = D, **kwargs) -> GroupRidgeTuning:
    return GroupRidgeTuning(d_x=groups, d_y=d, seed=0, **kwargs)


def _stats(problem, n: int, seeds=(0, 1, 2)):
    examples = stack_examples([problem.sample(n, make_generator(s, "data")) for s in seeds])
    return examples, problem.statistics(examples)


def _box_points(problem, count: int, seed: int = 1) -> torch.Tensor:
    """``count`` points uniform in the box X (corners included by the caller)."""
    generator = make_generator(seed, "box")
    unit = torch.rand(count, problem.x.dim, generator=generator, dtype=F64)
    return problem.x.radius * (2 * unit - 1)


def _corners(problem) -> torch.Tensor:
    signs = torch.cartesian_prod(*[torch.tensor([-1.0, 1.0], dtype=F64)] * problem.x.dim)
    return problem.x.radius * signs.reshape(-1, problem.x.dim)


def _mean_loss(problem, level, sample):
    def loss(x, y):
        return torch.func.vmap(lambda ex: problem.example_loss(level, x, y, ex))(sample).mean()
    return loss


def test_x_is_the_box_and_its_projection_clips_each_omega():
    problem = _problem()
    assert isinstance(problem.x, Box) and problem.x.dim == K
    far = torch.tensor([[-5.0, 0.1, 7.0]], dtype=F64)
    projected = problem.x.project(far)
    torch.testing.assert_close(problem.omega(projected),
                               torch.tensor([[0.02, problem.omega_center + 0.1, 1.0]],
                                            dtype=F64))
    inside = _box_points(problem, 20)
    assert torch.equal(problem.x.project(inside), inside)
    # the gradient mapping is the box's: a coordinate pushed out of the box is stopped there
    eta = torch.ones(1, dtype=F64)
    corner = _corners(problem)[-1:]  # omega = omega_max everywhere
    mapping = problem.gradient_mapping(corner, torch.tensor([[-1.0, 0.5, -2.0]],
                                                            dtype=F64), eta)
    torch.testing.assert_close(mapping, torch.tensor([[0.0, 0.5, 0.0]], dtype=F64))


def test_closed_forms_are_the_argmins_and_eq_1_is_the_hypergradient():
    """y* and y^lambda are stationary for g_S and f_S + lambda g_S (autograd of the examples'
    losses); Eq. (1) at y* (and at an arbitrary y, DP-AID's point) matches autograd's
    grad_x f - grad^2_xy g [grad^2_yy g]^-1 grad_y f; F_S's central differences match Eq. (1)
    to 1e-8; F_S is the validation loss at y*."""
    problem = _problem()
    sample = problem.sample(200, make_generator(0, "data"))
    stats = problem.statistics({k: v.unsqueeze(0) for k, v in sample.items()})
    f, g = _mean_loss(problem, "f", sample), _mean_loss(problem, "g", sample)
    lam = torch.tensor([40.0], dtype=F64)
    for x in (_box_points(problem, 4), _corners(problem)[:3]):
        for r in range(len(x)):
            xr = x[r:r + 1]
            y_star = problem.inner_solution(xr, stats)
            assert float(torch.linalg.vector_norm(
                torch.func.grad(g, argnums=1)(xr[0], y_star[0]))) < 1e-12
            y_lam = problem.penalty_solution(xr, lam, stats)
            stationary = torch.func.grad(lambda yy, xx=xr[0]: f(xx, yy) + lam[0] * g(xx, yy))(
                y_lam[0])
            assert float(torch.linalg.vector_norm(stationary)) < 1e-12
            for y in (y_star[0], 0.5 * problem.y.radius * ball(1, D, make_generator(r, "y"),
                                                               F64)[0]):
                grad_y_g = torch.func.grad(g, argnums=1)
                h_yy = torch.func.jacrev(grad_y_g, argnums=1)(xr[0], y)
                h_yx = torch.func.jacrev(grad_y_g, argnums=0)(xr[0], y)
                f_x, f_y = torch.func.grad(f, argnums=(0, 1))(xr[0], y)
                eq1 = f_x - h_yx.T @ torch.linalg.solve(h_yy, f_y)
                torch.testing.assert_close(problem.hypergradient_at(xr, y.unsqueeze(0),
                                                                    stats)[0],
                                           eq1, rtol=1e-10, atol=1e-13)
            torch.testing.assert_close(problem.hyperobjective(xr, stats)[0],
                                       f(xr[0], y_star[0]))
    x = _box_points(problem, 5, seed=7) * 0.9  # central differences stay inside the box
    step, basis = 1e-5, torch.eye(K, dtype=F64)
    stats5 = {k: v.expand(5, *v.shape[1:]) for k, v in stats.items()}
    numeric = torch.stack([(problem.hyperobjective(x + step * e, stats5)
                            - problem.hyperobjective(x - step * e, stats5)) / (2 * step)
                           for e in basis], -1)
    exact = problem.hypergradient(x, stats5)
    assert float((numeric - exact).abs().max()) < 1e-8
    assert float(exact.abs().max()) > 1e-4  # not a trivially flat check


def test_gradients_and_the_penalty_vector_match_autograd():
    """per_example_grad / mean_grad against autograd of example_loss; public_outer is Eq. (3)
    at the given solutions (it reads no data) and tends to Eq. (1) like 1 / lambda."""
    problem = _problem()
    sample = problem.sample(60, make_generator(2, "data"))
    examples = {k: v.unsqueeze(0) for k, v in sample.items()}
    stats = problem.statistics(examples)
    x = _box_points(problem, 1, seed=3)
    y = 0.7 * problem.y.radius * ball(1, D, make_generator(4, "y"), F64)
    for level in "fg":
        grads = torch.func.grad(_mean_loss(problem, level, sample), argnums=(0, 1))(x[0], y[0])
        per = torch.func.vmap(torch.func.grad(
            lambda xx, yy, ex, lv=level: problem.example_loss(lv, xx, yy, ex), argnums=(0, 1)),
            in_dims=(None, None, 0))(x[0], y[0], sample)
        for b, block in enumerate("xy"):
            torch.testing.assert_close(problem.mean_grad(level, block, x, y, stats)[0],
                                       grads[b])
            torch.testing.assert_close(problem.per_example_grad(level, block, x, y,
                                                                examples)[0], per[b])
    exact = problem.hypergradient(x, stats)
    errors = []
    for lam in (1e2, 1e3, 1e4):
        lam_t = torch.tensor([lam], dtype=F64)
        vector = problem.public_outer(x, problem.inner_solution(x, stats),
                                      problem.penalty_solution(x, lam_t, stats), lam_t)
        torch.testing.assert_close(vector, problem.penalty_gradient(x, lam_t, stats))
        errors.append(float(torch.linalg.vector_norm(vector - exact)))
    assert errors[0] / errors[1] == pytest.approx(10, rel=0.05)
    assert errors[1] / errors[2] == pytest.approx(10, rel=0.05)


def test_one_group_is_pc_bit_for_bit():
    """P-B with K = 1 and P-C's data parameters is P-C: the same instance, samples, statistics,
    closed forms, hypergradients, outer vectors, candidates and constants, all equal exactly."""
    pc = RidgeTuning(d_y=10, seed=3)
    pb = GroupRidgeTuning(d_x=1, d_y=10, noise=0.7, signal=0.3, seed=3)
    assert pb.x == pc.x and pb.y == pc.y
    assert torch.equal(pb.theta_star, pc.theta_star)
    for key in pc.test:
        assert torch.equal(pb.test[key], pc.test[key])
    examples, stats = _stats(pc, 200)
    _, pb_stats = _stats(pb, 200)
    for key in stats:
        assert torch.equal(stats[key], pb_stats[key])
    x = torch.tensor([[-0.45], [0.0], [0.3]], dtype=F64)
    y = torch.randn(3, 10, generator=make_generator(1, "y"), dtype=F64)
    lam = torch.full((3,), 1500.0, dtype=F64)
    for level in "fg":
        for block in "xy":
            assert torch.equal(pb.per_example_grad(level, block, x, y, examples),
                               pc.per_example_grad(level, block, x, y, examples))
            assert torch.equal(pb.mean_grad(level, block, x, y, stats),
                               pc.mean_grad(level, block, x, y, stats))
    y_lam = pc.penalty_solution(x, lam, stats)
    pairs = [(pb.inner_solution(x, stats), pc.inner_solution(x, stats)),
             (pb.penalty_solution(x, lam, stats), y_lam),
             (pb.hypergradient(x, stats), pc.hypergradient(x, stats)),
             (pb.hypergradient_at(x, y, stats), pc.hypergradient_at(x, y, stats)),
             (pb.hyperobjective(x, stats), pc.hyperobjective(x, stats)),
             (pb.public_outer(x, y, y_lam, lam), pc.public_outer(x, y, y_lam, lam)),
             (pb.lower_modulus(x), pc.lower_modulus(x)),
             (pb.candidates(7), pc.candidates(7)),
             (pb.best_shared(stats), pc.best_shared(stats)),
             (pb.test_loss(y), pc.test_loss(y))]
    for mine, theirs in pairs:
        assert torch.equal(mine, theirs)
    assert pb.constants == pc.constants


def _extreme_examples(problem, count: int, seed: int):
    """Examples at the domain's edge: a on the unit sphere, b = +-1."""
    extremes = problem.sample(2 * ((count + 1) // 2), make_generator(seed, "extreme"))
    extremes["a"] = extremes["a"] / torch.linalg.vector_norm(extremes["a"], dim=-1,
                                                             keepdim=True)
    extremes["b"] = torch.where(torch.arange(len(extremes["b"])) % 2 == 0, 1.0, -1.0).to(F64)
    return extremes


def test_constants_bound_the_examples_gradients_and_hessians():
    """l0f, l0g bound every example's joint gradient over X x Y (the box's corners, where
    omega = omega_max, included); l0f_y, l0g_y bound the example-dependent parts and are
    attained (a along y, b = -1, ||y|| = R_Y); l1g bounds the joint Hessian of g and l2g its
    change over distance (autograd of example_loss)."""
    problem = _problem()
    c = problem.constants
    generator = make_generator(5, "points")
    points = torch.cat([_box_points(problem, 56, seed=6), _corners(problem)])
    runs = len(points)
    ys = problem.y.radius * torch.nn.functional.normalize(
        torch.randn(runs, D, generator=generator, dtype=F64), dim=-1)
    for sample in (problem.sample(300, make_generator(8, "data")),
                   _extreme_examples(problem, 300, 9)):
        sample["val"] = (torch.arange(len(sample["b"])) % 2).to(F64)
        batch = {k: v.unsqueeze(0).expand(runs, *v.shape) for k, v in sample.items()}
        for level, bound in (("f", c.l0f), ("g", c.l0g)):
            joint = torch.cat([problem.per_example_grad(level, b, points, ys, batch)
                               for b in "xy"], -1)
            assert float(torch.linalg.vector_norm(joint, dim=-1).max()) <= bound * (1 + 1e-12)
        data_part = (problem.per_example_grad("g", "y", points, ys, batch)
                     - (problem.omega(points)[:, problem.group_of]).unsqueeze(1)
                     * ys.unsqueeze(1))
        assert float(torch.linalg.vector_norm(data_part, dim=-1).max()) <= c.l0g_y
        assert float(torch.linalg.vector_norm(problem.per_example_grad(
            "f", "y", points, ys, batch), dim=-1).max()) <= c.l0f_y
    # attained: a along y at ||y|| = R_Y, b = -1, one training and one validation example
    y = problem.y.radius * torch.eye(D, dtype=F64)[:1]
    x = _corners(problem)[:1]
    tight = {"a": torch.eye(D, dtype=F64)[[0, 0]].unsqueeze(0),
             "b": torch.tensor([[-1.0, -1.0]], dtype=F64),
             "val": torch.tensor([[0.0, 1.0]], dtype=F64)}
    lower = (problem.per_example_grad("g", "y", x, y, tight)
             - problem.omega_min * y.unsqueeze(1))
    upper = problem.per_example_grad("f", "y", x, y, tight)
    assert float(torch.linalg.vector_norm(lower[0, 0])) == pytest.approx(c.l0g_y, rel=1e-12)
    assert float(torch.linalg.vector_norm(upper[0, 1])) == pytest.approx(c.l0f_y, rel=1e-12)
    # the joint Hessian of one example's g and its Lipschitz constant
    example = {k: v[0] for k, v in _extreme_examples(problem, 2, 10).items()}
    example["val"] = torch.tensor(0.0, dtype=F64)

    def hessian(z):
        return torch.func.hessian(lambda zz: problem.example_loss(
            "g", zz[:K], zz[K:], example))(z)

    zs = [torch.cat([p, yy]) for p, yy in zip(points[:20], ys[:20], strict=True)]
    norms = [float(torch.linalg.matrix_norm(hessian(z), ord=2)) for z in zs]
    assert max(norms) <= c.l1g
    ratios = [float(torch.linalg.matrix_norm(hessian(a) - hessian(b), ord=2)
                    / torch.linalg.vector_norm(a - b)) for a, b in zip(zs, zs[1:], strict=False)]
    assert max(ratios) <= c.l2g * (1 + 1e-12)
    # the worst direction of the Hessian's change attains 2 / sqrt(3) (d omega = v / sqrt(3),
    # d y = sqrt(2 / 3) u along one group)
    direction = torch.zeros(K + D, dtype=F64)
    direction[0], direction[K] = 1 / math.sqrt(3), math.sqrt(2 / 3)
    z0 = zs[0]
    worst = float(torch.linalg.matrix_norm(hessian(z0 + 1e-3 * direction) - hessian(z0),
                                           ord=2) / 1e-3)
    assert worst == pytest.approx(c.l2g, rel=1e-9)


def test_inner_fits_move_at_most_their_release_sensitivity_on_neighbours():
    """Replacing one example within its split by an extreme one (a along the fit, b = -+1, or
    at random on the sphere) moves y*(x) by at most 2 L / (min_k omega_k n) and y^lambda(x)
    by at most 2 (L_f + lambda L_g) / ((lambda min_k omega_k - L1f) n): the sensitivities the
    plan's OP releases have once shrunk to the modulus at x (the program's own values)."""
    n, lam = 400, 1500.0
    method = get_method("dp_bilevel")
    params = {"problem": "pb_group_ridge", "d_x": K, "d_y": D, "n": n, "lam": lam,
              "outer_steps": 2}
    run = RunSpec(0, 1.0, DELTA, params)
    resolved = method.resolve(params)
    program = method.program(None, [run], [resolved], resolved, [method.plan(run, n)], CPU)
    problem = program.model
    lam_t = torch.tensor([lam], dtype=F64)
    examples = problem.sample(n, make_generator(3, "data"))
    randoms = _extreme_examples(problem, 6, 11)
    randoms = [(randoms["a"][j], randoms["b"][j]) for j in range(6)]
    for x in (_corners(problem)[[0, 3, 7]], _box_points(problem, 2, seed=12)):
        for point in x:
            xr = point.unsqueeze(0)
            # a training and a validation example
            changes = largest_fit_changes(problem, examples, xr, lam_t, (0, n - 1), randoms)
            derived = op_sensitivities(problem.constants, float(problem.lower_modulus(xr)),
                                       lam, n)
            for name, value in derived.items():
                shrunk = program.shrunk(program.releases[f"inner_{name}"], name, xr)
                assert shrunk.releases[0].sensitivity == pytest.approx(value, rel=1e-12)
                assert changes[name] <= value, (name, point, changes[name], value)


def test_dp_aid_sensitivity_bounds_the_change_of_eq_1_at_a_fixed_y():
    """DP-AID releases n Eq. (1) at its private y~ with sensitivity 2 C_AID: replacing one
    example by an extreme one moves Eq. (1) at any (x, y) in X x Y by at most 2 C_AID / n."""
    problem, n = _problem(), 40
    sample = problem.sample(n, make_generator(4, "data"))
    x = torch.cat([_box_points(problem, 8, seed=13), _corners(problem)])
    runs = len(x)
    y = problem.y.project(problem.y.radius * torch.randn(
        runs, D, generator=make_generator(14, "y"), dtype=F64))
    batch = {k: v.unsqueeze(0).expand(runs, *v.shape) for k, v in sample.items()}
    base = problem.hypergradient_at(x, y, problem.statistics(batch))
    extremes = _extreme_examples(problem, 16, 15)
    largest = 0.0
    for j in range(16):
        for row in (0, n - 1):
            other = {k: v.clone() for k, v in sample.items()}
            other["a"][row], other["b"][row] = extremes["a"][j], extremes["b"][j]
            moved = problem.statistics({k: v.unsqueeze(0).expand(runs, *v.shape)
                                        for k, v in other.items()})
            change = torch.linalg.vector_norm(problem.hypergradient_at(x, y, moved) - base,
                                              dim=-1)
            largest = max(largest, float(change.max()))
    assert 0 < largest <= 2 * problem.constants.aid_bound / n


def test_best_omega_is_the_boxs_minimum_and_beats_the_best_shared_omega():
    """The search for the sample's best omega ends at a stationary point of F_S over the box
    (gradient mapping ~ 0), no worse than the best shared omega nor than any point of a dense
    product grid (K = 2), and a run alone gives what it gives in a batch."""
    problem = _problem(groups=2, d=16, signal=2.0)
    _, stats = _stats(problem, 400, seeds=(0, 1, 2, 3))
    shared = problem.best_shared(stats)
    best = problem.best_omega(stats)
    values = problem.hyperobjective(best, stats)
    assert bool((values <= problem.hyperobjective(shared, stats)).all())
    eta = torch.ones(4, dtype=F64)
    mapping = problem.gradient_mapping(best, problem.hypergradient(best, stats), eta)
    assert float(torch.linalg.vector_norm(mapping, dim=-1).max()) < 1e-9
    grid = problem.candidates(60)
    for r in range(4):
        one = {k: v[r:r + 1].expand(len(grid), *v.shape[1:]) for k, v in stats.items()}
        assert float(values[r]) <= float(problem.hyperobjective(grid, one).min()) + 1e-12
        alone = problem.best_omega({k: v[r:r + 1] for k, v in stats.items()})
        torch.testing.assert_close(alone[0], best[r], rtol=0, atol=1e-12)


def test_signal_free_groups_and_the_product_grid():
    """theta_star is 0 on the first floor(K / 2) groups and grows over the others, with
    ||theta_star|| about ``signal``; candidates is the count^K product grid of log-spaced
    omegas (refused beyond 100,000 points)."""
    problem = _problem(groups=4, d=16, signal=2.0)
    norms = torch.linalg.vector_norm(problem.theta_star.view(4, 4), dim=-1)
    assert bool((norms[:2] == 0).all()) and bool((norms[2:] > 0).all())
    assert float(torch.linalg.vector_norm(problem.theta_star)) == pytest.approx(2.0, rel=0.5)
    two = _problem(groups=2, d=8)
    points = two.candidates(5)
    axis = torch.logspace(math.log10(0.02), 0.0, 5, dtype=F64)
    torch.testing.assert_close(two.omega(points), torch.cartesian_prod(axis, axis))
    assert torch.equal(two.x.project(points), points)
    torch.testing.assert_close(two.omega(two.candidates(1)),
                               torch.tensor([[0.02, 0.02]], dtype=F64))
    with pytest.raises(ValueError, match="exponential in K"):
        _problem(groups=8, d=16).candidates(5)
    with pytest.raises(ValueError, match="multiple of the group count"):
        _problem(groups=3, d=8)


def _fit(name: str, target: float, seeds=(0, 1, 2), **params):
    method = get_method(name)
    given = {key: value for key, value in {**PB, **params}.items()
             if key in method.parameters}
    runs = [RunSpec(seed, target, DELTA, given) for seed in seeds]
    fit = method.fit(None, runs, CPU)
    return method, fit, method.task.evaluate(fit, None, CPU)


@pytest.mark.parametrize("name", ["dp_bilevel", "dp_aid", "dp_grid", "np_aid"])
def test_each_e8_method_runs_on_a_small_instance(name):
    """E8's methods on P-B (K = 2, d = 8): omega_out in the box, finite tuning metrics, the
    excess over the box's best at least ~0 on the validation loss, the target met, a run
    alone equal to it in a batch."""
    target = math.inf if name == "np_aid" else 2.0
    extra = {"candidates": 3} if name == "dp_grid" else {"outer_steps": 5}
    method, batch, rows = _fit(name, target, n=200, **extra)
    _, alone, _ = _fit(name, target, seeds=(2,), n=200, **extra)
    torch.testing.assert_close(alone.state["x"][0], batch.state["x"][2])
    problem = method.problem(batch.resolved_params[0])
    omegas = problem.omega(batch.state["x"])
    assert bool(((omegas >= 0.02 - 1e-12) & (omegas <= 1.0 + 1e-12)).all())
    for row in rows:
        for key in ("test_loss", "test_loss_best", "excess_test_loss", "log_omega_gap",
                    "excess_hyperobjective", "test_loss_shared", "omega_out_min",
                    "omega_out_max"):
            assert math.isfinite(row[key]), key
        assert row["excess_hyperobjective"] >= -1e-12
        assert row["d_x"] == 2
    plan = method.plan(batch.runs[0], 200)
    assert plan.record["epsilon"] <= target
    if name == "dp_grid":  # one fit per point of the 3 x 3 product grid, one selection
        assert release_counts(plan.releases) == {"fit": 9, "select": 1}
        grid = {tuple(p) for p in problem.candidates(3).tolist()}
        assert all(tuple(p) in grid for p in batch.state["x"].tolist())


def test_dp_grid_fits_are_released_at_the_product_grids_moduli():
    """DP-Grid on K = 2 plans one OP fit per point of the 3 x 3 product grid and shrinks each
    to its candidate's modulus min_k omega_k (2 L / (min_k omega_k n))."""
    method = get_method("dp_grid")
    params = {k: v for k, v in PB.items() if k in method.parameters} | {"n": 200,
                                                                       "candidates": 3}
    plan = method.plan(RunSpec(0, 1.0, DELTA, params), 200)
    fits = [r for r in releases_of(plan.releases) if r.name == "fit"]
    assert len(fits) == 1 and plan.record["epsilon"] <= 1.0
    problem = method.problem(method.resolve(params))
    c = problem.constants
    lower = subproblems(c, 1500.0)["y"]
    assert fits[0].sensitivity == pytest.approx(lower.output_sensitivity(200))
    points = problem.candidates(3)
    factors = modulus_shrink(c, "y", problem.lower_modulus(points))
    expected = [2 * c.l0g_y / (float(m) * 200) for m in problem.lower_modulus(points)]
    assert (fits[0].sensitivity * factors).tolist() == pytest.approx(expected)


def test_tuning_table_and_figure_split_by_k():
    """The tuning report takes P-B's rows (no omega_out column): its table and panels are by
    K and n where the runs have several K."""
    from dpminimax.report.bilevel.tuning import plot_tuning, tuning_table

    rows = []
    for k in (2, 8):
        for n in (1000, 10000):
            for method, eps in (("dp_bilevel", 1.0), ("dp_bilevel", 4.0),
                                ("np_aid", math.inf)):
                for seed in range(3):
                    rows.append({"dataset": "pb_group_ridge", "method": method,
                                 "epsilon": eps, "seed": seed, "p_n": n, "p_d_x": k,
                                 "excess_test_loss": 0.01 * seed + k,
                                 "test_loss_best": 0.1, "log_omega_gap": 0.5,
                                 "excess_hyperobjective": 1e-3})
    table = tuning_table(pd.DataFrame(rows))
    assert list(table.columns[:4]) == ["K", "n", "method", "epsilon"]
    assert len(table) == 12 and "omega_out" not in table.columns
    assert table.loc[table["K"] == 8, "excess_test_loss"].tolist() == pytest.approx([8.01] * 6)
    figure = plot_tuning(pd.DataFrame(rows), "excess_test_loss", ylabel="excess", out_paths=[])
    titles = [ax.get_title() for ax in figure.axes if ax.get_title()]
    assert titles == ["pb_group_ridge, K = 2, n =  1000", "pb_group_ridge, K = 2, n = 10000",
                      "pb_group_ridge, K = 8, n =  1000", "pb_group_ridge, K = 8, n = 10000"]


def test_registered_and_built_from_the_registry():
    problem = get_bilevel_problem("pb_group_ridge", d_x=8, d_y=64, seed=1)
    assert isinstance(problem, GroupRidgeTuning) and problem.groups == 8
    assert problem.outer_is_public and problem.y.dim == 64
    assert problem.constants == get_bilevel_problem("pc_ridge_tuning", d_x=1, d_y=10,
                                                    seed=0).constants
