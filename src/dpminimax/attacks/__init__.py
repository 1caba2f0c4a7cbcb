"""Membership-inference attacks and the ceiling that (epsilon, delta)-DP puts on any attack.

The names load their submodule on first use: the DP ceilings are numpy only, and a report job
that draws them (one of hundreds in a grid) should not pay for torch, which the bilevel leak
and the attacks on models import.
"""

from __future__ import annotations

import importlib

#: Public name -> the module that defines it (the DP ceilings live in :mod:`dpminimax.metrics`,
#: below the tasks that evaluate them).
_SUBMODULES = {
    **dict.fromkeys(("leak_settings", "leak_study", "leak_table"),
                    "dpminimax.attacks.bilevel_leak"),
    **dict.fromkeys(("dp_advantage_ceiling", "dp_auc_ceiling", "dp_tpr_ceiling"),
                    "dpminimax.metrics.dp_ceiling"),
    **dict.fromkeys(("attack_roc", "loss_threshold_attack"), "dpminimax.attacks.membership"),
}


def __getattr__(name: str):
    if name in _SUBMODULES:
        return getattr(importlib.import_module(_SUBMODULES[name]), name)
    raise AttributeError(f"module 'dpminimax.attacks' has no attribute {name!r}")


__all__ = sorted(_SUBMODULES)
