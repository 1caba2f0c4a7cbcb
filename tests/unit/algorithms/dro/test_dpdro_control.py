"""The noiseless clipped controls of paper 004's private methods (issue #37): on a small real
MNIST-ST subset the control of DP-SGDA (same clipping, weight cap and schedule, sigma = 0) ends
below Phi at initialisation and below the class prior's Phi, DP Recursive-SPIDER's (table3's
parameters) separates the classes and ends below the class prior's Phi, and a control that does
not descend is said so in the job log."""

from __future__ import annotations

import logging
import math
from pathlib import Path

import numpy as np
import pytest
import torch

from dpminimax.algorithms import get_method
from dpminimax.algorithms.base import RunSpec
from dpminimax.algorithms.dro.dro_program import control_verdicts
from dpminimax.data import load_dataset
from dpminimax.data.locate import DatasetNotFoundError
from dpminimax.experiments import load_experiments
from dpminimax.metrics.imbalanced import imbalanced_report
from dpminimax.privacy.release import releases_of

CPU = torch.device("cpu")
ROWS = 2000  # rows of each split: about 63 steps of batch 128 in 4 epochs


@pytest.fixture(scope="module")
def mnist_st():
    try:
        return load_dataset("mnist-st", max_rows=ROWS)
    except DatasetNotFoundError:
        pytest.skip("MNIST-ST files not found (set DPMINIMAX_DATA)")


def _control(data, name="dp_sgda_dro_control", **params):
    method = get_method(name)
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


def test_the_recursive_spider_control_separates_the_classes(mnist_st):
    """Alg. 3's control with table3's parameters (weight cap W, loss-gradient clip C), 8 epochs:
    test AUC well above chance and Phi (on 1,024 training rows) below the class prior's. With the
    paper's clip of (g/lam) grad l it predicted one class (AUC 0.45, Phi 2.1 after 4 epochs;
    README "Deviation: clipping"). It does not get below Phi(init) on these rows at table3's lr
    (nor does DP-SGDA's control at the same lr), so that is not asserted here."""
    experiments = load_experiments(Path(__file__).parents[4] / "papers/dpdro/experiments.yaml")
    params = experiments["experiments"]["table3"]["methods"]["dp_recursive_spider"]["params"]
    fit, verdict = _control(mnist_st, "dp_recursive_spider_control",
                            **{**params, "epochs": 8.0, "curve_rows": 1024})
    logits = fit.model.logits(fit.state, torch.as_tensor(mnist_st.x_test))[0]
    report = imbalanced_report(np.asarray(mnist_st.y_test), logits.numpy())
    assert report["test_auc"] > 0.75, report
    assert verdict["phi_final"] < verdict["phi_prior"], verdict


def test_a_control_that_does_not_descend_is_logged(mnist_st, caplog):
    with caplog.at_level(logging.WARNING):
        _, verdict = _control(mnist_st, epochs=0.1, lr=0.0, lr_dual=0.0)
    assert verdict["phi_final"] == pytest.approx(verdict["phi_init"], rel=1e-5)
    assert not verdict["below"] and "not below Phi(init)" in caplog.text
