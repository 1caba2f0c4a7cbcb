"""Shadow runs (issue #23): a shadow model trained among others in one batched program is the
same model trained alone on its member rows, for every shadowable method."""

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
    member_count,
    member_rows,
    membership_matrix,
    shadow_members,
    to_rows,
)

SHADOWABLE = sorted(name for name, cls in METHODS.items() if cls.shadowable)
CPU = torch.device("cpu")


def members_only(data, rows: np.ndarray):
    """The dataset restricted to training ``rows`` (what a shadow model should see)."""
    return dataclasses.replace(data, x_train=data.x_train[rows], y_train=data.y_train[rows],
                               s_train=data.s_train[rows])


def shadow_runs(name: str, shadows=(3, 5, 8)) -> list[RunSpec]:
    target = TARGET if METHODS[name].private else math.inf
    return [RunSpec(10 + s, target, DELTA, tiny_params(name), shadow=s) for s in shadows]


def test_the_methods_the_attack_needs_are_shadowable():
    assert {"dp_sgd", "nonprivate", "racodp", "dpfermi", "fermi_nonprivate"} <= set(SHADOWABLE)


@pytest.mark.parametrize("name", SHADOWABLE)
def test_a_shadow_in_a_batch_is_the_model_trained_alone_on_its_members(name):
    method, data = get_method(name), problem()
    runs = shadow_runs(name)
    batched = method.fit(data, runs, CPU)
    for r, run in enumerate(runs):
        rows = shadow_members(run.shadow, len(data.y_train))
        alone = method.fit(members_only(data, rows),
                           [dataclasses.replace(run, shadow=None)], CPU)
        for key, value in alone.state.items():
            torch.testing.assert_close(batched.state[key][r], value[0], rtol=1e-5, atol=1e-6)
        assert batched.accounting[r]["epsilon"] == alone.accounting[0]["epsilon"]


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
def test_member_sets_are_deterministic_halves(pool, shadows):
    matrix = membership_matrix(shadows, pool)
    assert (matrix.sum(axis=1) == pool // 2).all()
    assert (matrix == membership_matrix(shadows, pool)).all()
    table = member_rows(shadows, pool, CPU)
    assert table.shape == (len(shadows), pool // 2)
    for r, shadow in enumerate(shadows):
        assert np.array_equal(np.flatnonzero(matrix[r]), table[r].numpy())
        assert np.array_equal(shadow_members(shadow, pool), table[r].numpy())


def test_different_shadows_draw_different_halves():
    matrix = membership_matrix(range(64), 1000)
    # each row is in about half the shadows; no two shadows share their member set
    assert 0.4 < matrix.mean(axis=0).mean() < 0.6
    assert len({row.tobytes() for row in matrix}) == 64


def test_positions_map_to_member_rows_and_padding_stays_zero():
    rows = torch.tensor([[2, 5, 7], [0, 1, 9]])
    index = torch.tensor([[0, 2, 0], [1, 2, 0]])
    mask = torch.tensor([[True, True, False], [True, True, True]])
    assert to_rows(index, mask, rows).tolist() == [[2, 7, 0], [1, 9, 0]]
    assert to_rows(index, mask, None) is index
