"""Generalized rate constraints as data (RaCO-DP Sec. 3, eq. 6).

A :class:`RateConstraintSet` holds J constraints over one global partition of Q cells and K
classes. Constraint j has L local datasets (index subsets I of [Q], eq. 6's family 𝓘_j) given by
``membership[j, l]`` and weights ``coefficients[j, l, k]`` = α_{j,I,k}:

    Γ_j = Σ_l Σ_k α_{j,l,k} P_k(∪_{q: membership[j,l,q]} D_q)  ≤  slack[j] = γ_j.

Constraints with fewer than L local datasets pad with rows that are all False with zero
coefficients; such rows contribute nothing. All computations are vectorised torch operations
(numpy in, numpy out; torch in, torch out, differentiable in the predictions).
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

import numpy as np
import torch

from dpminimax.constraints.errors import ConstraintSpecError, EmptyLocalDatasetWarning
from dpminimax.constraints.partition import cell_index, check_partition, is_int, num_cells


@dataclass(frozen=True, eq=False)
class RateConstraintSet:
    """J generalized rate constraints (RaCO-DP eq. 6) over a global partition of Q cells, K
    classes. Constraint j: sum_l sum_k coefficients[j, l, k] * P_k(union of cells q with
    membership[j, l, q]) <= slack[j].

    ``partition`` says how an example's cell is computed (see :mod:`.partition`): ``"sensitive"``
    (cell = s), ``"label"`` (cell = y) or ``"label_sensitive"`` (cell = y * num_groups + s).
    The arrays are validated and stored as read-only copies.
    """

    partition: str
    num_groups: int
    num_classes: int
    membership: np.ndarray
    coefficients: np.ndarray
    slack: np.ndarray
    names: tuple[str, ...]
    cell_names: tuple[str, ...]

    def __post_init__(self) -> None:
        check_partition(self.partition)
        for field, minimum in (("num_groups", 1), ("num_classes", 2)):
            value = getattr(self, field)
            if not is_int(value) or value < minimum:
                raise ConstraintSpecError(f"{field} must be an integer >= {minimum}, got {value!r}")
            object.__setattr__(self, field, int(value))
        object.__setattr__(self, "names", tuple(map(str, self.names)))
        object.__setattr__(self, "cell_names", tuple(map(str, self.cell_names)))
        membership = np.asarray(self.membership)
        if membership.dtype != np.bool_:
            raise ConstraintSpecError(f"membership must have dtype bool, got {membership.dtype}")
        expected = (len(self.names), membership.shape[1] if membership.ndim == 3 else 0)
        q, k = num_cells(self.partition, self.num_groups, self.num_classes), self.num_classes
        _check_shape("membership", membership, (*expected, q))
        coefficients = _frozen_float(self.coefficients, "coefficients", (*expected, k))
        slack = _frozen_float(self.slack, "slack", expected[:1])
        object.__setattr__(self, "membership", _frozen(membership))
        object.__setattr__(self, "coefficients", coefficients)
        object.__setattr__(self, "slack", slack)
        object.__setattr__(self, "_tensors", {})
        self._check_constraints()

    def _check_constraints(self) -> None:
        if not self.names:
            raise ConstraintSpecError("a constraint set needs at least one constraint")
        if len(set(self.names)) != len(self.names):
            duplicated = sorted({n for n in self.names if self.names.count(n) > 1})
            raise ConstraintSpecError(f"duplicated constraint names: {duplicated}")
        if len(self.cell_names) != self.num_cells:
            raise ConstraintSpecError(
                f"cell_names has {len(self.cell_names)} entries, the partition has "
                f"{self.num_cells} cells"
            )
        for j, name in enumerate(self.names):
            if self.slack[j] < 0:
                raise ConstraintSpecError(f"slack of {name!r} is {self.slack[j]}; must be >= 0")
            used = self.coefficients[j].any(axis=1)
            empty = used & ~self.membership[j].any(axis=1)
            if empty.any():
                raise ConstraintSpecError(
                    f"{name!r}: local dataset {int(np.argmax(empty))} has coefficients but no "
                    "cells (an empty local dataset definition)"
                )
            if not used.any():
                raise ConstraintSpecError(f"{name!r} has no nonzero coefficient")

    @property
    def num_cells(self) -> int:
        """Q, the number of cells of the global partition."""
        return self.membership.shape[2]

    @property
    def num_constraints(self) -> int:
        """J, the number of constraints."""
        return len(self.names)

    def cells(self, y, s):
        """The global-partition cell of each example (int64; numpy or torch like the input).

        ``y`` is ignored (may be None) by the ``"sensitive"`` partition, ``s`` by ``"label"``.
        """
        return cell_index(self.partition, self.num_groups, self.num_classes, y, s)

    def rates(self, probs, cells):
        """Γ_j of eq. (6) on predictions ``probs`` (n, K) or (R, n, K) -> (J,) or (R, J).

        P_k(D_l) is the mean of ``probs[..., k]`` over the examples whose cell is in local
        dataset l; soft (softmax) probabilities give the soft rates of Sec. 2, one-hot
        predictions the hard rates. A local dataset with no example contributes 0 (never NaN)
        and triggers an :class:`EmptyLocalDatasetWarning` naming the constraints concerned.
        """
        p, to_output = _as_float_tensor(probs, "probs", self.num_classes)
        index = _tensor_of(cells, device=p.device)
        if index.shape != p.shape[-2:-1]:
            raise ConstraintSpecError(
                f"cells has shape {tuple(index.shape)}, probs has {p.shape[-2]} examples"
            )
        index = _as_cell_tensor(index, self.num_cells)
        sums = p.new_zeros((*p.shape[:-2], self.num_cells, self.num_classes))
        sums = sums.index_add(-2, index, p)
        counts = torch.bincount(index, minlength=self.num_cells).to(p.dtype)
        local_counts = (self._tensor("membership", p) * counts).sum(-1)
        self._report_empty(local_counts.cpu().numpy() == 0)
        return to_output(self._combine(self._local(sums), local_counts))

    def histogram_rates(self, histogram):
        """Γ^post of eq. (12) from a (noisy) histogram H (Q, K) or (R, Q, K) -> (J,) or (R, J).

        P_k(D_l) is estimated as Σ_{q∈l} H[q, k] / max(Σ_{q∈l} Σ_k' H[q, k'], 1): the
        denominator is guarded at 1 (as in the released code), so an empty or negative noisy count
        never divides by ~0. On the exact histogram of eq. (8) this equals :meth:`rates`.
        """
        h, to_output = _as_float_tensor(histogram, "histogram", self.num_classes)
        local = self._local(h)
        return to_output(self._combine(local, local.sum(-1)))

    def cell_weights(self, multipliers, histogram):
        """Per-cell constraint weights of the primal gradient, eq. (10), as a (Q, K) array
        (or (R, Q, K) for stacked inputs).

        W[q, k] = Σ_j λ_j Σ_{l ∋ q} α_{j,l,k} / max(N̂_{j,l}, 1) with N̂_{j,l} the (noisy) size of
        local dataset l from ``histogram``; an example x in cell q then carries the regulariser
        Σ_k W[q, k] σ(h(θ; x))_k (the per-sample R̂ of Sec. 4.2 up to the constant -λ·γ).
        """
        h, to_output = _as_float_tensor(histogram, "histogram", self.num_classes)
        lam = _tensor_of(multipliers, dtype=h.dtype, device=h.device)
        if lam.shape[-1:] != (self.num_constraints,):
            raise ConstraintSpecError(
                f"multipliers has shape {tuple(lam.shape)}, expected (..., {self.num_constraints})"
            )
        sizes = self._local(h).sum(-1).clamp_min(1.0)
        scaled = self._tensor("coefficients", h) * (lam[..., :, None] / sizes)[..., None]
        membership = self._tensor("membership", h)[..., None]
        return to_output((membership * scaled[..., None, :]).sum(dim=(-4, -3)))

    def _local(self, cell_sums: torch.Tensor) -> torch.Tensor:
        """Per-cell sums (..., Q, K) -> sums over each local dataset (..., J, L, K).

        Every contraction in this class is an elementwise product summed over fixed axes, never
        a BLAS product: with a leading run axis, a run's values then do not depend on how many
        other runs are stacked with it (RaCO-DP's batched training relies on this).
        """
        if cell_sums.shape[-2] != self.num_cells:
            raise ConstraintSpecError(
                f"histogram has {cell_sums.shape[-2]} cells, the partition has {self.num_cells}"
            )
        membership = self._tensor("membership", cell_sums)[..., None]
        return (membership * cell_sums[..., None, None, :, :]).sum(dim=-2)

    def _combine(self, local_sums: torch.Tensor, local_sizes: torch.Tensor) -> torch.Tensor:
        """Σ_l Σ_k α_{j,l,k} local_sums[j, l, k] / max(local_sizes[j, l], 1)."""
        local = local_sums / local_sizes.clamp_min(1.0).unsqueeze(-1)
        return (self._tensor("coefficients", local) * local).sum(dim=(-2, -1))

    def _tensor(self, name: str, like: torch.Tensor) -> torch.Tensor:
        """The read-only array ``name`` (membership or coefficients) as a tensor of ``like``'s
        dtype and device, made once per (dtype, device) and reused: RaCO-DP calls these
        contractions twice a step, and converting the arrays anew cost more than the
        arithmetic. Callers never write to it."""
        key = (name, like.dtype, like.device)
        if key not in self._tensors:
            self._tensors[key] = torch.tensor(getattr(self, name), dtype=like.dtype,
                                              device=like.device)
        return self._tensors[key]

    def _report_empty(self, empty: np.ndarray) -> None:
        empty &= self.membership.any(axis=-1)
        if empty.any():
            names = [self.names[j] for j in np.flatnonzero(empty.any(axis=-1))]
            warnings.warn(
                f"local datasets without examples (their rates count as 0) in: {names}",
                EmptyLocalDatasetWarning,
                stacklevel=3,
            )

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable dict; :meth:`from_dict` inverts it exactly."""
        return {
            "partition": self.partition,
            "num_groups": self.num_groups,
            "num_classes": self.num_classes,
            "names": list(self.names),
            "cell_names": list(self.cell_names),
            "slack": self.slack.tolist(),
            "local_datasets": [
                [np.flatnonzero(row).tolist() for row in rows] for rows in self.membership
            ],
            "coefficients": self.coefficients.tolist(),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RateConstraintSet:
        """Rebuild a set from :meth:`to_dict` output."""
        expected = {f.name for f in fields(cls)} - {"membership"} | {"local_datasets"}
        if set(data) != expected:
            raise ConstraintSpecError(
                f"constraint-set dict has keys {sorted(data)}, expected {sorted(expected)}"
            )
        kwargs = {key: value for key, value in data.items() if key != "local_datasets"}
        q = len(data["cell_names"])
        return cls(membership=membership_from_cells(data["local_datasets"], q), **kwargs)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, RateConstraintSet):
            return NotImplemented
        return all(
            np.array_equal(getattr(self, f.name), getattr(other, f.name)) for f in fields(self)
        )

    __hash__ = None  # type: ignore[assignment]


def membership_from_cells(local_datasets, num_cells: int) -> np.ndarray:
    """The (J, L, Q) membership array from cell-index lists ``local_datasets[j][l]``; L is the
    longest list and shorter constraints are padded with empty rows."""
    width = max((len(rows) for rows in local_datasets), default=0)
    membership = np.zeros((len(local_datasets), width, num_cells), dtype=bool)
    for j, rows in enumerate(local_datasets):
        for local, cells in enumerate(rows):
            for q in cells:
                if not is_int(q) or not 0 <= q < num_cells:
                    raise ConstraintSpecError(
                        f"unknown cell index {q!r} (the partition has {num_cells} cells)"
                    )
            membership[j, local, list(cells)] = True
    return membership


def _frozen(array: np.ndarray) -> np.ndarray:
    array = array.copy()
    array.flags.writeable = False
    return array


def _check_shape(name: str, array: np.ndarray, shape: tuple[int, ...]) -> None:
    if array.shape != shape:
        raise ConstraintSpecError(
            f"{name} has shape {array.shape}, expected {shape} (J constraints, L local datasets, "
            "Q cells / K classes)"
        )


def _frozen_float(values, name: str, shape: tuple[int, ...]) -> np.ndarray:
    try:
        array = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError) as error:
        raise ConstraintSpecError(f"{name} is not numeric: {error}") from error
    _check_shape(name, array, shape)
    if not np.isfinite(array).all():
        raise ConstraintSpecError(f"{name} has non-finite values")
    return _frozen(array)


def _as_float_tensor(values, name: str, num_classes: int):
    """``values`` as a floating torch tensor of shape (..., m, K) with 2 or 3 dims, and the
    function turning a result back into the input's kind (numpy float64 or torch)."""
    if isinstance(values, torch.Tensor):
        tensor = values if values.is_floating_point() else values.to(torch.get_default_dtype())
        to_output = _identity
    else:
        tensor = _tensor_of(np.asarray(values, dtype=np.float64))
        to_output = _to_numpy
    if tensor.ndim not in (2, 3) or tensor.shape[-1] != num_classes:
        raise ConstraintSpecError(
            f"{name} has shape {tuple(tensor.shape)}, expected (m, {num_classes}) or "
            f"(R, m, {num_classes})"
        )
    return tensor, to_output


def _tensor_of(values, **kwargs) -> torch.Tensor:
    """``values`` (tensor or array-like) as a tensor, copying numpy data (which may be
    read-only) rather than sharing it."""
    if isinstance(values, torch.Tensor):
        return values.to(**kwargs)
    return torch.tensor(np.asarray(values), **kwargs)


def _as_cell_tensor(index: torch.Tensor, q: int) -> torch.Tensor:
    if index.dtype.is_floating_point or index.dtype == torch.bool:
        raise ConstraintSpecError(f"cells must be integer, got {index.dtype}")
    index = index.to(torch.int64)
    if len(index) and (int(index.min()) < 0 or int(index.max()) >= q):
        raise ConstraintSpecError(f"cells has values outside [0, {q})")
    return index


def _identity(tensor: torch.Tensor) -> torch.Tensor:
    return tensor


def _to_numpy(tensor: torch.Tensor) -> np.ndarray:
    return tensor.numpy()
