"""Table 1 of RaCO-DP (App. A) and config entries as generalized rate constraints (eq. 6)."""

import numpy as np
import pytest

from dpminimax.constraints import (
    ConstraintSpecError,
    build_constraints,
    demographic_parity,
    equalized_odds,
    false_negative_rate,
    generic,
)


def test_table1_constraint_counts():
    assert demographic_parity(2, gamma=0.05).num_constraints == 4  # |Z| K
    assert equalized_odds(2, gamma=0.05).num_constraints == 8  # K² |Z|
    assert false_negative_rate(gamma=0.05).num_constraints == 1  # positive class only
    assert false_negative_rate(gamma=0.05, table1_literal=True).num_constraints == 2
    acs = demographic_parity(9, gamma=0.05)  # ACSEmployment: 9 race groups, 2 classes
    assert (acs.num_constraints, acs.num_cells, acs.partition) == (18, 9, "sensitive")
    assert demographic_parity(3, 4, gamma=0.1, classes=[1, 3]).num_constraints == 6
    assert equalized_odds(3, 3, gamma=0.1).num_cells == 9


def test_dp_rows_follow_app_a():
    """Constraint (z, k): 𝓘 = ({z}, [|Z|]∖z) with α = +1, −1 on class k (eq. 13)."""
    acs = demographic_parity(9, gamma=0.02)
    j = acs.names.index("DP[z=3,k=1]")
    assert j == 3 * 2 + 1  # z-major, then k
    np.testing.assert_array_equal(acs.membership[j, 0], np.arange(9) == 3)
    np.testing.assert_array_equal(acs.membership[j, 1], np.arange(9) != 3)
    np.testing.assert_array_equal(acs.coefficients[j], [[0.0, 1.0], [0.0, -1.0]])
    np.testing.assert_array_equal(acs.slack, np.full(18, 0.02))


def test_dp_group_names_and_cell_names():
    dp = demographic_parity(2, gamma=0.1, group_names=["Male", "Female"])
    assert dp.names == ("DP[z=Male,k=0]", "DP[z=Male,k=1]", "DP[z=Female,k=0]", "DP[z=Female,k=1]")
    assert dp.cell_names == ("z=Male", "z=Female")


def test_eo_rows_follow_table1():
    """Constraint (k', z, k): P_k(D[Y=k', Z=z]) − P_k(D[Y=k', Z≠z]), cell(y, z) = y|Z| + z."""
    eo = equalized_odds(3, gamma=0.1)
    j = eo.names.index("EO[y=1,z=2,k=0]")
    assert eo.partition == "label_sensitive"
    assert eo.cell_names[1 * 3 + 2] == "y=1,z=2"
    np.testing.assert_array_equal(np.flatnonzero(eo.membership[j, 0]), [5])
    np.testing.assert_array_equal(np.flatnonzero(eo.membership[j, 1]), [3, 4])
    np.testing.assert_array_equal(eo.coefficients[j], [[1.0, 0.0], [-1.0, 0.0]])


def test_fnr_experiments_form_is_miss_rate_of_positive_class():
    """One constraint P_0(D[Y=1]) ≤ γ over the label partition."""
    fnr = false_negative_rate(gamma=0.2)
    assert (fnr.partition, fnr.names, fnr.cell_names) == ("label", ("FNR[y=1]",), ("y=0", "y=1"))
    np.testing.assert_array_equal(fnr.membership, [[[False, True]]])
    np.testing.assert_array_equal(fnr.coefficients, [[[1.0, 0.0]]])
    multi = false_negative_rate(4, gamma=0.2, classes=[2])  # Pr[ŷ ≠ 2 | y = 2]
    np.testing.assert_array_equal(multi.coefficients, [[[1.0, 1.0, 0.0, 1.0]]])


def test_fnr_table1_literal_form():
    """Eq. (17): P_k(D[Y≠k]) ≤ γ for every k; for K = 2, k = 0 is the FNR and k = 1 the FPR."""
    literal = false_negative_rate(3, gamma=0.2, table1_literal=True)
    assert literal.names == ("FNR_table1[k=0]", "FNR_table1[k=1]", "FNR_table1[k=2]")
    np.testing.assert_array_equal(literal.membership[1, 0], [True, False, True])
    np.testing.assert_array_equal(literal.coefficients[1, 0], [0.0, 1.0, 0.0])
    binary = false_negative_rate(gamma=0.2, table1_literal=True, classes=[0])
    experiments = false_negative_rate(gamma=0.2)
    np.testing.assert_array_equal(binary.membership, experiments.membership)
    np.testing.assert_array_equal(binary.coefficients, experiments.coefficients)


def _dp_term(cells_in, cells_out, k):
    return [
        {"cells": cells_in, "class": k, "coefficient": 1.0},
        {"cells": cells_out, "class": k, "coefficient": -1.0},
    ]


def test_generic_config_equals_dp_builder():
    groups = ["a", "b", "c"]
    constraints = [
        {
            "name": f"DP[z={g},k={k}]",
            "slack": 0.05,
            # cell names and cell indices are both accepted
            "terms": _dp_term([f"z={g}"], [z2 for z2 in range(3) if z2 != z], k),
        }
        for z, g in enumerate(groups)
        for k in range(2)
    ]
    config = {"kind": "generic", "partition": "sensitive", "constraints": constraints}
    built = build_constraints(config, num_groups=3, num_classes=2, group_names=groups)
    assert built == demographic_parity(3, gamma=0.05, group_names=groups)


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        ({"kind": "demographic_parity", "gamma": 0.05}, demographic_parity(2, gamma=0.05)),
        (
            {"kind": "demographic_parity", "gamma": 0.05, "classes": [1]},
            demographic_parity(2, gamma=0.05, classes=[1]),
        ),
        ({"kind": "equalized_odds", "gamma": 0.1}, equalized_odds(2, gamma=0.1)),
        (
            {"kind": "false_negative_rate", "gamma": 0.1},
            false_negative_rate(gamma=0.1, num_groups=2),
        ),
    ],
)
def test_build_constraints_dispatches_to_builders(config, expected):
    assert build_constraints(config, num_groups=2, num_classes=2) == expected


def test_fnr_config_records_num_groups():
    fnr = build_constraints({"kind": "false_negative_rate", "gamma": 0.1}, 5, 2)
    assert fnr.num_groups == 5


def test_generic_terms_on_same_cells_share_a_local_dataset_and_pad():
    constraints = [
        {"name": "a", "slack": 0.0, "terms": _dp_term([0], [1], 1)},
        {
            "name": "b",
            "slack": 0.1,
            "terms": [
                {"cells": [1], "class": 0, "coefficient": 0.5},
                {"cells": [1], "class": 1, "coefficient": 0.25},
                {"cells": [1], "class": 1, "coefficient": 0.25},
            ],
        },
    ]
    built = generic("label", constraints, num_groups=1, num_classes=2)
    assert built.membership.shape == (2, 2, 2)
    np.testing.assert_array_equal(built.coefficients[1], [[0.5, 0.5], [0.0, 0.0]])
    assert not built.membership[1, 1].any()


def _generic(terms, **entry):
    constraint = {"name": "c", "slack": 0.1, "terms": terms, **entry}
    return {"kind": "generic", "partition": "sensitive", "constraints": [constraint]}


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"kind": "demographic_parity", "gamma": -0.1}, "gamma must be >= 0"),
        ({"kind": "demographic_parity"}, "gamma .* is required"),
        ({"kind": "equalized_odds", "gamma": float("nan")}, "gamma must be finite"),
        ({"kind": "demographic_parity", "gamma": 0.1, "classes": [2]}, "unknown class index 2"),
        ({"kind": "demographic_parity", "gamma": 0.1, "classes": [1, 1]}, "listed twice"),
        ({"kind": "false_negative_rate", "gamma": 0.1, "classes": [-1]}, "unknown class index"),
        ({"kind": "parity", "gamma": 0.1}, "unknown constraint kind 'parity'"),
        ({"gamma": 0.1}, "unknown constraint kind None"),
        ({"kind": "demographic_parity", "gama": 0.1}, r"unknown option\(s\) \['gama'\]"),
        (_generic(_dp_term([0], [5], 1)), "unknown cell 5"),
        (_generic(_dp_term(["z=Other"], [1], 1)), "unknown cell 'z=Other'"),
        (_generic(_dp_term([0], [], 1)), "term 1 of 'c' has no cells .*empty local dataset"),
        (_generic(_dp_term([0], [1, 1], 1)), "repeats a cell"),
        (_generic(_dp_term([0], [1], 2)), "unknown class index 2"),
        (_generic([]), "'c' has no terms"),
        (_generic(_dp_term([0], [1], 1), slack=-1.0), "slack of 'c' is -1.0; must be >= 0"),
        (_generic(_dp_term([0], [1], 1), extra=1), "constraint 0 has keys"),
        (_generic([{"cells": [0], "class": 1}]), "term 0 of 'c' has keys"),
        ({"kind": "generic", "partition": "race", "constraints": []}, "unknown partition 'race'"),
        ({"kind": "generic", "partition": "sensitive", "constraints": []}, "non-empty list"),
    ],
)
def test_bad_configs_name_the_problem(config, message):
    with pytest.raises(ConstraintSpecError, match=message):
        build_constraints(config, num_groups=2, num_classes=2)


def test_duplicated_constraint_names_are_rejected():
    entry = {"name": "same", "slack": 0.1, "terms": _dp_term([0], [1], 1)}
    with pytest.raises(ConstraintSpecError, match=r"duplicated constraint names: \['same'\]"):
        generic("sensitive", [entry, entry], num_groups=2, num_classes=2)


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: demographic_parity(1, gamma=0.1), "num_groups must be an integer >= 2"),
        (lambda: equalized_odds(2, 1, gamma=0.1), "num_classes must be an integer >= 2"),
        (lambda: demographic_parity(2, gamma=0.1, group_names=["a"]), "group_names has 1"),
        (lambda: demographic_parity(2, gamma=0.1, group_names=["a", "a"]), "not unique"),
        (lambda: demographic_parity(2, gamma=0.1, classes=[]), "no class index selected"),
        (lambda: build_constraints([("kind", "generic")], 2, 2), "must be a mapping"),
    ],
)
def test_bad_builder_arguments_name_the_problem(build, message):
    with pytest.raises(ConstraintSpecError, match=message):
        build()
