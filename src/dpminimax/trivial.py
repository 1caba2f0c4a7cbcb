"""The runs-table convention for trivial baselines (issue 36 item 2).

Every task writes, in the same row as each run, ``trivial_<metric>`` for each of its utility
metrics: the same metric of the task's data-independent output on the same instance and seed
(a ratio ``<metric>_over_bound`` becomes the trivial error over the same bound), and
``trivial_output``, what that output is in words (the figures' label: "trivial: x = 0").
A classification run also says whether it is better than its trivial output at all
(:data:`BELOW_MAJORITY`, issue 38 item 4); the figures draw such runs hollow. No
torch or pandas here: the tasks and the report both read it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

PREFIX = "trivial_"
#: The column naming a task's trivial output (e.g. "x = 0", "majority class").
OUTPUT = "trivial_output"
#: A classification run whose test accuracy is not shown better than the majority-class
#: predictor's (:func:`dpminimax.metrics.majority_gain_lower_bound` <= 0) ...
BELOW_MAJORITY = "below_majority"
#: ... and that lower bound.
MAJORITY_GAIN_LOW = "majority_gain_low"


def column(metric: str) -> str:
    """The runs-table column of ``metric``'s trivial baseline."""
    return PREFIX + metric


def prefixed(values: Mapping[str, Any]) -> dict[str, Any]:
    """``values`` (metric -> value of the trivial output) as trivial columns."""
    return {column(metric): value for metric, value in values.items()}
