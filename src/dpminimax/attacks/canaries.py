"""The one-run audit of a method (issue #18; Steinke, Nasr & Jagielski 2023): input-space
canaries, one training run, eps_lower from :mod:`dpminimax.privacy.audit`.

Canary j is the row ``norm * e_(d + j)`` in its own new feature column (every real row is 0
there), label 1, a random group; each is included with probability 1/2. Only canary j moves the
weights of column j, so after training its log-odds have moved if it was included and differ from
an untouched column's by noise alone if not (:func:`canary_scores`; both scorings are tried,
Bonferroni-corrected). ``norm`` (10 by default) exceeds the clip norm, so a clipped canary
contributes its clip norm (all but 1/norm^2 of it in its own column), yet stays small enough that
its log-odds do not saturate: with norm 1000 the noise drives most canary logits past 20, where
the loss gradient (1 - p) * norm vanishes and the canary contributes nothing.

The mechanism is planned on a fixed n (``meta["planned_size"]``: the training rows plus half the
canaries), so its q, T and sigma do not depend on which canaries were drawn in, as the bound
assumes (Steinke et al. 2023, Thm. 3.1: the mechanism is fixed before the inclusion draw).

Controls (:func:`.bugs.planted`) run the same method with a planted bug in every release. The
gross ones (:data:`.bugs.GROSS_BUGS`: noise off, noise divided by the expected batch size,
clipping removed) must be detected (eps_lower above the claimed epsilon) while every real method
stays below; the near-claim ones (:data:`.bugs.NEAR_CLAIM_BUGS`: noise / 2, noise / 4) measure
the audit's power, with the true epsilon of the broken mechanism (``epsilon_true``) beside what
the audit saw. A paper's audit table (:func:`audit_table`) adds the audit of each release of the
same plan on its own (:mod:`dpminimax.attacks.release_audit`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import torch

from dpminimax.algorithms import METHODS, get_method
from dpminimax.algorithms.base import RunSpec, require_binary_labels
from dpminimax.attacks.bugs import NEAR_CLAIM_BUGS, PLANTED_BUGS, planted
from dpminimax.attacks.release_audit import RELEASE_CANARIES, release_audit_rows
from dpminimax.data import PreparedDataset
from dpminimax.epsilon import Epsilon
from dpminimax.privacy.accounting import accounting_record
from dpminimax.privacy.audit import epsilon_lower_bound
from dpminimax.privacy.release import Batch, Part, plan_event

#: The canary norm of the ``clipping_removed`` control: far above any clip norm, so that an
#: unclipped canary contributes about a hundred times a clipped one.
UNCLIPPED_NORM = 1000.0


@dataclass(frozen=True)
class Canaries:
    """A training set with canaries: ``data`` (the included canaries appended to the training
    rows, every row padded with the canary columns), every canary's ``inputs`` (m, d + m) and
    ``labels``, and which were ``included``."""

    data: PreparedDataset
    inputs: np.ndarray
    labels: np.ndarray
    included: np.ndarray


def with_canaries(data: PreparedDataset, count: int, norm: float, seed: int) -> Canaries:
    """``data`` plus ``count`` canaries (module docstring), inclusion drawn from ``seed``; the
    methods plan on ``len(data.y_train) + count // 2`` rows whatever was drawn."""
    require_binary_labels(data, "the canary audit")
    if count < 2:
        raise ValueError(f"the audit needs at least 2 canaries, got {count}")
    rng = np.random.default_rng(seed)
    inputs, labels, groups = canary_rows(data, count, norm, rng)
    included = rng.random(count) < 0.5
    audited = appended(data, inputs[included], labels[included], groups[included],
                       canaries_included=int(included.sum()),
                       planned_size=planned_size(data, count))
    return Canaries(audited, inputs, labels, included)


def canary_rows(data: PreparedDataset, count: int, norm: float, rng: np.random.Generator
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(inputs (count, d + count), labels, groups)`` of ``count`` canaries: canary j is
    ``norm * e_(d + j)``, label 1, a group drawn from ``rng``."""
    d = data.x_train.shape[1]
    inputs = np.zeros((count, d + count), dtype=np.float32)
    inputs[np.arange(count), d + np.arange(count)] = norm
    return inputs, np.ones(count, dtype=np.int64), rng.integers(0, len(data.group_names), count)


def appended(data: PreparedDataset, inputs: np.ndarray, labels: np.ndarray,
             groups: np.ndarray, **meta: Any) -> PreparedDataset:
    """``data`` with the canary rows ``inputs`` appended to its training rows, every row padded
    with the canary columns (``meta`` added to its meta)."""
    count = inputs.shape[1] - data.x_train.shape[1]

    def pad(x: np.ndarray) -> np.ndarray:
        return np.hstack([x, np.zeros((len(x), count), dtype=np.float32)])

    return replace(
        data, name=f"{data.name}+canaries",
        x_train=np.vstack([pad(data.x_train), inputs]),
        y_train=np.concatenate([data.y_train, labels]),
        s_train=np.concatenate([data.s_train, groups]),
        x_test=pad(data.x_test),
        feature_names=[*data.feature_names, *(f"canary_{j}" for j in range(count))],
        meta={**data.meta, "canaries": count, **meta})


def planned_size(data: PreparedDataset, count: int) -> int:
    """The n an audit with ``count`` canaries plans on: the training rows plus half of them
    (what is drawn in on average), whichever were drawn."""
    return len(data.y_train) + count // 2


def canary_scores(fit, inputs: np.ndarray, device: torch.device) -> np.ndarray:
    """Two scorings (2, m) of how far training moved each canary's log-odds from an untouched
    column's (a zero row: only the bias), ``shift = odds(canary) - odds(0)`` with ``odds =
    loss(y=0) - loss(y=1)``: the shift itself (descent on label 1 raises it) and its size (a
    fairness penalty can push an included canary's weight either way)."""
    rows = torch.as_tensor(np.vstack([inputs, np.zeros((1, inputs.shape[1]), np.float32)]),
                           device=device)

    def losses(label: int) -> torch.Tensor:
        labels = torch.full((len(rows),), label, dtype=torch.int64, device=device)
        return fit.model.losses(fit.state, rows, labels)[0].double()

    odds = losses(0) - losses(1)
    shift = (odds[:-1] - odds[-1]).cpu().numpy()
    return np.stack([shift, np.abs(shift)])


def auditable_methods() -> list[str]:
    """The private methods that train on a prepared dataset, which canaries can be put in."""
    return sorted(name for name, cls in METHODS.items()
                  if cls.private and not cls.task.draws_data)


def audit_method(method_name: str, data: PreparedDataset, params: Mapping[str, Any],
                 epsilon: float, delta: float, *, canaries: int = 1000, norm: float = 10.0,
                 seed: int = 0, bug: str | None = None, confidence: float = 0.95,
                 device: torch.device | str = "cpu") -> dict[str, Any]:
    """Train ``method_name`` once on ``data`` with canaries (``bug`` planted, if given) and
    return its claimed epsilon beside the audit's eps_lower (and, for a near-claim bug, the
    broken mechanism's true epsilon). The ``clipping_removed`` control uses canaries of norm
    :data:`UNCLIPPED_NORM` at least: a missing clip is only visible on a large canary."""
    method = get_method(method_name)
    if not method.private:
        raise ValueError(f"method {method_name!r} is not private: nothing to audit")
    if method.task.draws_data:
        raise ValueError(
            f"method {method_name!r} trains on a problem it draws itself (task "
            f"{method.task.name}), not on a dataset: the canary audit runs the methods that "
            f"train on prepared data: {', '.join(auditable_methods())}")
    if bug == "clipping_removed":
        norm = max(norm, UNCLIPPED_NORM)
    audited = with_canaries(data, canaries, norm, seed)
    run = RunSpec(seed, epsilon, delta, dict(params))
    n = audited.data.meta["planned_size"]
    plan = method.plan(run, n, audited.data)
    batch = float(plan.values.get("sampling_rate") or 1.0) * n  # noise_over_batch's divisor
    device = torch.device(device)
    with planted(bug, batch):
        fit = method.fit(audited.data, [run], device)
    scores = canary_scores(fit, audited.inputs, device)
    result = epsilon_lower_bound(scores, audited.included, delta, confidence)
    claimed = float(fit.accounting[0]["epsilon"])
    true = (float(accounting_record(plan_event(noise_divided(plan.releases,
                                                             NEAR_CLAIM_BUGS[bug])), delta,
                                    plan.record["accountant"])["epsilon"])
            if bug in NEAR_CLAIM_BUGS else (claimed if bug is None else math.inf))
    return {"method": method_name, "bug": bug or "none", "epsilon_claimed": claimed,
            "epsilon_true": true,
            "epsilon_lower": result.epsilon_lower, "confidence": result.confidence,
            "canaries": result.canaries, "guesses": result.guesses, "correct": result.correct,
            "detected": result.epsilon_lower > claimed, "delta": delta, "seed": seed,
            "canary_norm": norm, "neighboring_relation": fit.accounting[0].get(
                "neighboring_relation")}


def noise_divided(part: Part, factor: float) -> Part:
    """``part`` with every release's noise multiplier divided by ``factor`` (what a
    near-claim planted bug releases)."""
    if isinstance(part, Batch):
        return replace(part, releases=tuple(
            replace(r, noise_multiplier=r.noise_multiplier / factor) for r in part.releases))
    return replace(part, parts=tuple(noise_divided(sub, factor) for sub in part.parts))


def audit_table(settings: Mapping[str, Any], data: PreparedDataset,
                device: torch.device | str = "cpu") -> list[dict[str, Any]]:
    """The audit of a paper (``audit:`` in its experiments.yaml): every method of
    ``settings["methods"]`` ({name: params}) at ``epsilon`` and ``delta``, on the first
    ``max_rows`` training rows, first as it is and then with each of ``controls`` planted
    (``release`` ``"all"``: the trained model, every release at once;
    ``smallest_detected_epsilon`` is the smallest true epsilon of a near-claim control the
    audit detected for the method, inf: none), then each release of the same plan on its own
    with ``release_canaries`` Dirac canaries
    (:func:`~dpminimax.attacks.release_audit.release_audit_rows`)."""

    rows = settings.get("max_rows")
    if rows is not None:
        data = replace(data, x_train=data.x_train[:rows], y_train=data.y_train[:rows],
                       s_train=data.s_train[:rows])
    canaries = int(settings.get("canaries", 1000))
    epsilon = float(Epsilon.parse(settings["epsilon"], "audit.epsilon"))
    delta, seed = float(settings["delta"]), int(settings.get("seed", 0))
    # the releases audited are those of the plan the canary audit trains with
    planned = replace(data, meta={**data.meta, "planned_size": planned_size(data, canaries)})
    table = []
    for name, params in settings["methods"].items():
        rows = [audit_method(
            name, data, params or {}, epsilon, delta, canaries=canaries,
            norm=float(settings.get("canary_norm", 10.0)), seed=seed, bug=bug, device=device)
            for bug in (None, *settings.get("controls", PLANTED_BUGS))]
        smallest = min((row["epsilon_true"] for row in rows
                        if row["detected"] and row["bug"] in NEAR_CLAIM_BUGS), default=math.inf)
        table.extend({"method": name, "release": "all", **row,
                      "smallest_detected_epsilon": smallest} for row in rows)
        table.extend(release_audit_rows(
            name, planned, params or {}, epsilon, delta, seed=seed,
            canaries=int(settings.get("release_canaries", RELEASE_CANARIES))))
    return table
