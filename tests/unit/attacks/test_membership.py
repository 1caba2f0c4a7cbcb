"""Shadow runs (issue #23): a shadow model trained among others in one batched program reads its
member rows only and, with fixed-size member sets, is the same model trained alone on them, for
every shadowable method; independent membership draws each row with probability 1/2."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from test_conformance import DELTA, TARGET, problem, tiny_params

from dpminimax.algorithms import METHODS, get_method
from dpminimax.algorithms.base import RunSpec
from dpminimax.kernels.membership import (
    FIXED_SIZE,
    INDEPENDENT,
    Members,
    member_count,
    member_rows,
    membership_matrix,
    shadow_members,
    to_rows,
)

SHADOWABLE = sorted(name for name, cls in METHODS.items() if cls.shadowable)
CPU = torch.device("cpu")


def pooled(data, membership: str):
    """``data`` whose shadows draw their members by ``membership``."""
    return dataclasses.replace(data, meta={**data.meta, "shadow_membership": membership})


def members_only(data, rows: np.ndarray):
    """The dataset restricted to training ``rows`` (what a shadow model should see)."""
    return dataclasses.replace(data, x_train=data.x_train[rows], y_train=data.y_train[rows],
                               s_train=data.s_train[rows])


def shadow_runs(name: str, shadows=(3, 5, 8)) -> list[RunSpec]:
    target = TARGET if METHODS[name].private else math.inf
    return [RunSpec(10 + s, target, DELTA, tiny_params(name), shadow=s) for s in shadows]


def test_the_methods_the_attack_needs_are_shadowable():
    assert {"dp_sgd", "dp_sgd_nonprivate", "racodp", "dpfermi",
            "dpfermi_nonprivate"} <= set(SHADOWABLE)


@pytest.mark.parametrize("name", SHADOWABLE)
@pytest.mark.slow
def test_a_fixed_size_shadow_in_a_batch_is_the_model_trained_alone_on_its_members(name):
    method, data = get_method(name), pooled(problem(), FIXED_SIZE)
    runs = shadow_runs(name)
    batched = method.fit(data, runs, CPU)
    for r, run in enumerate(runs):
        rows = shadow_members(run.shadow, len(data.y_train), FIXED_SIZE)
        alone = method.fit(members_only(data, rows),
                           [dataclasses.replace(run, shadow=None)], CPU)
        for key, value in alone.state.items():
            torch.testing.assert_close(batched.state[key][r], value[0], rtol=1e-5, atol=1e-6)
        assert batched.accounting[r]["epsilon"] == alone.accounting[0]["epsilon"]


@pytest.mark.parametrize("name", SHADOWABLE)
def test_a_shadow_reads_its_members_only_and_is_the_same_alone_or_batched(name):
    """Independent membership: rewriting a run's non-members changes nothing it trains on,
    rewriting one member changes it; the run alone gives the state it had among others."""
    method, data = get_method(name), pooled(problem(), INDEPENDENT)
    runs = shadow_runs(name)
    batched = method.fit(data, runs, CPU)
    matrix = membership_matrix([run.shadow for run in runs], len(data.y_train))
    outside = ~matrix[0]
    x, y = data.x_train.copy(), data.y_train.copy()
    x[outside], y[outside] = -50.0 * x[outside], 1 - y[outside]
    rewritten = method.fit(dataclasses.replace(data, x_train=x, y_train=y), runs[:1], CPU)
    x[np.flatnonzero(matrix[0])[0]] *= -50.0
    member_moved = method.fit(dataclasses.replace(data, x_train=x, y_train=y), runs[:1], CPU)
    for key, value in batched.state.items():
        torch.testing.assert_close(rewritten.state[key][0], value[0], rtol=1e-5, atol=1e-6)
    assert any(not torch.allclose(member_moved.state[k][0], v[0]) for k, v in
               batched.state.items() if torch.is_floating_point(v))


def test_an_independent_shadow_averages_by_the_planned_batch():
    """Full-batch non-private SGD (q = 1: no sampling draw) of an independent shadow is the
    model trained alone on its |D| members with lr scaled by |D| / (pool // 2): its step
    divides by the plan's expected batch, not by its own member count or the pool."""
    data = pooled(problem(), INDEPENDENT)
    pool, params = len(data.y_train), {"batch_size": 10_000, "epochs": 5, "lr": 0.5}
    run = RunSpec(1, math.inf, DELTA, params, shadow=3)
    shadow = get_method("dp_sgd_nonprivate").fit(data, [run], CPU)
    rows = shadow_members(3, pool)
    assert len(rows) != pool // 2  # the scaling below is not the identity
    alone = get_method("dp_sgd_nonprivate").fit(
        members_only(data, rows), [dataclasses.replace(
            run, shadow=None, params={**params, "lr": 0.5 * len(rows) / (pool // 2)})], CPU)
    for key, value in alone.state.items():
        torch.testing.assert_close(shadow.state[key][0], value[0], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", SHADOWABLE)
def test_a_shadow_is_planned_on_its_member_count(name):
    method, data = get_method(name), problem()
    _, _, plans = method.plan_runs(data, shadow_runs(name))
    half = member_count(len(data.y_train))
    assert [p.record for p in plans] == [
        method.plan(dataclasses.replace(run, shadow=None), half, data).record
        for run in shadow_runs(name)]


def test_a_method_that_cannot_restrict_its_runs_refuses_shadows():
    name = next(name for name, cls in sorted(METHODS.items())
                if not cls.shadowable and cls.task.attacked)
    with pytest.raises(ValueError, match="cannot train shadow models"):
        get_method(name).plan_runs(problem(), shadow_runs(name))


def test_shadow_and_ordinary_runs_do_not_mix():
    runs = shadow_runs("dp_sgd") + [RunSpec(0, TARGET, DELTA, tiny_params("dp_sgd"))]
    with pytest.raises(ValueError, match="shadow runs only or none"):
        get_method("dp_sgd").fit(problem(), runs, CPU)


def test_dpfermi_sensitive_attribute_mode_refuses_shadows():
    runs = [dataclasses.replace(run, params={**run.params, "privacy": "sensitive_attribute"})
            for run in shadow_runs("dpfermi")]
    with pytest.raises(ValueError, match="privacy='example'"):
        get_method("dpfermi").plan_runs(problem(), runs)


@settings(max_examples=30, deadline=None)
@given(pool=st.integers(2, 400), shadows=st.lists(st.integers(0, 10**6), min_size=1,
                                                   max_size=6, unique=True))
def test_member_sets_are_deterministic(pool, shadows):
    data = pooled(problem(), FIXED_SIZE)
    data = dataclasses.replace(data, y_train=np.zeros(pool, dtype=int))
    for membership in (FIXED_SIZE, INDEPENDENT):
        matrix = membership_matrix(shadows, pool, membership)
        assert (matrix == membership_matrix(shadows, pool, membership)).all()
        for r, shadow in enumerate(shadows):
            assert np.array_equal(np.flatnonzero(matrix[r]),
                                  shadow_members(shadow, pool, membership))
    matrix = membership_matrix(shadows, pool, FIXED_SIZE)
    assert (matrix.sum(axis=1) == pool // 2).all()
    members = member_rows(shadows, data, CPU)
    assert members.table.shape == (len(shadows), pool // 2) and members.planned == pool // 2
    assert [list(rows) for rows in members.row_sets()] == [list(np.flatnonzero(row))
                                                           for row in matrix]


def test_independent_members_join_one_by_one_with_probability_one_half():
    """64 shadows x 1,000 rows: every cell is a fair coin. Member counts are Binomial(1000,
    1/2) (variance 250; a fixed-size draw has 0)."""
    matrix = membership_matrix(range(64), 1000).astype(float)
    assert abs(matrix.mean() - 0.5) < 4 * 0.5 / math.sqrt(matrix.size)
    assert 250 / 2 < matrix.sum(axis=1).var(ddof=1) < 250 * 2
    assert len({row.tobytes() for row in matrix}) == 64
    assert (membership_matrix(range(64), 1000, FIXED_SIZE).sum(axis=1) == 500).all()


def test_fixed_positions_map_to_member_rows_and_padding_stays_zero():
    members = Members(torch.tensor([[2, 5, 7], [0, 1, 9]]), None, 3)
    index = torch.tensor([[0, 2, 0], [1, 2, 0]])
    mask = torch.tensor([[True, True, False], [True, True, True]])
    rows, kept = to_rows(index, mask, members)
    assert rows.tolist() == [[2, 7, 0], [1, 9, 0]] and kept is mask
    assert to_rows(index, mask, None) == (index, mask)


def test_independent_positions_keep_members_only_in_front():
    included = torch.tensor([[True, False, True, True, False],
                             [False, False, False, True, True]])
    members = Members(None, included, 2)
    index = torch.tensor([[0, 1, 3, 4], [0, 1, 2, 0]])
    mask = torch.tensor([[True, True, True, True], [True, True, True, False]])
    rows, kept = to_rows(index, mask, members)
    assert rows.tolist() == [[0, 3], [0, 0]]
    assert kept.tolist() == [[True, True], [False, False]]
