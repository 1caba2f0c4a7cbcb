"""Jagielski et al. 2019 in-processing (re-impl.): the exponentiated-gradient game, the oracle
step, the mixture, the accounting, a fairness effect and batched == alone."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from dp_accounting import dp_event
from toydata import toy_dataset

from dpminimax.algorithms.base import RunSpec, expand_runs
from dpminimax.algorithms.fair.jagielski2019 import (
    Jagielski2019,
    Jagielski2019NonPrivate,
    JagielskiProgram,
    LogisticMixture,
    cell_costs,
    jagielski_releases,
    multipliers,
)
from dpminimax.data import PreparedDataset
from dpminimax.kernels.sampling import poisson_batches
from dpminimax.metrics import equalized_odds_violation
from dpminimax.privacy import dpsgd_event, epsilon, gaussian
from dpminimax.privacy.events import event_from_dict
from dpminimax.privacy.release import plan_event
from dpminimax.seeding import make_generator

DEVICE = torch.device("cpu")
INF = math.inf


def _biased(n=4000, seed=0) -> PreparedDataset:
    """y depends on a latent u; feature 0 is u shifted by the group (a biased proxy), feature 1
    is u plus noise (fair: independent of the group given y). The unconstrained logistic
    regression leans on feature 0 and has an EO violation near 0.3; EO <= 0 is feasible with
    feature 1 alone at accuracy ~0.68."""
    rng = np.random.default_rng(seed)
    s = (rng.random(n) < 0.4).astype(np.int64)
    u = rng.normal(0.0, 1.0, n)
    y = (rng.random(n) < 1 / (1 + np.exp(-2 * u))).astype(np.int64)
    x = np.stack([u + 1.5 * s + rng.normal(0, 0.5, n), u + rng.normal(0, 1.0, n)], 1)
    half = n // 2
    return toy_dataset(x[:half], y[:half], s[:half], x_test=x[half:].astype(np.float32),
                    y_test=y[half:], s_test=s[half:])


# --- the game's arithmetic (Agarwal et al. 2018, Alg. 1) -----------------------------------------

# 12 examples, one feature, two groups; with weight 1 and bias 0, h(x) = 1[x > 0]. Cells y*k + a:
#   (y=0, a=0): x = -1, 1          -> 1 of 2 predicted positive
#   (y=0, a=1): x = -1, -1, -1, 1  -> 1 of 4
#   (y=1, a=0): x = 1, 1, 1        -> 3 of 3
#   (y=1, a=1): x = 1, -1, -1      -> 1 of 3
TOY_X = [-1, 1, -1, -1, -1, 1, 1, 1, 1, 1, -1, -1]
TOY_Y = [0] * 6 + [1] * 6
TOY_S = [0, 0, 1, 1, 1, 1, 0, 0, 0, 1, 1, 1]


def _nonprivate_program(data: PreparedDataset, seed: int, params: dict) -> JagielskiProgram:
    """The non-private program of one run, planned as :meth:`Jagielski2019.fit` plans it."""
    method = Jagielski2019NonPrivate()
    plan = method.plan(RunSpec(seed, INF, 1e-5, params), len(data.y_train))
    return JagielskiProgram(data, [seed], [{**method.resolve(params), **plan.values}],
                            [plan.releases], device=DEVICE)


def test_multipliers_are_the_bounded_exponential_map():
    theta = torch.tensor([[math.log(2.0), 0, 0, 0, 0, 0, 0, 0]])
    lam = multipliers(theta, torch.tensor([2.0]))
    # exp(theta) = [2, 1 x 7]; 1 + sum = 10; lambda = 2 * exp(theta) / 10
    torch.testing.assert_close(lam, torch.tensor([[0.4] + [0.2] * 7]))
    assert float(multipliers(torch.full((1, 8), 50.0), torch.tensor([3.0])).sum()) <= 3.0


def test_cell_costs_by_hand():
    """counts [2, 4, 3, 3], n = 12, lambda_+ = [0.5, 0, 0, 0], lambda_- = [0, 0, 0, 0.25]:
    mu = [0.5, 0, 0, -0.25]; c = mu / n_ay - sum_a mu / n_y = [1/6, -1/12, 1/24, -1/24];
    Delta = (1 - 2y) + 12 c = [3, 0, -0.5, -1.5]."""
    lam = torch.tensor([[0.5, 0, 0, 0, 0, 0, 0, 0.25]])
    counts = torch.tensor([[2.0, 4.0, 3.0, 3.0]])
    torch.testing.assert_close(cell_costs(lam, counts, 12), torch.tensor([[3.0, 0.0, -0.5, -1.5]]))


def test_one_round_exponentiated_gradient_update_by_hand():
    """lr = 0 freezes the learner at h(x) = 1[x > 0]; the round's EG step is then
    theta_1 = eta * (+-gamma - tol) with gamma = cell rate - label rate, computed by hand, and
    lambda_1 = B exp(theta_1) / (1 + sum exp(theta_1))."""
    data = toy_dataset(TOY_X, TOY_Y, TOY_S)
    program = _nonprivate_program(data, 0, {"lr": 0.0, "tolerance": 0.05, "eg_lr": 2.0,
                                            "multiplier_bound": 3.0, "oracle_steps": 2,
                                            "batch_size": 6})
    assert program.q == 0.5
    program.oracle["weight"].fill_(1.0)
    torch.testing.assert_close(program.counts, torch.tensor([[2.0, 4.0, 3.0, 3.0]]))
    program.step()
    # rates: y=0 cells 1/2, 1/4 (label rate 2/6); y=1 cells 3/3, 1/3 (label rate 4/6)
    gamma = [1 / 2 - 1 / 3, 1 / 4 - 1 / 3, 1 - 2 / 3, 1 / 3 - 2 / 3]
    g = [v - 0.05 for v in gamma] + [-v - 0.05 for v in gamma]
    theta = [2.0 * v for v in g]
    torch.testing.assert_close(program.theta, torch.tensor([theta]))
    total = 1 + sum(math.exp(t) for t in theta)
    lam = [3.0 * math.exp(t) / total for t in theta]
    torch.testing.assert_close(multipliers(program.theta, program.bound), torch.tensor([lam]))
    # the iterate of the round is the (frozen) learner
    assert program.iterates[0]["weight"].tolist() == [[1.0]]


def test_oracle_step_is_a_gradient_step_on_the_weighted_logistic_loss():
    """No clip, no noise: one step moves (w, b) by -lr/(qn) grad sum_{i in batch}
    v_cell(i) BCE(z_i, label_cell(i)) (autograd), for given cell weights and labels."""
    data = _biased(n=600)
    program = _nonprivate_program(data, 5, {"lr": 0.7, "batch_size": 60})
    assert program.q == 0.2
    program.oracle["weight"] = torch.tensor([[[0.3, -0.2]]])
    program.oracle["bias"] = torch.tensor([[0.1]])
    weights = torch.tensor([[0.5, 2.0, 1.5, 0.25]])
    labels = torch.tensor([[1.0, 0.0, 0.0, 1.0]])
    w = program.oracle["weight"][0, 0].clone().requires_grad_(True)
    b = program.oracle["bias"][0, 0].clone().requires_grad_(True)
    index, mask = poisson_batches(program.n, 0.2, [make_generator(5, "poisson")])
    index = index[0][mask[0]]
    x = torch.as_tensor(data.x_train)[index]
    cells = program.cells[index]
    loss = (weights[0, cells] * F.binary_cross_entropy_with_logits(
        x @ w + b, labels[0, cells], reduction="none")).sum()
    loss.backward()
    program.oracle_step(weights, labels)
    scale = 0.7 / (0.2 * program.n)
    torch.testing.assert_close(program.oracle["weight"][0, 0], (w - scale * w.grad).detach())
    torch.testing.assert_close(program.oracle["bias"][0, 0], (b - scale * b.grad).detach())


# --- the mixture ------------------------------------------------------------------------------

def test_mixture_predicts_by_sampling_the_vote_and_scores_the_mean_probability():
    """Iterate 1 has logit 0 (p = 1/2, votes 0), iterate 2 logit log 3 (p = 3/4, votes 1): the
    vote fraction is 1/2, so the prediction is 1[u < 1/2] with u from (seed, "mixture"); the
    loss is -log(5/8) for y = 1 and -log(3/8) for y = 0."""
    model = LogisticMixture(num_features=1)
    state = {"weight": torch.zeros(1, 2, 1), "bias": torch.tensor([[0.0, math.log(3.0)]]),
             "seed": torch.tensor([11])}
    x = torch.zeros(500, 1)
    u = torch.rand(500, generator=make_generator(11, "mixture"))
    assert torch.equal(model.predict(state, x), (u < 0.5).long().unsqueeze(0))
    assert torch.equal(model.predict(state, x), model.predict(state, x))  # fixed stream
    y = torch.tensor([1, 0])
    torch.testing.assert_close(model.losses(state, x[:2], y),
                               torch.tensor([[-math.log(5 / 8), -math.log(3 / 8)]]))
    assert (model.name, model.num_features, model.num_classes) == ("logistic_mixture", 1, 1)


# --- privacy -----------------------------------------------------------------------------------

def _leaves(event: dict, multiplicity: int = 1, sampled: float | None = None):
    """(noise multiplier, sampling rate or None, how many times released) of every Gaussian."""
    kind = event["type"]
    if kind == "GaussianDpEvent":
        return [(event["noise_multiplier"], sampled, multiplicity)]
    if kind == "SelfComposedDpEvent":
        return _leaves(event["event"], multiplicity * event["count"], sampled)
    if kind == "PoissonSampledDpEvent":
        return _leaves(event["event"], multiplicity, event["sampling_probability"])
    if kind == "ComposedDpEvent":
        return [leaf for e in event["events"] for leaf in _leaves(e, multiplicity, sampled)]
    raise AssertionError(f"unexpected event {kind}")


def _hand_written_event(q, sigma, auditor, counts, oracle_steps, rounds):
    """The run's event as it was written by hand before it was derived from the releases."""
    one_round = dp_event.ComposedDpEvent([dpsgd_event(q, sigma, oracle_steps), gaussian(auditor)])
    return dp_event.ComposedDpEvent([gaussian(counts),
                                     dp_event.SelfComposedDpEvent(one_round, rounds)])


def _event(q, sigma, auditor_ratio, count_ratio, oracle_steps, rounds):
    """The event derived from the releases of :func:`jagielski_releases`."""
    return plan_event(jagielski_releases(q, sigma, {
        "auditor_noise_ratio": auditor_ratio, "count_noise_ratio": count_ratio, "clip": 1.0,
        "oracle_steps": oracle_steps, "rounds": rounds}))


def test_recorded_epsilon_is_the_events_and_the_event_holds_every_release():
    data = _biased(n=2000)
    runs = expand_runs([0, 1], 1.0, 1e-5, {"tolerance": [0.0, 0.1], "rounds": 6,
                                            "oracle_steps": 4, "batch_size": 100,
                                            "auditor_noise_ratio": 3.0, "count_noise_ratio": 2.0})
    fit = Jagielski2019().fit(data, runs, DEVICE)
    q = 100 / 1000
    for run, record, params in zip(runs, fit.accounting, fit.resolved_params, strict=True):
        sigma = params["noise_multiplier"]
        event = event_from_dict(record["event"])
        assert event == _event(q, sigma, 3.0, 2.0, 4, 6) == _hand_written_event(
            q, sigma, 3.0 * sigma, 2.0 * sigma, 4, 6)
        assert record["epsilon"] == epsilon(event, 1e-5, "rdp") <= 1.0
        assert record == Jagielski2019().plan(run, 1000).record
        # sigma is the smallest private noise: 1% less noise overspends
        assert epsilon(_event(q, 0.99 * sigma, 3.0, 2.0, 4, 6), 1e-5, "rdp") > 1.0
        assert sorted(_leaves(record["event"])) == sorted([
            (2.0 * sigma, None, 1),        # the cell counts, once
            (3.0 * sigma, None, 6),        # the auditor's cell sums, every round
            (sigma, q, 6 * 4),             # the oracle's sampled Gaussian steps
        ])
    assert len({params["noise_multiplier"] for params in fit.resolved_params}) == 1


def test_the_program_noises_with_the_planned_releases():
    """Every noise scale is the planned release's multiplier times its sensitivity: the clip C
    for the oracle's gradients, 1 for the counts and the auditor's cell sums."""
    data = _biased(n=400)
    run = RunSpec(0, 1.0, 1e-5, {"rounds": 2, "oracle_steps": 2, "batch_size": 50, "clip": 0.5,
                                 "auditor_noise_ratio": 3.0, "count_noise_ratio": 2.0})
    method = Jagielski2019()
    plan = method.plan(run, 200)
    sigma = plan.values["noise_multiplier"]
    assert [(r.name, r.noise_multiplier, r.sensitivity) for r in (
        plan.release("counts"), plan.release("gradient"), plan.release("auditor"))] == [
        ("counts", 2.0 * sigma, 1.0), ("gradient", sigma, 0.5), ("auditor", 3.0 * sigma, 1.0)]
    program = JagielskiProgram(data, [0], [{**method.resolve(run.params), **plan.values}],
                               [plan.releases], device=DEVICE)
    torch.testing.assert_close(program.gradient.clip, torch.tensor([0.5]))
    torch.testing.assert_close(program.gradient.noise_std, torch.tensor([0.5 * sigma]))
    torch.testing.assert_close(program.auditor.noise_std, torch.tensor([3.0 * sigma]))


def test_private_and_nonprivate_refuse_each_others_epsilon():
    data = _biased(n=400)
    with pytest.raises(ValueError, match="jagielski2019_nonprivate"):
        Jagielski2019().fit(data, [RunSpec(0, INF, 1e-5, {"rounds": 1})], DEVICE)
    with pytest.raises(ValueError, match="not private"):
        Jagielski2019NonPrivate().fit(data, [RunSpec(0, 1.0, 1e-5, {"rounds": 1})], DEVICE)
    multiclass = toy_dataset([0.0, 1.0, 2.0], [0, 1, 2], [0, 1, 0])
    with pytest.raises(ValueError, match="binary labels"):
        Jagielski2019NonPrivate().fit(multiclass, [RunSpec(0, INF, 1e-5, {})], DEVICE)


# --- behaviour ----------------------------------------------------------------------------------

def test_tight_tolerance_reduces_the_equalized_odds_violation():
    """Without noise, tolerance 0 brings the mixture's test EO violation from ~0.28 (tolerance 1,
    i.e. plain logistic regression) below 0.1, at an accuracy above 0.6."""
    data = _biased()
    runs = expand_runs([0, 1], INF, 1e-5, {"tolerance": [0.0, 1.0], "batch_size": 200,
                                           "rounds": 50, "oracle_steps": 20})
    fit = Jagielski2019NonPrivate().fit(data, runs, DEVICE)
    predicted = fit.model.predict(fit.state, torch.as_tensor(data.x_test)).numpy()
    eo = {}
    for r, run in enumerate(runs):
        eo[run.params["tolerance"], run.seed] = equalized_odds_violation(
            predicted[r], data.y_test, data.s_test)
        if run.params["tolerance"] == 0.0:
            assert np.mean(predicted[r] == data.y_test) > 0.6
    for seed in (0, 1):
        assert eo[1.0, seed] > 0.2
        assert eo[0.0, seed] < 0.1
        assert eo[0.0, seed] < eo[1.0, seed] - 0.15


def test_batched_runs_equal_runs_trained_alone():
    data = _biased(n=1500)
    grid = {"tolerance": [0.0, 0.05], "rounds": 5, "oracle_steps": 3, "batch_size": 100}
    runs = expand_runs([3, 4], 2.0, 1e-5, grid)
    method = Jagielski2019()
    batched = method.fit(data, runs, DEVICE)
    x = torch.as_tensor(data.x_test)
    predicted = batched.model.predict(batched.state, x)
    for r, run in enumerate(runs):
        alone = method.fit(data, [run], DEVICE)
        for key in ("weight", "bias"):
            torch.testing.assert_close(batched.state[key][r], alone.state[key][0])
        assert torch.equal(predicted[r], alone.model.predict(alone.state, x)[0])
    assert batched.state["weight"].shape == (4, 5, 2)
    assert not torch.allclose(batched.state["weight"][0], batched.state["weight"][1])
