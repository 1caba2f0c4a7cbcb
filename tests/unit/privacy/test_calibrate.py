"""Calibration round trips: the returned parameter is within budget and (nearly) optimal."""

import logging

import pytest

from dpminimax.privacy import (
    calibrate_event_parameter,
    calibrate_noise_multiplier,
    calibrate_steps,
    dpsgd_event,
    epsilon,
    gaussian,
    laplace,
    same_batch_event,
)
from dpminimax.privacy.calibrate import calibrate_release_parameter
from dpminimax.privacy.release import Batch, Release, plan_event

logging.getLogger("absl").setLevel(logging.ERROR)

DELTA = 1e-5


@pytest.mark.parametrize("q,steps,target,accountant", [
    (0.01, 10000, 2.0, "rdp"),
    (256 / 60000, 14063, 1.0, "rdp"),
    (0.05, 200, 3.0, "pld"),
])
def test_noise_multiplier_round_trip(q, steps, target, accountant):
    sigma = calibrate_noise_multiplier(q, steps, target, DELTA, accountant)
    achieved = epsilon(dpsgd_event(q, sigma, steps), DELTA, accountant)
    assert achieved <= target
    assert achieved >= 0.99 * target
    assert calibrate_noise_multiplier(q, steps, target, DELTA, accountant) == sigma  # cached


def test_steps_round_trip():
    q, sigma, target = 0.01, 1.1, 2.0
    steps = calibrate_steps(q, sigma, target, DELTA)
    assert epsilon(dpsgd_event(q, sigma, steps), DELTA) <= target
    assert epsilon(dpsgd_event(q, sigma, steps + 1), DELTA) > target


def test_steps_errors_and_cap():
    with pytest.raises(ValueError, match="single step"):
        calibrate_steps(1.0, 0.5, 0.1, DELTA)
    assert calibrate_steps(0.0001, 50.0, 5.0, DELTA, max_steps=1000) == 1000


def test_general_event_calibration():
    """One scalar scales both noises of a same-batch Laplace + Gaussian release (ratio fixed by
    configuration); the event is only accountable by the general bound."""
    make = lambda b: same_batch_event(0.01, [gaussian(b), laplace(2 * b)], 1000)
    scale = calibrate_event_parameter(make, 1.0, DELTA)
    assert 0.99 <= epsilon(make(scale), DELTA) <= 1.0


def test_bad_bracket_and_target():
    make = lambda s: dpsgd_event(0.01, s, 1000)
    with pytest.raises(ValueError, match="does not bracket"):
        calibrate_event_parameter(make, 1.0, DELTA, bracket=(5.0, 10.0))
    with pytest.raises(ValueError, match="target epsilon"):
        calibrate_event_parameter(make, 0.0, DELTA)


def test_release_parameter_is_the_search_over_the_trees_event():
    """calibrate_release_parameter (what every plan calls) searches the plan_event of the tree
    the method builds: a noise multiplier over two releases per Poisson batch (private, and
    not at 0.1 % less), and a step count (the exact discrete boundary)."""
    def tree(sigma: float, steps: int = 300) -> Batch:
        return Batch((Release("gradient", "gaussian", sigma, 1.0),
                      Release("histogram", "gaussian", 3.0 * sigma, 1.0)), steps, 0.02)

    sigma = calibrate_release_parameter(tree, 2.0, DELTA)
    assert sigma == calibrate_event_parameter(lambda s: plan_event(tree(s)), 2.0, DELTA)
    assert epsilon(plan_event(tree(sigma)), DELTA) <= 2.0
    assert epsilon(plan_event(tree(0.999 * sigma)), DELTA) > 2.0
    steps = calibrate_release_parameter(lambda t: tree(1.0, int(t)), 2.0, DELTA,
                                        bracket=(1, 10**5), discrete=True)
    assert epsilon(plan_event(tree(1.0, steps)), DELTA) <= 2.0
    assert epsilon(plan_event(tree(1.0, steps + 1)), DELTA) > 2.0
