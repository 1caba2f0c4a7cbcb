"""The RateConstraintSet data type: validation, cells, serialisation."""

import json

import numpy as np
import pytest
import torch

from dpminimax.constraints import (
    ConstraintSpecError,
    RateConstraintSet,
    demographic_parity,
    equalized_odds,
    false_negative_rate,
    generic,
)


def _uneven():
    """Constraints with different numbers of local datasets (padding rows)."""
    constraints = [
        {"name": "one", "slack": 0.0, "terms": [{"cells": [1], "class": 0, "coefficient": 1.0}]},
        {
            "name": "three",
            "slack": 0.3,
            "terms": [
                {"cells": [0], "class": 1, "coefficient": 0.5},
                {"cells": [1, 2], "class": 1, "coefficient": -0.25},
                {"cells": [3], "class": 0, "coefficient": 1 / 3},
            ],
        },
    ]
    return generic("label_sensitive", constraints, num_groups=2, num_classes=2)


@pytest.mark.parametrize(
    "constraints",
    [
        demographic_parity(9, gamma=0.05),
        equalized_odds(3, 3, gamma=0.1, group_names=["x", "y", "z"]),
        false_negative_rate(gamma=0.2),
        _uneven(),
    ],
)
def test_to_dict_from_dict_round_trip_through_json(constraints):
    restored = RateConstraintSet.from_dict(json.loads(json.dumps(constraints.to_dict())))
    assert restored == constraints
    np.testing.assert_array_equal(restored.coefficients, constraints.coefficients)


def test_from_dict_rejects_bad_dicts():
    data = demographic_parity(2, gamma=0.1).to_dict()
    with pytest.raises(ConstraintSpecError, match="expected"):
        RateConstraintSet.from_dict({**data, "extra": 1})
    data["local_datasets"][0][1] = [7]
    with pytest.raises(ConstraintSpecError, match="unknown cell index 7"):
        RateConstraintSet.from_dict(data)


def test_arrays_are_read_only_copies():
    membership = np.array([[[True, False], [False, True]]])
    constraints = RateConstraintSet(
        "sensitive", 2, 2, membership, [[[0, 1.0], [0, -1.0]]], [0.1], ("c",), ("a", "b")
    )
    membership[0, 0, 1] = True
    assert not constraints.membership[0, 0, 1]
    with pytest.raises(ValueError, match="read-only"):
        constraints.slack[0] = 1.0
    assert constraints.coefficients.dtype == np.float64


def _direct(**changes):
    fields = {
        "partition": "sensitive",
        "num_groups": 2,
        "num_classes": 2,
        "membership": np.array([[[True, False], [False, True]]]),
        "coefficients": np.array([[[0.0, 1.0], [0.0, -1.0]]]),
        "slack": np.array([0.1]),
        "names": ("c",),
        "cell_names": ("a", "b"),
    }
    return RateConstraintSet(**{**fields, **changes})


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"membership": np.ones((1, 2, 3), bool)}, r"membership has shape \(1, 2, 3\)"),
        ({"membership": np.ones((1, 2, 2), int)}, "membership must have dtype bool"),
        ({"coefficients": np.zeros((1, 2, 3))}, "coefficients has shape"),
        ({"slack": [0.1, 0.2]}, "slack has shape"),
        ({"slack": [-0.1]}, "slack of 'c' is -0.1; must be >= 0"),
        ({"slack": [np.inf]}, "slack has non-finite values"),
        ({"coefficients": [[[0.0, 1.0], [0.0, np.nan]]]}, "coefficients has non-finite"),
        ({"membership": np.array([[[True, False], [False, False]]])}, "empty local dataset"),
        ({"coefficients": np.zeros((1, 2, 2))}, "no nonzero coefficient"),
        ({"cell_names": ("a",)}, "cell_names has 1 entries"),
        ({"partition": "groups"}, "unknown partition"),
        ({"num_classes": 1}, "num_classes must be an integer >= 2"),
        ({"num_groups": 2.0}, "num_groups must be an integer"),
        (
            {
                "membership": np.zeros((0, 2, 2), bool),
                "coefficients": np.zeros((0, 2, 2)),
                "slack": np.zeros(0),
                "names": (),
            },
            "at least one constraint",
        ),
    ],
)
def test_direct_construction_is_validated(changes, message):
    with pytest.raises(ConstraintSpecError, match=message):
        _direct(**changes)


def test_cells_of_each_partition():
    y = np.array([0, 1, 2, 1])
    s = np.array([1, 0, 1, 1])
    assert demographic_parity(2, 3, gamma=0.1).cells(y, s).tolist() == [1, 0, 1, 1]
    assert false_negative_rate(3, gamma=0.1).cells(y, None).tolist() == [0, 1, 2, 1]
    eo = equalized_odds(2, 3, gamma=0.1)
    assert eo.cells(y, s).tolist() == [1, 2, 5, 3]
    assert eo.cells(torch.tensor(y, dtype=torch.float32), torch.tensor(s)).tolist() == [1, 2, 5, 3]
    assert eo.cells(y[:0], s[:0]).shape == (0,)


@pytest.mark.parametrize(
    ("y", "s", "message"),
    [
        ([0, 1], [0, 2], "sensitive attribute s has value 2 outside"),
        ([0, 2], [0, 1], "label y has value 2 outside"),
        ([0, 1], [-1, 1], "sensitive attribute s has value -1"),
        ([0.5, 1], [0, 1], "label y has non-integer values"),
        ([0, 1], None, "sensitive attribute s is required"),
        ([0, 1], [0, 1, 1], "y has shape"),
        ([[0, 1]], [[0, 1]], "must be 1-D"),
    ],
)
def test_bad_cell_inputs_name_the_problem(y, s, message):
    with pytest.raises(ConstraintSpecError, match=message):
        equalized_odds(2, gamma=0.1).cells(y, s)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda c: c.rates(np.ones((3, 3)) / 3, [0, 1, 1]), r"probs has shape \(3, 3\)"),
        (lambda c: c.rates(np.ones((3, 2)) / 2, [0, 1]), r"cells has shape \(2,\)"),
        (lambda c: c.rates(np.ones((2, 2)) / 2, [0, 2]), r"cells has values outside \[0, 2\)"),
        (lambda c: c.rates(np.ones((2, 2)) / 2, [0.0, 1.0]), "cells must be integer"),
        (lambda c: c.histogram_rates(np.ones((3, 2))), "histogram has 3 cells"),
        (lambda c: c.histogram_rates(np.ones(2)), r"histogram has shape \(2,\)"),
        (lambda c: c.cell_weights(np.ones(3), np.ones((2, 2))), "multipliers has shape"),
    ],
)
def test_bad_rate_inputs_name_the_problem(call, message):
    with pytest.raises(ConstraintSpecError, match=message):
        call(demographic_parity(2, gamma=0.1))
