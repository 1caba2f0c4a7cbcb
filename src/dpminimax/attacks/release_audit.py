"""An audit of one release of a method's plan (issue #42, item 1 for a single release): Dirac
canaries in that release alone, one invocation, eps_lower beside the release's own epsilon.

The canary audit of :mod:`dpminimax.attacks.canaries` scores the model, so it sees the gradient
release; a bug confined to another release (RaCO-DP's histogram, DP-FERMI's group counts) hides
in it. Here the release is made as the method's program makes it, a
:class:`~dpminimax.privacy.release.BatchedRelease` of the :class:`Release` its plan names (so
:func:`~dpminimax.attacks.canaries.planted` reaches it, ``<release>_noise_over_4`` included),
and fed ``m`` canaries: coordinate ``j`` of the released vector holds the release's sensitivity
if canary ``j`` is included (probability 1/2, as Steinke, Nasr & Jagielski 2023) and 0 if not.
One canary changes one coordinate by the sensitivity, in l1 and l2 alike, so the invocation is
(eps, delta)-DP per canary with the epsilon of the release made once
(:func:`release_epsilon`), and the one-run bound of :mod:`dpminimax.privacy.audit` on the
released coordinates (higher: included) must stay below it. What this isolates is the noise
the release's plan puts on its sum; the program's sum itself (what it adds, and how it clips)
is the canary audit's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import torch

from dpminimax.algorithms import get_method
from dpminimax.algorithms.base import RunSpec
from dpminimax.attacks.canaries import planted
from dpminimax.data import PreparedDataset
from dpminimax.privacy.accounting import accounting_record
from dpminimax.privacy.audit import epsilon_lower_bound
from dpminimax.privacy.release import Batch, BatchedRelease, Release, plan_event, releases_of
from dpminimax.seeding import make_generator


def release_epsilon(release: Release, delta: float, accountant: str = "rdp") -> float:
    """The epsilon of ``release`` made once on the full data (no sampling, no composition)."""
    return float(accounting_record(plan_event(Batch((release,))), delta, accountant)["epsilon"])


def audit_release(method_name: str, data: PreparedDataset, params: Mapping[str, Any],
                  epsilon: float, delta: float, release: str, *, canaries: int = 100_000,
                  seed: int = 0, bug: str | None = None, confidence: float = 0.95
                  ) -> dict[str, Any]:
    """eps_lower of the release named ``release`` in the plan of ``method_name`` on ``data``
    at (epsilon, delta) (``bug`` planted while it is made) beside that release's own epsilon;
    ``detected``: eps_lower above it."""
    method = get_method(method_name)
    run = RunSpec(seed, float(epsilon), float(delta), dict(params))
    plan = method.plan(run, method.sample_size(data, {}), data)
    planned = {r.name: r for r in releases_of(plan.releases)}
    if release not in planned:
        raise ValueError(f"{method_name} makes no release {release!r}; its releases: "
                         f"{sorted(planned)}")
    with planted(bug):
        made = BatchedRelease([planned[release]])
    rng = np.random.default_rng(seed)
    included = rng.random(canaries) < 0.5
    summed = torch.as_tensor(np.where(included, planned[release].sensitivity, 0.0)[None],
                             dtype=torch.float64)
    released = made.perturb(summed, [make_generator(seed, f"audit:{release}", "cpu")])
    claimed = release_epsilon(planned[release], delta, plan.record["accountant"])
    result = epsilon_lower_bound(released[0].numpy(), included, delta, confidence)
    return {"method": method_name, "release": release, "mechanism": planned[release].mechanism,
            "bug": bug or "none", "epsilon_release": claimed,
            "epsilon_lower": result.epsilon_lower, "canaries": canaries,
            "detected": result.epsilon_lower > claimed, "confidence": confidence}
