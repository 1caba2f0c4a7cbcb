"""Paper 004's methods (issue #20): exact KL-DRO answers, schedules and release trees, the
difference clips, and the noise that reaches the iterates."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch
from scipy.optimize import minimize
from toydata import toy_dataset

from dpminimax.algorithms import get_method
from dpminimax.algorithms.base import RunSpec
from dpminimax.algorithms.spider import movement as iterate_movement
from dpminimax.metrics.kl_dro import best_lambda, psi
from dpminimax.privacy.release import Batch, Repeat

N, RHO, LAM0 = 400, 0.5, 1e-3
CPU = torch.device("cpu")


@pytest.fixture(scope="module")
def problem():
    """A logistic regression whose KL-DRO optimum (Eq. (5)) is found by L-BFGS-B."""
    rng = np.random.default_rng(3)
    x = rng.normal(size=(N, 3))
    groups = rng.integers(0, 2, N)
    y = (x @ np.array([1.0, -0.5, 0.3]) + 0.8 * rng.normal(size=N) > 0.5).astype(int)
    design = np.c_[x, np.ones(N)]

    def objective(v):
        z = design @ v[:-1]
        scaled = (np.logaddexp(0, z) - y * z) / v[-1]
        top = scaled.max()
        return v[-1] * (top + np.log(np.mean(np.exp(scaled - top)))) + v[-1] * RHO

    best = minimize(objective, np.r_[np.zeros(4), 1.0], method="L-BFGS-B",
                    bounds=[(None, None)] * 4 + [(LAM0, None)],
                    options={"ftol": 1e-15, "gtol": 1e-12, "maxiter": 10000})
    assert 0.01 < best.x[-1] < 1  # an interior lam*: the KL ball's constraint is active
    return toy_dataset(x, y, groups), best.x


def _weights(fit) -> np.ndarray:
    return np.r_[fit.state["weight"][0, 0].numpy(), fit.state["bias"][0].numpy()]


def _fit(name, data, epsilon=math.inf, seeds=(0,), **params):
    base = {"model": "logistic_regression", "batch_size": N, "anchor_batch_size": N,
            "eval_every": 10_000, "curve_rows": N}
    method = get_method(name)
    runs = [RunSpec(seed, epsilon, 1e-5, {k: v for k, v in {**base, **params}.items()
                                          if k in method.parameters}) for seed in seeds]
    return method, method.fit(data, runs, CPU)


@pytest.mark.parametrize("name, params", [
    ("dp_recursive_spider_nonprivate", {"lr": 0.2, "lr_lam": 0.05, "beta": 1.0, "lam_init": 1.0,
                          "period": 5, "epochs": 700}),
    ("scdro", {"lr": 0.2, "lr_lam": 0.05, "beta": 1.0, "lam_init": 1.0, "epochs": 700}),
])
@pytest.mark.slow
def test_noiseless_compositional_methods_reach_the_kl_dro_optimum(problem, name, params):
    """Eq. (5) on full batches: (x, lam) -> the convex optimum (float32 arithmetic)."""
    data, best = problem
    _, fit = _fit(name, data, **params)
    np.testing.assert_allclose(_weights(fit), best[:-1], atol=2e-4)
    curve = json.loads(fit.counters[0]["curve"])
    assert curve[-1]["lambda"] == pytest.approx(best[-1], rel=1e-3)
    assert curve[-1]["dro_gradient_norm"] < 1e-4


@pytest.mark.slow
def test_noiseless_double_spider_reaches_the_penalised_optimum(problem):
    """Eq. (3) at lam = lam*: min over (x, eta) has the same x* as Eq. (5) (envelope)."""
    data, best = problem
    _, fit = _fit("dp_double_spider_nonprivate", data, lr=0.2, lr_dual=0.05, lam=float(best[-1]),
                  period=5, epochs=700)
    np.testing.assert_allclose(_weights(fit), best[:-1], atol=2e-4)


def test_best_lambda_minimises_psi():
    losses = torch.tensor([[0.1, 0.5, 2.0, 0.3], [1.0, 1.0, 1.0, 1.0]], dtype=torch.float64)
    lam = best_lambda(losses, LAM0, RHO)
    for r in range(2):
        grid = torch.logspace(-3, 3, 4001, dtype=torch.float64)
        values = psi(losses[r].expand(len(grid), -1), grid, RHO)
        assert float(psi(losses[r:r + 1], lam[r:r + 1], RHO)) <= float(values.min()) + 1e-9
    assert float(lam[1]) == LAM0  # equal losses: Psi = lam (l + rho) is smallest at lam0


def _shape(part):
    if isinstance(part, Batch):
        return ("batch", tuple(r.name for r in part.releases), part.count, part.sampling_rate)
    return ("repeat", tuple(_shape(p) for p in part.parts), part.count)


def test_schedules_give_the_release_trees_of_the_paper():
    """Alg. 2: per period of q, anchors for eta then x (rate b1 / n), then q - 1 pairs of
    differences (rate b / n); DP-SGDA: one batch of both gradients per step; PrivateDiff: the
    dual every step, x anchored every ``period`` steps; Alg. 3: v, u, s from one batch."""
    common = {"batch_size": 10, "anchor_batch_size": 40, "epochs": 1.0, "period": 4}
    run = RunSpec(0, 1.0, 1e-5, common)
    ds = get_method("dp_double_spider").plan(run, 200, None).releases
    pair = (("batch", ("dual_difference",), 1, 0.05), ("batch", ("x_difference",), 1, 0.05))
    assert _shape(ds) == ("repeat", (("batch", ("dual_anchor",), 1, 0.2),
                                     ("batch", ("x_anchor",), 1, 0.2), *pair * 3), 5)
    sgda = get_method("dp_sgda_dro").plan(run, 200, None).releases
    assert _shape(sgda) == ("batch", ("dual_anchor", "x_anchor"), 20, 0.05)
    diff = get_method("privatediff_dro").plan(run, 200, None).releases
    assert _shape(diff) == ("repeat", (("batch", ("dual_anchor", "x_anchor"), 1, 0.05),
                                       ("batch", ("dual_anchor", "x_difference"), 3, 0.05)), 5)
    rs = get_method("dp_recursive_spider").plan(run, 200, None).releases
    assert _shape(rs) == ("repeat", (
        ("batch", ("v_anchor", "h_anchor", "s"), 1, 0.2),
        ("batch", ("v_difference", "h_difference", "s"), 3, 0.05)), 5)
    assert isinstance(rs, Repeat)


def test_every_release_shares_one_calibrated_noise_multiplier():
    plan = get_method("dp_double_spider").plan(RunSpec(0, 1.0, 1e-5, {"epochs": 1.0}), 5000)
    from dpminimax.privacy.release import releases_of
    multipliers = {r.noise_multiplier for r in releases_of(plan.releases)}
    assert len(multipliers) == 1 and multipliers.pop() > 0
    assert plan.record["epsilon"] == pytest.approx(1.0, rel=1e-3)


def test_difference_clips_follow_the_iterate_movement(problem, monkeypatch):
    """Each difference release is clipped (and noised) at min(c ||w_t - w_{t-1}||, 2C)."""
    from dpminimax.algorithms.dro import dro_program
    from dpminimax.privacy.release import BatchedRelease

    data, _ = problem
    seen = []
    original = dro_program.DroProgram.difference_shrink

    def spy(self, name, movement, factor):
        shrink = original(self, name, movement, factor)
        seen.append((name, movement.clone(), factor.clone(), shrink.clone(),
                     self.releases[name].clip.clone()))
        return shrink

    made = []
    perturb = BatchedRelease.perturb

    def record(release, summed, generators):
        made.append((release.name, release.clip.clone(), release.noise_std.clone()))
        return perturb(release, summed, generators)

    monkeypatch.setattr(dro_program.DroProgram, "difference_shrink", spy)
    monkeypatch.setattr(BatchedRelease, "perturb", record)
    _fit("dp_double_spider", data, epsilon=2.0, seeds=(0, 1), batch_size=20,
         anchor_batch_size=40, epochs=0.5, period=5, difference_clip=3.0, clip=0.5,
         weight_cap=1.0)
    assert seen
    for _, movement, factor, shrink, bound in seen:
        expected = torch.clamp(factor * movement, max=bound) / bound
        torch.testing.assert_close(shrink, expected)
    differences = [(clip, std) for name, clip, std in made if name.endswith("_difference")]
    assert differences and all(float(clip.max()) <= 1.0 + 1e-6 for clip, _ in differences)
    ratios = {round(float(std[r] / clip[r]), 6) for clip, std in differences for r in range(2)}
    assert len(ratios) == 1  # one noise multiplier: noise shrinks with the clip


@pytest.mark.parametrize("name, batch", [("dp_sgda_dro", 20), ("dp_double_spider", 20),
                                         ("privatediff_dro", 20), ("dp_recursive_spider", N)])
def test_the_first_step_moves_x_by_the_planned_noise_over_the_expected_batch(problem, name,
                                                                              batch):
    """With a large clip the first x step is dominated by its noise: the step's spread over
    parameters and runs is lr sigma W C / (q n) (the noise of the SUM of contributions bounded
    by the weight cap W times the gradient clip C, divided once). Alg. 3 divides v by s, whose
    own noise sigma W / (q n) is small on the full batch (s = 1 +- 0.03 at lam_init 5)."""
    data, _ = problem
    clip, cap, lr = 50.0, 2.0, 0.1
    method, fit = _fit(name, data, epsilon=1.0, seeds=tuple(range(16)), batch_size=batch,
                       anchor_batch_size=batch, epochs=batch / N, period=1, clip=clip,
                       weight_cap=cap, lr=lr)
    sigma = fit.resolved_params[0]["noise_multiplier"]
    moved = torch.cat([fit.state["weight"].flatten(), fit.state["bias"].flatten()])
    planned = lr * sigma * cap * clip / batch
    assert float(moved.std()) == pytest.approx(planned, rel=0.25)


def test_the_paper_grid_scales_and_deltas():
    """papers/dpdro/experiments.yaml: every job is trained without the shared attack stage
    (its task runs Table 2's attack), CPU networks below the paper scale, ResNet20 on a GPU at
    it (the linear P-DRO jobs of cross_paper_linear on CPU at every scale); delta is at most
    n^-1.1 for every dataset of its experiment (P-DRO: its largest n)."""
    from pathlib import Path

    from dpminimax.experiments import expand_jobs, load_experiments
    from dpminimax.problems import PROBLEMS

    spec = load_experiments(Path(__file__).parents[4] / "papers/dpdro/experiments.yaml")
    sizes = {"mnist-st": 33_995, "fashion-mnist-st": 33_333, "cifar10-st": 25_500,
             "celeba-blond": 162_770}

    def networks(scale):
        return [job for job in expand_jobs(spec, scale) if job.dataset not in PROBLEMS]

    for scale in ("smoke", "default", "quick", "paper"):
        jobs, everything = networks(scale), expand_jobs(spec, scale)
        assert jobs and not any(job.attacked for job in everything)
        assert all(job.delta <= sizes[job.dataset] ** -1.1 * (1 + 1e-3) for job in jobs)
        linear = [job for job in everything if job.dataset in PROBLEMS]
        assert linear and {job.gpus for job in linear} == {0}
        assert all(job.delta <= max(job.params["n"]) ** -1.1 for job in linear)
        models = {job.params.get("model", "small_cnn") for job in jobs}
        assert models == ({"resnet20"} if scale == "paper" else {"small_cnn"})
        assert {job.gpus for job in jobs} == ({1} if scale == "paper" else {0})
    default, quick = networks("default"), networks("quick")
    assert {job.dataset for job in default if job.experiment == "table3"} == {"mnist-st"}
    assert {job.dataset for job in quick if job.experiment == "table3"} == {
        "mnist-st", "fashion-mnist-st"}
    private = {"dp_sgda_dro", "privatediff_dro", "dp_double_spider", "dp_recursive_spider"}
    assert {job.method for job in default} == {
        *private, "scdro", *(f"{name}_control" for name in private)}
    assert {job.method for job in default if job.experiment != "table3"} == {*private, "scdro"}


@pytest.mark.parametrize("name", ["dp_double_spider", "dp_recursive_spider", "scdro"])
@pytest.mark.slow
def test_a_network_job_trains_and_reports_table_2_and_3_columns(name):
    """A SmallCNN job on imbalanced images: finite state, Table 3's metrics, a curve of the
    planned length, and Table 2's attack both ways beside its ceiling."""
    from toydata import toy_images

    data = toy_images(n=192)
    method = get_method(name)
    params = {"model": "small_cnn", "batch_size": 32, "anchor_batch_size": 64, "epochs": 1.0,
              "period": 3, "eval_every": 2, "curve_rows": 64, "difference_clip": 0.5}
    epsilon = 2.0 if method.private else math.inf
    runs = [RunSpec(seed, epsilon, 1e-5, {k: v for k, v in params.items()
                                          if k in method.parameters}) for seed in (0, 1)]
    fit = method.fit(data, runs, CPU)
    rows = method.task.evaluate(fit, data, CPU)
    steps = fit.resolved_params[0]["steps"]
    for row in rows:
        assert 0 <= row["test_accuracy"] <= 1 and 0 <= row["test_auc"] <= 1
        assert 0.5 <= row["mia_auc_ceiling"] <= 1
        assert 0.5 <= row["mia_auc_class_cap"] <= 1
        assert math.isfinite(row["prior_dro_objective"])
        assert row["mia_members"] > 0
        curve = json.loads(row["curve"])
        assert [p["step"] for p in curve] == list(range(2, steps + 1, 2)) + (
            [steps] if steps % 2 else [])
        assert all(math.isfinite(p["dro_objective"]) for p in curve)
    if method.private:
        assert rows[0]["mia_auc_ceiling"] == pytest.approx(math.exp(2) / (1 + math.exp(2)),
                                                           abs=1e-4)


def test_the_uniform_game_reads_the_class_and_the_stratified_one_does_not():
    """A model that only knows the class prior (confidence 0.9 for class 0, 0.1 for class 1)
    has no membership signal: against class-matched non-members its AUC is 1/2, against
    uniform non-members from a balanced test set it is far above (Table 2's confound)."""
    from dpminimax.metrics.classification import roc_auc
    from dpminimax.metrics.confounded_mia import draw_rows, true_label_confidence

    rng = np.random.default_rng(0)
    y_train = (rng.random(20_000) < 0.1).astype(int)
    y_test = (rng.random(10_000) < 0.5).astype(int)
    members, uniform, stratified = draw_rows(y_train, y_test, 5000, rng)
    np.testing.assert_array_equal(np.bincount(y_train[members]),
                                  np.bincount(y_test[stratified]))
    prior = np.log(np.array([[0.9, 0.1]]))

    def confidence(y):
        return true_label_confidence(np.repeat(prior, len(y), axis=0), y)

    labels = np.r_[np.ones(len(members)), np.zeros(len(members))]
    inside = confidence(y_train[members])
    assert roc_auc(np.r_[inside, confidence(y_test[stratified])], labels) == pytest.approx(0.5)
    assert roc_auc(np.r_[inside, confidence(y_test[uniform])], labels) > 0.65


def test_the_class_only_cap_is_the_best_class_scorer_and_half_the_tv_above_one_half():
    """Two classes: the cap is 0.5 + TV / 2 (0.70 for 90/10 members against 50/50); the prior
    model's uniform-game AUC reaches it; no other class scoring exceeds it; equal histograms
    give 1/2; CIFAR10-ST's histogram (classes 0-4 at 100, 5-9 at 5,000) against a balanced
    test set gives 0.74."""
    from dpminimax.metrics.classification import roc_auc
    from dpminimax.metrics.confounded_mia import class_only_auc_cap

    rng = np.random.default_rng(1)
    members = (rng.random(5000) < 0.1).astype(int)
    others = (rng.random(5000) < 0.5).astype(int)
    tv = abs(members.mean() - others.mean())
    cap = class_only_auc_cap(members, others)
    assert cap == pytest.approx(0.5 + tv / 2, abs=1e-12)
    assert cap == pytest.approx(0.70, abs=0.02)
    labels = np.r_[np.ones(5000), np.zeros(5000)]
    for scoring in ([1.0, 0.0], [0.0, 1.0], [0.5, 0.5]):
        assert roc_auc(np.take(scoring, np.r_[members, others]), labels) <= cap + 1e-12
    assert class_only_auc_cap(others, others) == pytest.approx(0.5)
    cifar = np.r_[np.repeat(np.arange(5), 100), np.repeat(np.arange(5, 10), 5000)]
    assert class_only_auc_cap(cifar, np.repeat(np.arange(10), 1000)) == pytest.approx(
        0.74, abs=1e-3)


def test_a_shrunk_release_keeps_its_multiplier_and_never_exceeds_its_bound():
    from dpminimax.privacy.release import BatchedRelease, Release

    release = BatchedRelease([Release("d", "gaussian", 2.0, 4.0)] * 3)
    shrunk = release.shrunk(torch.tensor([0.25, 3.0, float("nan")]))
    torch.testing.assert_close(shrunk.clip, torch.tensor([1.0, 4.0, 4.0]))
    torch.testing.assert_close(shrunk.noise_std, 2.0 * shrunk.clip)
    assert {r.noise_multiplier for r in shrunk.releases} == {2.0}


def test_figures_label_each_method_as_its_class_does():
    from dpminimax.algorithms import METHODS
    from dpminimax.report.style import method_style

    for name in ("dp_sgda_dro", "privatediff_dro", "dp_double_spider", "dp_recursive_spider",
                 "scdro", "dp_double_spider_nonprivate", "dp_recursive_spider_nonprivate",
                 "dp_sgda_dro_control", "privatediff_dro_control", "dp_double_spider_control",
                 "dp_recursive_spider_control"):
        assert method_style(name).label == METHODS[name].label


def test_eq3_contributions_clip_the_loss_gradient_then_cap_the_weight(problem, monkeypatch):
    """Each example's x contribution is min(w_i, W) clip(grad l_i, C) and its dual one
    1 - min(w_i, W), w_i = e^{(l_i - eta)/lam} (README "Deviation: clipping"), recomputed here
    by hand for the logistic model, on a run where the clip and the cap both bind."""
    from dpminimax.algorithms.dro import dro_program

    data, _ = problem
    clip, cap, lam = 0.8, 1.5, 0.5
    seen = []
    original = dro_program.DroProgram.release

    def spy(self, name, contributions, batch, shrink=None):
        if name in ("x_anchor", "dual_anchor"):  # the batch's buffers are reused: copies
            kept = dro_program.Minibatch(batch.x.clone(), batch.y.clone(), batch.mask.clone(),
                                         batch.rate)
            seen.append((name, contributions, kept, {k: v.clone() for k, v in
                                                     self.params.items()}, self.eta.clone()))
        return original(self, name, contributions, batch, shrink)

    monkeypatch.setattr(dro_program.DroProgram, "release", spy)
    _fit("dp_sgda_dro", data, epsilon=1.0, seeds=(0,), batch_size=100, epochs=1.0, lr=2.0,
         clip=clip, weight_cap=cap, lam=lam)
    bound = clipped = 0
    for name, contributions, batch, params, eta in seen[2:]:
        x = batch.x[0].double()[batch.mask[0]]
        y = batch.y[0].double()[batch.mask[0]]
        z = x @ params["weight"][0, 0].double() + params["bias"][0, 0].double()
        loss = torch.nn.functional.softplus(z) - y * z
        w = torch.exp((loss - eta[0].double()) / lam)
        capped = torch.clamp(w, max=cap)
        if name == "dual_anchor":
            torch.testing.assert_close(contributions[0][batch.mask[0]].double(), 1 - capped,
                                       rtol=1e-5, atol=1e-6)
            continue
        grad = (torch.sigmoid(z) - y).unsqueeze(-1) * torch.cat(
            [x, torch.ones_like(x[:, :1])], dim=1)
        norm = grad.norm(dim=1, keepdim=True)
        expected = capped.unsqueeze(-1) * grad * torch.clamp(clip / norm, max=1.0)
        got = torch.cat([contributions["weight"][0].flatten(start_dim=1),
                         contributions["bias"][0].flatten(start_dim=1)], dim=1)
        torch.testing.assert_close(got[batch.mask[0]].double(), expected, rtol=1e-4,
                                   atol=1e-6)
        bound += int((w > cap).sum())
        clipped += int((norm > clip).sum())
    assert bound and clipped  # both the cap and the clip bound some examples


@pytest.mark.parametrize("name", ["dp_double_spider", "privatediff_dro", "dp_recursive_spider"])
def test_plan_refuses_difference_noise_that_feeds_back(problem, name):
    """c lr sigma sqrt(d) / b >= 1 (d = 4 logistic weights here) is refused in one line naming
    the parameters; just below it the same run is planned."""
    data, _ = problem
    method = get_method(name)
    params = {"model": "logistic_regression", "batch_size": 20, "anchor_batch_size": 40,
              "epochs": 1.0, "period": 5, "lr": 0.5}
    sigma = method.plan(RunSpec(0, 1.0, 1e-5, params), N).values["noise_multiplier"]
    edge = 20 / (0.5 * sigma * math.sqrt(4))
    with pytest.raises(ValueError, match=r"^difference_clip \* lr \* sigma \* sqrt\(d\) / "
                       r"batch_size = [^\n]* >= 1: [^\n]*$"):
        method.plan(RunSpec(0, 1.0, 1e-5, {**params, "difference_clip": edge * 1.01}), N, data)
    method.plan(RunSpec(0, 1.0, 1e-5, {**params, "difference_clip": edge * 0.99}), N, data)


def _spy_contributions(monkeypatch, names):
    """Records each release of ``names`` as (name, contributions, batch, the program's params,
    previous params, lam, lam before, shift), copied (the batch's buffers are reused)."""
    from dpminimax.algorithms.dro import dro_program

    seen = []
    original = dro_program.DroProgram.release

    def copy(value):
        return None if value is None else {k: v.clone() for k, v in value.items()}

    def spy(self, name, contributions, batch, shrink=None):
        if name in names:
            kept = dro_program.Minibatch(batch.x.clone(), batch.y.clone(), batch.mask.clone(),
                                         batch.rate)
            seen.append((name, contributions, kept, copy(self.params), copy(self.previous),
                         self.lam.clone(), self.lam_before.clone(), self.shift.clone()))
        return original(self, name, contributions, batch, shrink)

    monkeypatch.setattr(dro_program.DroProgram, "release", spy)
    return seen


def _logistic(batch, params):
    """Per-example (loss, gradient) of the logistic model on the batch's rows (float64)."""
    x = batch.x[0].double()[batch.mask[0]]
    y = batch.y[0].double()[batch.mask[0]]
    z = x @ params["weight"][0, 0].double() + params["bias"][0, 0].double()
    grad = (torch.sigmoid(z) - y).unsqueeze(-1) * torch.cat([x, torch.ones_like(x[:, :1])], 1)
    return torch.nn.functional.softplus(z) - y * z, grad


def test_eq5_contributions_clip_the_loss_gradient_then_cap_the_weight(problem, monkeypatch):
    """Alg. 3's per-example terms (README "Deviation: clipping"), recomputed by hand for the
    logistic model with g'_i = min(e^{l_i/lam - m}, W): v_i = g'_i clip(grad l_i, C) at
    anchors, h_i = g'_i log g'_i, and the STORM term of s, g'_i(w_t) - (1 - beta) g'_i(w_{t-1})
    (g'_i alone at the first step), on a run where the clip and the cap both bind."""
    data, _ = problem
    clip, cap, beta = 0.8, 1.2, 0.5
    seen = _spy_contributions(monkeypatch, ("v_anchor", "h_anchor", "s"))
    _fit("dp_recursive_spider", data, epsilon=1.0, seeds=(0,), batch_size=100,
         anchor_batch_size=200, epochs=2.0, period=3, lr=2.0, lam_init=0.3, clip=clip,
         weight_cap=cap, beta=beta)

    def weights(batch, params, lam, shift):
        loss, grad = _logistic(batch, params)
        g = torch.exp(loss / lam[0].double() - shift[0].double())
        return g, torch.clamp(g, max=cap), grad

    capped = clipped = 0
    for name, contributions, batch, params, previous, lam, lam_before, shift in seen:
        g, weight, grad = weights(batch, params, lam, shift)
        if name == "v_anchor":
            norm = grad.norm(dim=1, keepdim=True)
            expected = weight.unsqueeze(-1) * grad * torch.clamp(clip / norm, max=1.0)
            got = torch.cat([contributions["weight"][0].flatten(start_dim=1),
                             contributions["bias"][0].flatten(start_dim=1)], dim=1)
            clipped += int((norm > clip).sum())
            capped += int((g > cap).sum())
        elif name == "h_anchor":
            expected, got = weight * torch.log(weight), contributions[0]
        else:
            old = 0.0 if previous is None else (1 - beta) * weights(
                batch, previous, lam_before, shift)[1]
            expected, got = weight - old, contributions[0]
        got = got[batch.mask[0]].double()
        torch.testing.assert_close(got, expected, rtol=1e-4, atol=1e-6)
    assert {entry[0] for entry in seen} == {"v_anchor", "h_anchor", "s"}
    assert capped and clipped  # both the cap and the clip bound some examples


@pytest.mark.parametrize("name", ["dp_sgda_dro", "privatediff_dro", "dp_double_spider",
                                  "dp_recursive_spider"])
def test_contributions_are_within_their_bound_before_the_release_clips(problem, monkeypatch,
                                                                         name):
    """On rows with outlying inputs (losses in the hundreds: e^{l/lam} far beyond the weight
    cap), every per-example contribution handed to a release is within the release's bound (a
    SPIDER difference: its bound before the movement shrink), so the bound holds by
    construction and the release's own clip changes nothing; the bound is reached (W C)."""
    from dpminimax.algorithms.dro import dro_program
    from dpminimax.kernels.clip import per_sample_norms

    data, _ = problem
    x = data.x_train.copy()
    x[:40] *= 100.0
    outliers = toy_dataset(x, data.y_train, data.s_train)
    ratios = []
    original = dro_program.DroProgram.release

    def spy(self, release, contributions, batch, shrink=None):
        values = ({"value": contributions.unsqueeze(-1)}
                  if isinstance(contributions, torch.Tensor) else contributions)
        norms = per_sample_norms(values) * batch.mask
        ratios.append(float((norms / self.releases[release].clip.unsqueeze(-1)).max()))
        return original(self, release, contributions, batch, shrink)

    monkeypatch.setattr(dro_program.DroProgram, "release", spy)
    _fit(name, outliers, epsilon=1.0, seeds=(0, 1), batch_size=50, anchor_batch_size=100,
         epochs=1.0, period=3, lr=0.5, clip=0.5, weight_cap=2.0, lam=0.5, lam_init=0.5)
    assert max(ratios) == pytest.approx(1.0, rel=1e-5), max(ratios)


@pytest.mark.parametrize("cap", [5.0, 0.2])
def test_alg3_release_bounds_are_the_ranges_of_its_terms(cap):
    """The plan's sensitivities (README "Deviation: clipping"): v W C (a difference 2 W C),
    h = g log g over g in (0, W]: its largest magnitude (a difference: its range), s W; checked
    against the terms on a fine grid of g."""
    from dpminimax.privacy.release import releases_of

    clip = 0.7
    plan = get_method("dp_recursive_spider").plan(
        RunSpec(0, 1.0, 1e-5, {"clip": clip, "weight_cap": cap}), 1000)
    bounds = {r.name: r.sensitivity for r in releases_of(plan.releases)}
    g = torch.linspace(1e-9, cap, 200_001, dtype=torch.float64)
    h = g * torch.log(g)
    assert bounds["v_anchor"] == pytest.approx(cap * clip)
    assert bounds["v_difference"] == pytest.approx(2 * cap * clip)
    assert bounds["h_anchor"] == pytest.approx(float(h.abs().max()), rel=1e-6)
    assert bounds["h_difference"] == pytest.approx(float(h.max() - h.min()), rel=1e-6)
    assert bounds["s"] == pytest.approx(cap)


def test_alg3_holds_a_run_whose_noisy_s_is_not_positive(problem):
    """s estimates a positive mean: a run whose noisy s is at or below the floor holds x, lam
    and the shift m for that step (dividing by the floor multiplied the step by 1000 and
    rescaled s to -s / floor: the Fashion-MNIST-ST divergence), while the batch's other run
    steps; the held run then recovers (STORM's s turns positive again) and stays finite."""
    from dpminimax.algorithms.dro.recursive_spider import S_FLOOR

    data, _ = problem
    method = get_method("dp_recursive_spider")
    runs = [RunSpec(seed, 1.0, 1e-5, {"model": "logistic_regression", "batch_size": 100,
                                      "anchor_batch_size": 200, "epochs": 3.0, "period": 3,
                                      "eval_every": 10_000, "curve_rows": N})
            for seed in (0, 1)]
    resolved, shared, plans = method.plan_runs(data, runs)
    program = method.program(data, runs, resolved, shared, plans, CPU)
    for _ in range(4):
        program.step()
    program.s = torch.tensor([-0.42, 1.0]) * program.s.new_ones(2)
    before = ({k: v.clone() for k, v in program.params.items()}, program.lam.clone(),
              program.shift.clone(), program.s.clone())
    program._update()
    for k, v in program.params.items():
        assert torch.equal(v[0], before[0][k][0])
        assert not torch.equal(v[1], before[0][k][1])
    assert program.lam[0] == before[1][0] and program.shift[0] == before[2][0]
    assert program.s[0] == before[3][0] and program.s[1] == pytest.approx(1.0)
    recovered = []
    while program.t < program.steps:
        program.step()
        recovered.append(bool(program.s[0] > S_FLOOR))
    assert recovered[1] and all(torch.isfinite(v).all() for v in program.params.values())
    assert float(program.s[0].abs()) < 10


def test_alg3_steps_within_the_bounds_of_their_noiseless_directions(problem):
    """The noiseless x direction v / s is a g-weighted mean of gradients clipped at C, h / s a
    g-weighted mean of log g <= log W and h = mean g log g >= -1/e: a noisy small s (here 0.05)
    would multiply v / s and h / s by 20. The step takes the noisy v / s projected on the C-ball,
    h / s capped at log W and h clamped to its range (post-processing), so x moves by at most
    lr C; a run whose x direction is inside the ball steps as before."""
    data, _ = problem
    method = get_method("dp_recursive_spider")
    runs = [RunSpec(seed, 1.0, 1e-5, {"model": "logistic_regression", "batch_size": 100,
                                      "anchor_batch_size": 200, "epochs": 3.0, "period": 3,
                                      "eval_every": 10_000, "curve_rows": N, "lr": 0.5,
                                      "lr_lam": 0.1, "clip": 0.7, "weight_cap": 4.0})
            for seed in (0, 1)]
    resolved, shared, plans = method.plan_runs(data, runs)
    program = method.program(data, runs, resolved, shared, plans, CPU)
    for _ in range(4):
        program.step()
    program.s = torch.tensor([0.05, 1.0])
    program.h = torch.tensor([3.0, -2.0])
    program.v = {k: v * torch.tensor([1.0, 1e-4]).view(-1, *[1] * (v.dim() - 1))
                 for k, v in program.v.items()}
    inside = {k: v[1] / 1.0 for k, v in program.v.items()}
    assert float(torch.cat([v.flatten() for v in inside.values()]).norm()) < 0.7
    before = ({k: v.clone() for k, v in program.params.items()}, program.lam.clone())
    program._update()
    moved = iterate_movement(program.params, before[0])
    assert float(moved[0]) == pytest.approx(0.5 * 0.7, rel=1e-5)
    for k, v in program.params.items():
        assert torch.allclose(v[1], before[0][k][1] - 0.5 * inside[k])
    lam_step = float(program.lam[0] - before[1][0])
    assert lam_step == pytest.approx(-0.1 * (0.5 + math.log(0.05) - math.log(4.0)), rel=1e-5)
    # h = mean g log g >= -1/e: run 1's h of -2 is read as -1/e
    assert float(program.lam[1] - before[1][1]) == pytest.approx(-0.1 * (0.5 + 1 / math.e),
                                                                  rel=1e-5)


@pytest.mark.parametrize("name", ["dp_double_spider", "dp_recursive_spider"])
def test_the_output_temperature_is_post_processing(problem, name):
    """Two runs of one seed at T = 1 and T = 4 train the same iterates under the same plan; the
    T = 4 run releases them with logits divided by 4, and its curves evaluate that release."""
    data, _ = problem
    method = get_method(name)
    base = {"model": "logistic_regression", "batch_size": 50, "anchor_batch_size": 100,
            "eval_every": 5, "curve_rows": N, "epochs": 1.0}
    runs = [RunSpec(0, 1.0, 1e-5, {**base, "temperature": t}) for t in (1.0, 4.0)]
    fit = method.fit(data, runs, CPU)
    for key in ("weight", "bias"):  # the same iterates, up to a run's place in the batch
        torch.testing.assert_close(fit.state[key][1] * 4, fit.state[key][0], rtol=1e-5, atol=0)
    assert fit.accounting[0] == fit.accounting[1]
    assert fit.resolved_params[0]["noise_multiplier"] == fit.resolved_params[1][
        "noise_multiplier"] > 0
    x = torch.as_tensor(data.x_train[:N], dtype=torch.float32)
    y = torch.as_tensor(data.y_train[:N])
    losses = torch.nn.functional.binary_cross_entropy_with_logits(
        fit.model.logits(fit.state, x)[..., 0], y.float().expand(2, -1), reduction="none")
    phi = psi(losses.double(), best_lambda(losses, LAM0, RHO), RHO)
    final = [json.loads(c["curve"])[-1]["dro_objective"] for c in fit.counters]
    np.testing.assert_allclose(final, phi.numpy(), rtol=1e-5)
    assert final[0] != final[1]
