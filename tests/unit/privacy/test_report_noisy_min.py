"""Report-noisy-min (the ``exponential`` release): its selection law and its accounting."""

from __future__ import annotations

import math

import pytest
import torch
from dp_accounting import dp_event

from dpminimax.privacy.accounting import epsilon
from dpminimax.privacy.events import exponential_mechanism, gaussian
from dpminimax.privacy.release import BatchedRelease, Release
from dpminimax.seeding import make_generator


def test_selection_is_the_exponential_mechanism():
    """Over 40,000 runs the chosen index has law softmax(-s / b), b = multiplier x
    sensitivity (a 5-sigma band on each frequency)."""
    runs, multiplier, sensitivity = 40_000, 0.8, 0.5
    scores = torch.tensor([0.0, 0.2, 0.5, 1.0, 3.0], dtype=torch.float64)
    release = BatchedRelease([Release("select", "exponential", multiplier, sensitivity)] * runs)
    chosen = release.select_min(scores.expand(runs, -1),
                                [make_generator(seed, "select") for seed in range(runs)])
    expected = torch.softmax(-scores / (multiplier * sensitivity), 0)
    frequency = torch.bincount(chosen, minlength=len(scores)).double() / runs
    band = 5 * torch.sqrt(expected * (1 - expected) / runs)
    assert bool((frequency - expected).abs().le(band).all()), (frequency, expected)


def test_selection_without_noise_is_the_argmin_and_draws_nothing():
    release = BatchedRelease([Release("select", "exponential", 0.0, 1.0)])
    generator = make_generator(0, "select")
    state = generator.get_state()
    scores = torch.tensor([[3.0, -1.0, 2.0]])
    assert release.select_min(scores, [generator]).tolist() == [1]
    assert torch.equal(generator.get_state(), state)


def test_noisy_scores_are_never_released():
    release = BatchedRelease([Release("select", "exponential", 1.0, 1.0)])
    with pytest.raises(ValueError, match="select_min"):
        release.perturb(torch.zeros(1, 3), [make_generator(0, "x")])
    with pytest.raises(ValueError, match="not report-noisy-min"):
        BatchedRelease([Release("g", "gaussian", 1.0, 1.0)]).select_min(
            torch.zeros(1, 3), [make_generator(0, "x")])


@pytest.mark.parametrize("multiplier", [0.3, 1.0, 4.0])
def test_accounted_as_bounded_range_zcdp(multiplier):
    """epsilon_EM = 2 / m is epsilon^2 / 8 = 1 / (2 m^2)-zCDP: the RDP curve, hence the
    epsilon, of a Gaussian with the same multiplier (pinned at m = 1)."""
    event = Release("select", "exponential", multiplier, 2.0).event()
    assert event == dp_event.ZCDpEvent(1.0 / (2 * multiplier**2))
    assert event == exponential_mechanism(multiplier)
    for relation in ("replace_one", "add_or_remove_one"):
        assert epsilon(event, 1e-5, "rdp", relation) == pytest.approx(
            epsilon(gaussian(multiplier), 1e-5, "rdp", relation), rel=1e-9)
    # rho-zCDP is RDP rho alpha at every order; its (eps, delta) by the conversion of Canonne,
    # Kamath & Steinke 2020 (Prop. 12), minimised over a fine grid of orders
    rho, delta = 1.0 / (2 * multiplier**2), 1e-5
    orders = torch.linspace(1.001, 2000.0, 2_000_000, dtype=torch.float64)
    converted = float((rho * orders + (math.log(1 / delta) + (orders - 1)
                                       * torch.log1p(-1 / orders) - torch.log(orders))
                       / (orders - 1)).min())
    assert epsilon(event, delta, "rdp") == pytest.approx(converted, rel=1e-3)
