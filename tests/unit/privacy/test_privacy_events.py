"""Event builders, validation and the JSON round trip of dp_accounting events."""

import json

import dp_accounting as dpa
import pytest

from dpminimax.privacy import (
    dpsgd_event,
    event_from_dict,
    event_to_dict,
    gaussian,
    laplace,
    non_private_event,
    same_batch_event,
    separately_sampled_event,
)


def test_dpsgd_event_structure():
    assert dpsgd_event(0.01, 1.1, 100) == dpa.SelfComposedDpEvent(
        dpa.PoissonSampledDpEvent(0.01, dpa.GaussianDpEvent(1.1)), 100
    )


def test_same_batch_composes_inside_the_sampling_event():
    mechanisms = [gaussian(1.0), laplace(2.0)]
    assert same_batch_event(0.1, mechanisms, 5) == dpa.SelfComposedDpEvent(
        dpa.PoissonSampledDpEvent(0.1, dpa.ComposedDpEvent(mechanisms)), 5
    )


def test_separately_sampled_samples_each_mechanism():
    mechanisms = [gaussian(1.0), laplace(2.0)]
    assert separately_sampled_event(0.1, mechanisms, 5) == dpa.ComposedDpEvent([
        dpa.SelfComposedDpEvent(dpa.PoissonSampledDpEvent(0.1, m), 5) for m in mechanisms
    ])


@pytest.mark.parametrize("build", [
    lambda: gaussian(0.0),
    lambda: gaussian(float("nan")),
    lambda: laplace(-1.0),
    lambda: dpsgd_event(1.5, 1.0, 10),
    lambda: dpsgd_event(-0.1, 1.0, 10),
    lambda: dpsgd_event(0.1, 1.0, -1),
    lambda: dpsgd_event(0.1, 1.0, 2.5),
    lambda: same_batch_event(0.1, [], 10),
])
def test_invalid_parameters_raise_value_error(build):
    with pytest.raises(ValueError):
        build()


@pytest.mark.parametrize("event", [
    dpsgd_event(0.01, 1.1, 10000),
    same_batch_event(0.02, [gaussian(1.5), laplace(3.0), gaussian(2.0)], 7),
    separately_sampled_event(0.02, [gaussian(1.5), laplace(3.0)], 7),
    non_private_event(),
    dpa.NoOpDpEvent(),
    dpa.SampledWithReplacementDpEvent(100, 10, dpa.RandomizedResponseDpEvent(0.5, 4)),
    dpa.ZCDpEvent(0.1, 0.0),
])
def test_event_dict_round_trips_through_json(event):
    d = event_to_dict(event)
    assert event_from_dict(json.loads(json.dumps(d))) == event
    assert d["type"] == type(event).__name__


def test_event_from_dict_rejects_unknown_types():
    with pytest.raises(ValueError, match="unknown DpEvent type"):
        event_from_dict({"type": "PrivacyAccountant"})
    with pytest.raises(ValueError, match="unknown DpEvent type"):
        event_from_dict({"type": "os"})
