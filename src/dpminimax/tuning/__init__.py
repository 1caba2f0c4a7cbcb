"""The RaCO-DP paper's hyper-parameter tuning protocol (App. E.2), as data and
functions: a search space (:mod:`.search`), per-run checkpoint selection (:mod:`.checkpoint`),
the phase-1 choice of one configuration per cell (:mod:`.selection`) and the batched phase-1 /
phase-2 drivers (:mod:`.protocol`).

Tuning is OUTSIDE the privacy guarantee, as in the paper: the search (phase 1) and the checkpoint
rule (validation accuracy, non-private train-set constraint values) read the data without noise,
and no epsilon we print accounts for them. ``tuning: none`` in the workflow config trains the
fixed hyper-parameters of ``experiments.yaml`` instead.
"""

from dpminimax.tuning.checkpoint import CheckpointSelector
from dpminimax.tuning.search import SearchSpaceError, sample_configs, validate_search_space
from dpminimax.tuning.selection import choose_configs

__all__ = ["CheckpointSelector", "SearchSpaceError", "choose_configs", "sample_configs",
           "validate_search_space"]
