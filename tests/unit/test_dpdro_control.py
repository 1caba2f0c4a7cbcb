"""The noiseless clipped controls of paper 004's private methods (issue #37): on a small real
MNIST-ST subset the control of DP-SGDA (same clipping, weight cap and schedule, sigma = 0) ends
below Phi at initialisation and below the class prior's Phi, and a control that does not is
said so in the job log."""

from __future__ import annotations

import logging
import math

import pytest
import torch

from dpminimax.algorithms import get_method
from dpminimax.algorithms.base import RunSpec
from dpminimax.algorithms.dro_program import control_verdicts
from dpminimax.data import load_dataset
from dpminimax.data.locate import DatasetNotFoundError
from dpminimax.privacy.release import releases_of

CPU = torch.device("cpu")
ROWS = 2000  # rows of each split: about 63 steps of batch 128 in 4 epochs


@pytest.fixture(scope="module")
def mnist_st():
    try:
        return load_dataset("mnist-st", max_rows=ROWS)
    except DatasetNotFoundError:
        pytest.skip("MNIST-ST files not found (set DPMINIMAX_DATA)")


def _control(data, **params):
    method = get_method("dp_sgda_dro_control")
    run = RunSpec(0, math.inf, 1e-5, {"eval_every": 1000, "curve_rows": 256, **params})
    fit = method.fit(data, [run], CPU)
    return fit, control_verdicts(fit, data, CPU)[0]


def test_every_private_method_has_a_noiseless_clipped_control():
    for name in ("dp_sgda_dro", "privatediff_dro", "dp_double_spider", "dp_recursive_spider"):
        private, control = get_method(name), get_method(f"{name}_control")
        assert not control.private and private.twin != control.name
        assert control.parameters == private.parameters
        plan = control.plan(RunSpec(0, math.inf, 1e-5, {}), 1000)
        assert plan.values["noise_multiplier"] == 0.0
        planned = {r.name: r.sensitivity for r in releases_of(plan.releases)}
        private_plan = private.plan(RunSpec(0, 1.0, 1e-5, {}), 1000)
        assert planned == {r.name: r.sensitivity for r in releases_of(private_plan.releases)}
        assert all(math.isfinite(bound) for bound in planned.values())  # clipped


def test_the_sgda_control_ends_below_its_start_and_the_class_prior(mnist_st, caplog):
    with caplog.at_level(logging.WARNING):
        fit, verdict = _control(mnist_st, epochs=4.0, lr=0.4)
    assert fit.resolved_params[0]["noise_multiplier"] == 0.0
    assert verdict["phi_final"] < verdict["phi_init"] < verdict["phi_prior"], verdict
    assert verdict["below"] and "control ends" not in caplog.text


def test_a_control_that_does_not_descend_is_logged(mnist_st, caplog):
    with caplog.at_level(logging.WARNING):
        _, verdict = _control(mnist_st, epochs=0.1, lr=0.0, lr_dual=0.0)
    assert verdict["phi_final"] == pytest.approx(verdict["phi_init"], rel=1e-5)
    assert not verdict["below"] and "not below Phi(init)" in caplog.text
