"""Table 1 of RaCO-DP (App. A) and config entries, all built from ONE generic description.

Every constraint is a name, a slack γ_j and a list of terms ``{"cells": [...], "class": k,
"coefficient": α}``; terms with the same cell set share one local dataset I ∈ 𝓘_j (eq. 6).
:func:`generic` turns such a list into a :class:`RateConstraintSet`; the Table 1 builders only
write that list, and a config entry ``{"kind": "generic", "partition": ..., "constraints": [...]}``
adds any other constraint without code.

Constraint order (the order of the dual variables λ):

* demographic parity (eq. 7/13): z-major then k, ``DP[z=<group>,k=<k>]``;
* equalized odds (Table 1 row 2): true label k' then z then predicted k,
  ``EO[y=<k'>,z=<group>,k=<k>]``;
* false negative rate: one constraint per listed class, ``FNR[y=<c>]`` (experiments) or
  ``FNR_table1[k=<k>]`` (Table 1 / eq. 17 literally).
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from dpminimax.constraints.errors import ConstraintSpecError
from dpminimax.constraints.partition import cell_names, group_labels, is_int, num_cells
from dpminimax.constraints.spec import RateConstraintSet, membership_from_cells


def generic(
    partition: str,
    constraints: Sequence[Mapping[str, Any]],
    num_groups: int,
    num_classes: int,
    group_names: Sequence[str] | None = None,
) -> RateConstraintSet:
    """Constraints of the form (6) from term lists over the cells of ``partition``.

    Each entry of ``constraints`` is ``{"name": str, "slack": γ_j >= 0, "terms": [{"cells":
    [cell index or cell name, ...], "class": k, "coefficient": α}, ...]}``. Terms on the same set
    of cells add to one local dataset; cell names are those of :attr:`RateConstraintSet.cell_names`
    (``"z=<group>"``, ``"y=<k>"``, ``"y=<k>,z=<group>"``).
    """
    names_of_cells = cell_names(partition, group_labels(num_groups, group_names), num_classes)
    lookup = {name: q for q, name in enumerate(names_of_cells)}
    if isinstance(constraints, str | Mapping) or not constraints:
        raise ConstraintSpecError("constraints must be a non-empty list of constraint entries")
    entries = [
        _check_keys(entry, {"name", "slack", "terms"}, f"constraint {position}")
        for position, entry in enumerate(constraints)
    ]
    local_datasets, rows = [], []
    for entry in entries:
        datasets = _local_datasets(entry, lookup, num_classes)
        local_datasets.append([sorted(cells) for cells in datasets])
        rows.append(list(datasets.values()))
    coefficients = np.zeros((len(rows), max(map(len, rows)), num_classes))
    for j, constraint_rows in enumerate(rows):
        coefficients[j, : len(constraint_rows)] = constraint_rows
    return RateConstraintSet(
        partition=partition,
        num_groups=num_groups,
        num_classes=num_classes,
        membership=membership_from_cells(
            local_datasets, num_cells(partition, num_groups, num_classes)
        ),
        coefficients=coefficients,
        slack=[_number(entry["slack"], f"slack of {entry['name']!r}") for entry in entries],
        names=tuple(str(entry["name"]) for entry in entries),
        cell_names=names_of_cells,
    )


def demographic_parity(
    num_groups: int,
    num_classes: int = 2,
    gamma: float | None = None,
    group_names: Sequence[str] | None = None,
    classes: Iterable[int] | None = None,
) -> RateConstraintSet:
    """Table 1 row 1, eq. (7)/(13): P_k(D[Z=z]) − P_k(D[Z≠z]) ≤ γ for every group z and every
    class k in ``classes`` (default: all K), so J = |Z|·K; partition ``"sensitive"`` (App. A:
    𝓘 = ({z}, [|Z|]∖z), α = +1, −1 on class k). For K = 2 the k = 0 and k = 1 constraints of a
    group bound the gap from both sides."""
    gamma = _gamma(gamma)
    groups = group_labels(_at_least_two(num_groups), group_names)
    constraints = [
        _difference(f"DP[z={groups[z]},k={k}]", gamma, k, [z], _others(z, num_groups))
        for z in range(num_groups)
        for k in _classes(classes, num_classes, range(num_classes))
    ]
    return generic("sensitive", constraints, num_groups, num_classes, group_names)


def equalized_odds(
    num_groups: int,
    num_classes: int = 2,
    gamma: float | None = None,
    group_names: Sequence[str] | None = None,
) -> RateConstraintSet:
    """Table 1 row 2 (the "counter-factual" eq. 15 form with Z≠z; eq. 16's z' is a typo):
    P_k(D[Y=k', Z=z]) − P_k(D[Y=k', Z≠z]) ≤ γ for all k, k', z, so J = K²|Z|; partition
    ``"label_sensitive"`` with cell(y, z) = y·|Z| + z."""
    gamma = _gamma(gamma)
    groups = group_labels(_at_least_two(num_groups), group_names)
    _num_classes(num_classes)
    constraints = [
        _difference(
            f"EO[y={label},z={groups[z]},k={k}]",
            gamma,
            k,
            [label * num_groups + z],
            [label * num_groups + other for other in _others(z, num_groups)],
        )
        for label in range(num_classes)
        for z in range(num_groups)
        for k in range(num_classes)
    ]
    return generic("label_sensitive", constraints, num_groups, num_classes, group_names)


def false_negative_rate(
    num_classes: int = 2,
    gamma: float | None = None,
    classes: Iterable[int] | None = None,
    table1_literal: bool = False,
    num_groups: int = 1,
) -> RateConstraintSet:
    """False-negative-rate constraints over the partition ``"label"`` (cell = y).

    Default (what the experiments constrain; Table 1's "for all k" would add FPR): for each
    positive class c in ``classes`` (default ``(1,)``), the miss rate Pr[ŷ ≠ c | y = c] = Σ_{k≠c}
    P_k(D[Y=c]) ≤ γ. For K = 2 and c = 1 this is the single constraint P_0(D[Y=1]) ≤ γ (J = 1).

    ``table1_literal=True``: Table 1 row 3 / eq. (17) as printed, P_k(D[Y≠k]) ≤ γ for each k in
    ``classes`` (default: all K, J = K). For K = 2, k = 0 is the FNR above and k = 1 the FPR.

    ``num_groups`` is only recorded (the label partition ignores the sensitive attribute).
    """
    gamma = _gamma(gamma)
    if table1_literal:
        constraints = [
            _entry(f"FNR_table1[k={k}]", gamma, [(_others(k, num_classes), k, 1.0)])
            for k in _classes(classes, num_classes, range(num_classes))
        ]
    else:
        constraints = [
            _entry(f"FNR[y={c}]", gamma, [([c], k, 1.0) for k in _others(c, num_classes)])
            for c in _classes(classes, num_classes, (1,))
        ]
    return generic("label", constraints, num_groups, num_classes)


KINDS = {
    "demographic_parity": demographic_parity,
    "equalized_odds": equalized_odds,
    "false_negative_rate": false_negative_rate,
    "generic": generic,
}


def build_constraints(
    config: Mapping[str, Any],
    num_groups: int,
    num_classes: int,
    group_names: Sequence[str] | None = None,
) -> RateConstraintSet:
    """The constraint set of one config entry ``{"kind": <one of KINDS>, **options}``.

    The options are the keyword arguments of the builder of that kind (e.g. ``{"kind":
    "demographic_parity", "gamma": 0.05}`` or ``{"kind": "generic", "partition": "sensitive",
    "constraints": [...]}``); the dataset supplies ``num_groups``, ``num_classes`` and
    ``group_names``. Unknown kinds or options raise :class:`ConstraintSpecError`.
    """
    if not isinstance(config, Mapping):
        raise ConstraintSpecError(f"a constraint config must be a mapping, got {config!r}")
    kind = config.get("kind")
    if kind not in KINDS:
        raise ConstraintSpecError(
            f"unknown constraint kind {kind!r}; expected one of {list(KINDS)}"
        )
    builder = KINDS[kind]
    accepted = inspect.signature(builder).parameters
    context = {"num_groups": num_groups, "num_classes": num_classes, "group_names": group_names}
    options = {key: value for key, value in config.items() if key != "kind"}
    unknown = set(options) - (set(accepted) - set(context))
    if unknown:
        allowed = sorted(set(accepted) - set(context))
        raise ConstraintSpecError(
            f"unknown option(s) {sorted(unknown)} for kind {kind!r}; allowed: {allowed}"
        )
    return builder(**options, **{key: v for key, v in context.items() if key in accepted})


def _local_datasets(
    entry: Mapping[str, Any], lookup: Mapping[str, int], num_classes: int
) -> dict[frozenset[int], np.ndarray]:
    """The local datasets of one constraint entry (cell set -> α row over classes), in order of
    first appearance."""
    name, terms = entry["name"], entry["terms"]
    if isinstance(terms, str | Mapping) or not terms:
        raise ConstraintSpecError(f"{name!r} has no terms")
    datasets: dict[frozenset[int], np.ndarray] = {}
    for position, term in enumerate(terms):
        where = f"term {position} of {name!r}"
        _check_keys(term, {"cells", "class", "coefficient"}, where)
        cells = [_cell(cell, lookup, where) for cell in term["cells"]]
        if not cells:
            raise ConstraintSpecError(f"{where} has no cells (an empty local dataset definition)")
        if len(set(cells)) != len(cells):
            raise ConstraintSpecError(f"{where} repeats a cell: {term['cells']}")
        (k,) = _classes([term["class"]], num_classes, ())
        row = datasets.setdefault(frozenset(cells), np.zeros(num_classes))
        row[k] += _number(term["coefficient"], f"coefficient of {where}")
    return datasets


def _entry(name: str, gamma: float, terms: Iterable[tuple[list[int], int, float]]) -> dict:
    """One constraint entry of the generic description."""
    return {
        "name": name,
        "slack": gamma,
        "terms": [{"cells": c, "class": k, "coefficient": a} for c, k, a in terms],
    }


def _difference(name: str, gamma: float, k: int, inside: list[int], outside: list[int]) -> dict:
    """P_k(inside) − P_k(outside) ≤ γ, the shape of the DP and EO rows of Table 1."""
    return _entry(name, gamma, [(inside, k, 1.0), (outside, k, -1.0)])


def _others(index: int, count: int) -> list[int]:
    return [other for other in range(count) if other != index]


def _check_keys(mapping: Any, keys: set[str], where: str) -> Mapping[str, Any]:
    if not isinstance(mapping, Mapping):
        raise ConstraintSpecError(f"{where} must be a mapping, got {mapping!r}")
    if set(mapping) != keys:
        raise ConstraintSpecError(
            f"{where} has keys {sorted(mapping)}, expected exactly {sorted(keys)}"
        )
    return mapping


def _cell(cell: Any, lookup: Mapping[str, int], where: str) -> int:
    if isinstance(cell, str) and cell in lookup:
        return lookup[cell]
    if is_int(cell) and 0 <= cell < len(lookup):
        return int(cell)
    raise ConstraintSpecError(
        f"{where}: unknown cell {cell!r}; cells are 0..{len(lookup) - 1} or {list(lookup)}"
    )


def _classes(classes: Iterable[int] | None, num_classes: int, default: Iterable[int]) -> list[int]:
    """The class indices ``classes`` (or ``default``), each in [0, K) and listed once."""
    chosen = list(default if classes is None else classes)
    if not chosen:
        raise ConstraintSpecError("no class index selected")
    for k in chosen:
        if not is_int(k) or not 0 <= k < _num_classes(num_classes):
            raise ConstraintSpecError(f"unknown class index {k!r} (num_classes={num_classes})")
    if len(set(chosen)) != len(chosen):
        raise ConstraintSpecError(f"class indices listed twice: {chosen}")
    return [int(k) for k in chosen]


def _num_classes(num_classes: int) -> int:
    if not is_int(num_classes) or num_classes < 2:
        raise ConstraintSpecError(f"num_classes must be an integer >= 2, got {num_classes!r}")
    return num_classes


def _at_least_two(num_groups: int) -> int:
    if not is_int(num_groups) or num_groups < 2:
        raise ConstraintSpecError(
            f"num_groups must be an integer >= 2 (Z≠z must be non-empty), got {num_groups!r}"
        )
    return num_groups


def _gamma(gamma: float | None) -> float:
    if gamma is None:
        raise ConstraintSpecError("gamma (the slack γ) is required")
    value = _number(gamma, "gamma")
    if value < 0:
        raise ConstraintSpecError(f"gamma must be >= 0, got {value}")
    return value


def _number(value: Any, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float | np.number):
        raise ConstraintSpecError(f"{what} must be a number, got {value!r}")
    if not math.isfinite(value):
        raise ConstraintSpecError(f"{what} must be finite, got {value!r}")
    return float(value)
