"""Plain DP-SGD (Abadi et al. 2016) and its non-private twin: the unconstrained baseline."""

from __future__ import annotations

from dpminimax.algorithms.base import Method
from dpminimax.algorithms.baselines.dp_sgd import DpSgd, NonPrivateSgd

METHODS: tuple[type[Method], ...] = (DpSgd, NonPrivateSgd)
