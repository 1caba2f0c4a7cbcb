"""Every method declares what its parameter values must be; resolve refuses the rest in one line
naming the method, the parameter and the allowed values (issue #24)."""

from __future__ import annotations

import math

import pytest

from dpminimax.algorithms import METHODS, get_method
from dpminimax.algorithms.params import ParameterError


@pytest.mark.parametrize("name", sorted(METHODS))
def test_every_parameter_is_checked_and_the_defaults_pass(name):
    cls = METHODS[name]
    assert set(cls.parameters) <= set(cls.checks)
    cls().resolve(dict(cls.parameters))


@pytest.mark.parametrize("name, params, says", [
    ("dp_sgd", {"batch_size": 0}, "'batch_size' must be an integer >= 1, got 0"),
    ("dp_sgd", {"batch_size": 2.5}, "'batch_size' must be an integer >= 1"),
    ("dp_sgd", {"lr": math.nan}, "'lr' must be a number >= 0, got nan"),
    ("dp_sgd", {"lr": math.inf}, "'lr' must be a number >= 0, got inf"),
    ("dp_sgd", {"clip": -1.0}, "'clip' must be a finite number > 0 (a private method clips)"),
    # a plan refuses noise on unbounded contributions: the check says so first (issue 40 #4)
    ("dp_sgd", {"clip": math.inf}, "a finite number > 0 (a private method clips), got inf"),
    ("dp_sgda", {"clip": math.inf}, "(the problem's L) or a finite number > 0, got inf"),
    ("dp_recursive_spider", {"clip": math.inf}, "'clip' must be a finite number > 0"),
    ("dp_sgd", {"model": "resnet9000"}, "'model' must be one of ['logistic_regression'"),
    ("racodp", {"noise_multiplier": "six"}, "'noise_multiplier' must be a number >= 0"),
    ("racodp", {"noise_multiplier": -6}, "'noise_multiplier' must be a number >= 0, got -6"),
    ("racodp", {"accountant": "moments"}, "'accountant' must be one of ['rdp', 'pld']"),
    ("racodp", {"gamma": [0.1, -0.5]}, "'gamma' must be a number >= 0, got -0.5"),
    ("racodp", {"constraint": "parity"}, "'constraint' must be one of"),
    ("racodp", {"max_steps": 0}, "'max_steps' must be an integer >= 1, got 0"),
    ("dpfermi", {"code_faithful": "yes"}, "'code_faithful' must be true or false"),
    ("tran2021b", {"clip_dual": "bond"}, "'clip_dual' must be 'bound' or a finite number > 0"),
    ("jagielski2019", {"rounds": True}, "'rounds' must be an integer >= 1, got True"),
])
def test_bad_values_are_refused_naming_the_parameter(name, params, says):
    with pytest.raises(ParameterError) as error:
        get_method(name).resolve(params)
    assert says in str(error.value) and f"method {name!r}" in str(error.value)


def test_good_values_and_sweeps_pass():
    assert get_method("tran2021b").resolve({"clip_dual": 5.0})["clip_dual"] == 5.0
    assert get_method("racodp").resolve({"gamma": [0.0, 0.05]})["gamma"] == [0.0, 0.05]
    # the non-private twin that keeps a clip (RaCO-DP's, Fig. 8a) may leave it unclipped
    assert math.isinf(get_method("racodp_nonprivate").resolve({"clip": math.inf})["clip"])
    assert get_method("racodp_nonprivate").resolve({"clip": 2.0})["clip"] == 2.0
