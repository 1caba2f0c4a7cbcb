"""The epsilon type (issue #41): every spelling parses to one value, the label is the path's and
run_config.json's, and what the label promises (6 significant digits) holds."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from dpminimax.epsilon import NON_PRIVATE, Epsilon, EpsilonError


@pytest.mark.parametrize("value", ["1", 1, 1.0, "1.0", "1.00", " 1 ", "1e0", np.float64(1.0),
                                   np.int64(1), Epsilon(1.0)])
def test_every_spelling_of_one_is_one_epsilon_labelled_1(value):
    eps = Epsilon.parse(value)
    assert eps == Epsilon(1.0) and hash(eps) == hash(Epsilon(1.0))
    assert float(eps) == 1.0 and type(float(eps)) is float
    assert str(eps) == f"{eps}" == "1" and eps.is_private


@pytest.mark.parametrize("value", ["inf", "Inf", "INF", "infinity", "Infinity", "+inf",
                                   math.inf, np.inf, NON_PRIVATE])
def test_every_spelling_of_infinity_is_the_non_private_epsilon(value):
    eps = Epsilon.parse(value)
    assert eps == NON_PRIVATE and math.isinf(float(eps)) and float(eps) > 0
    assert str(eps) == "inf" and not eps.is_private


@pytest.mark.parametrize(("value", "label"), [("0.5", "0.5"), (0.5, "0.5"), ("0.50", "0.5"),
                                              (3.0, "3"), ("10", "10"), (1e-5, "1e-05"),
                                              ("0.0001", "0.0001"), (123456, "123456"),
                                              (1234567, "1.23457e+06")])
def test_the_label_is_the_value_printed_with_percent_g(value, label):
    assert str(Epsilon.parse(value)) == label


def test_the_value_is_the_number_parsed_not_its_label():
    """The accountant calibrates to the number given (``dpminimax.fit``), never to a rounded
    label: an epsilon with more than 6 significant digits keeps them, and says its label does
    not name it."""
    eps = Epsilon.parse(1.2345678)
    assert float(eps) == 1.2345678 and str(eps) == "1.23457"
    assert not eps.labelled and Epsilon.parse(str(eps)) != eps
    assert Epsilon.parse("1.23457").labelled


def test_equal_hashed_and_ordered_by_value():
    values = [Epsilon.parse(v) for v in ("inf", "9", "0.5", 1, "1.0", 3)]
    assert sorted(values) == [Epsilon(0.5), Epsilon(1.0), Epsilon(1.0), Epsilon(3.0),
                              Epsilon(9.0), NON_PRIVATE]
    assert len(set(values)) == 5
    assert Epsilon.parse("9") < Epsilon.parse("10")  # numeric, not string, order
    assert Epsilon(1.0) != "1" and Epsilon(1.0) != 1.0  # no silent mixing with labels


@pytest.mark.parametrize(("value", "message"), [
    (-1, "epsilon must be > 0, got -1"), ("-1", "epsilon must be > 0, got -1.0"),
    (0, "epsilon must be > 0, got 0"), ("0", "epsilon must be > 0, got 0.0"),
    ("-inf", "epsilon must be > 0, got -inf"), (math.nan, "epsilon must be > 0, got nan"),
    ("nan", "epsilon must be > 0, got nan"), ("abc", "epsilon is not a number: 'abc'"),
    ("", "epsilon is not a number: ''"), ("1,5", "epsilon is not a number: '1,5'"),
    (None, "epsilon must be > 0, got None"), (True, "epsilon must be > 0, got True"),
    ([1], "epsilon must be > 0, got [1]"),
])
def test_refused_in_one_line_naming_the_key(value, message):
    with pytest.raises(EpsilonError) as err:
        Epsilon.parse(value, "experiments.e.methods.m.epsilons[0]")
    assert str(err.value) == f"experiments.e.methods.m.epsilons[0]: {message}"
    assert "\n" not in str(err.value) and isinstance(err.value, ValueError)


def test_direct_construction_checks_too():
    with pytest.raises(EpsilonError, match="must be > 0"):
        Epsilon(-0.5)
    with pytest.raises(EpsilonError, match="must be > 0, got '1'"):
        Epsilon("1")  # a label goes through Epsilon.parse


POSITIVE = st.floats(min_value=5e-324, allow_infinity=True, allow_nan=False)


@given(POSITIVE)
def test_a_label_round_trips_to_a_float_that_labels_the_same(value):
    """Any epsilon: its label parses to an epsilon with the same label, which it names exactly
    (the label is stable, so paths never drift); parsing the float gives the float itself."""
    eps = Epsilon.parse(value)
    assert float(eps) == value
    relabelled = Epsilon.parse(str(eps))
    assert str(relabelled) == str(eps) and relabelled.labelled
    assert float(relabelled) == float(f"{value:g}")


@given(POSITIVE.map(lambda v: float(f"{v:g}")).filter(lambda v: v > 0))
def test_a_float_of_at_most_6_significant_digits_round_trips_exactly(value):
    """float -> label -> parse is the identity exactly for the floats the label can name (those
    ``%g`` prints without loss): every epsilon a job may have."""
    eps = Epsilon.parse(value)
    assert eps.labelled
    assert Epsilon.parse(str(eps)) == eps and float(Epsilon.parse(str(eps))) == value
