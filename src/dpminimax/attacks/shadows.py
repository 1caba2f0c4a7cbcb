"""LiRA against a method (issue #23): its shadow models as runs of one batched program.

``shadows`` runs of the method, each on its own member set of a pool of training rows (each row
in independently with probability 1/2, or a fixed half: :mod:`dpminimax.kernels.membership`),
are trained as one batched program at the privacy target;
every model's per-example losses on the whole pool and the membership matrix then give the
leave-one-out evaluation of Carlini et al. (2022, Sec. V-A): each model in turn is the target
and the others its shadows. Four attacks score the same models: LiRA online and offline
(:mod:`dpminimax.attacks.lira`; with one global variance per side below 64 shadows, their Sec.
VI-B), RMIA (:mod:`dpminimax.attacks.rmia`; the others as its reference models) and the
loss-threshold baseline (Yeom et al. 2018: the target's own loss). Members and
non-members come from the same pool, so they have the same label mix by construction.

The ceilings any attack must stay under are those of the neighbouring relation between an IN
and an OUT model (:data:`RELATIONS`, :func:`~dpminimax.metrics.dp_ceiling.relation_privacy`):
adding a row (independent membership, the default) keeps the accounted (epsilon, delta);
replacing one (fixed-size sets) gives (2 epsilon, (1 + e^epsilon) delta).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np
import torch

from dpminimax.algorithms import get_method
from dpminimax.algorithms.base import RunSpec
from dpminimax.attacks.bugs import planted
from dpminimax.attacks.canaries import appended, canary_rows
from dpminimax.attacks.lira import attack_metrics, leave_one_out_scores
from dpminimax.attacks.rmia import rmia_scores
from dpminimax.data import PreparedDataset
from dpminimax.data.inputs import split_inputs
from dpminimax.epsilon import NON_PRIVATE, Epsilon
from dpminimax.kernels.membership import (
    FIXED_SIZE,
    INDEPENDENT,
    membership_matrix,
    shadow_membership,
)
from dpminimax.metrics.classification import roc_curve
from dpminimax.metrics.dp_ceiling import dp_auc_ceiling, dp_tpr_ceiling, relation_privacy

#: The attacks each evaluation reports, strongest first.
ATTACKS = ("lira_online", "lira_offline", "rmia", "loss_threshold")
#: The false-positive rates the ROC is kept at (log-spaced: the figure's log-log axes).
ROC_FPRS = np.logspace(-4, 0, 81)
#: The planted control trained beside each private method at a block's smallest epsilon:
#: the same plan and clipping with the noise off (:func:`~dpminimax.attacks.bugs.planted`),
#: so the table shows what the attack sees of the same mechanism without privacy.
CONTROL = "noise_off"
#: Below this many shadows LiRA fits one variance per side (Carlini et al. Sec. VI-B).
FIXED_VARIANCE_BELOW = 64
#: The norm of the pool's planted outliers (as the one-run audit's canaries: above any clip
#: norm, below saturation).
CANARY_NORM = 10.0


def pool_of(data: PreparedDataset, max_rows: int | None, membership: str = INDEPENDENT,
            canaries: int = 0, norm: float = CANARY_NORM, seed: int = 0) -> PreparedDataset:
    """The attack's pool: the first ``max_rows`` training rows (all when None), then
    ``canaries`` planted outliers (:func:`~dpminimax.attacks.canaries.canary_rows`: each alone
    in a feature column of its own, at ``norm``; groups drawn from ``seed``), its shadows
    drawing their members, rows and canaries alike, by ``membership``."""
    rows = len(data.y_train) if max_rows is None else min(max_rows, len(data.y_train))
    pool = replace(data, x_train=data.x_train[:rows], y_train=data.y_train[:rows],
                   s_train=data.s_train[:rows],
                   meta={**data.meta, "shadow_membership": membership})
    if not canaries:
        return pool
    return appended(pool, *canary_rows(pool, canaries, norm, np.random.default_rng(seed)))


#: The relation between an IN and an OUT model's member sets: one row added where rows join
#: independently, one row replaced in sets of a fixed size.
RELATIONS = {INDEPENDENT: "add_or_remove_one", FIXED_SIZE: "replace_one"}


def shadow_losses(method_name: str, pool: PreparedDataset, params: Mapping[str, Any],
                  epsilon: float, delta: float, shadows: int, *, seed: int = 0,
                  bug: str | None = None, device: torch.device | str = "cpu"
                  ) -> tuple[np.ndarray, np.ndarray, list[dict]]:
    """Train ``shadows`` runs of the method (shadow s: seed ``seed + s``) as one batched program
    on the pool (its members drawn by its ``meta["shadow_membership"]``; ``bug``: a planted
    control, :func:`~dpminimax.attacks.bugs.planted`) and return ``(losses (M, N),
    members (M, N), accounting records)``."""
    if shadows < 2:
        raise ValueError(f"LiRA needs at least 2 shadow models, got {shadows}")
    method = get_method(method_name)
    runs = [RunSpec(seed + s, float(epsilon), float(delta), dict(params), shadow=s)
            for s in range(shadows)]
    device = torch.device(device)
    batch = 1.0
    if bug == "noise_over_batch":  # the expected batch size of the plan
        plan = method.plan_runs(pool, runs[:1])[2][0]
        batch = float(plan.values.get("sampling_rate") or 1.0) * len(pool.y_train) / 2
    with planted(bug, batch):
        fit = method.fit(pool, runs, device)
    inputs = split_inputs(pool, "train", device)
    with torch.no_grad():
        losses = fit.model.losses(fit.state, inputs, torch.as_tensor(pool.y_train,
                                                                      device=device))
    members = membership_matrix([run.shadow for run in runs], len(pool.y_train),
                                shadow_membership(pool.meta))
    return losses.double().cpu().numpy(), members, fit.accounting


def attack_scores(losses: np.ndarray, members: np.ndarray) -> dict[str, np.ndarray]:
    """Each attack's leave-one-out scores (M, N) (higher: more likely a member)."""
    fixed = losses.shape[0] < FIXED_VARIANCE_BELOW
    online, _ = leave_one_out_scores(losses, members, online=True, fixed_variance=fixed)
    offline, _ = leave_one_out_scores(losses, members, online=False, fixed_variance=fixed)
    return {"lira_online": online, "lira_offline": offline, "rmia": rmia_scores(losses),
            "loss_threshold": -losses}


def evaluate(losses: np.ndarray, members: np.ndarray, epsilon: float, delta: float,
             confidence: float = 0.95, canaries: int = 0) -> tuple[list[dict], list[dict]]:
    """``(metric rows, ROC rows)`` of every attack on the models' ``losses`` (M, N): AUC, TPR
    at the checked FPRs with bounds clustered over targets and rows and the epsilon they prove,
    one Bonferroni family at ``confidence`` (:func:`~dpminimax.attacks.lira.attack_metrics`),
    and beside them the ceilings (epsilon, delta)-DP puts on any attack; ``targets`` ``rows``
    (the data rows; the ROC is theirs) and, when the last ``canaries`` columns are planted
    outliers, ``canaries`` (those alone, one family of their own)."""
    metrics, curves = [], []
    ceiling = {"ceiling_auc": float(dp_auc_ceiling(epsilon, delta)),
               "ceiling_tpr_at_0.1pct": float(dp_tpr_ceiling(1e-3, epsilon, delta)),
               "ceiling_tpr_at_1pct": float(dp_tpr_ceiling(1e-2, epsilon, delta))}
    rows = losses.shape[1] - canaries
    for attack, all_scores in attack_scores(losses, members).items():
        for targets, part in (("rows", slice(0, rows)), ("canaries", slice(rows, None))):
            if targets == "rows" or canaries:
                metrics.append({"attack": attack, "targets": targets, **attack_metrics(
                    all_scores[:, part], members[:, part], delta=delta,
                    confidence=confidence), **ceiling})
        scores = all_scores[:, :rows]
        fpr, tpr, _ = roc_curve(scores.ravel(), members[:, :rows].ravel())
        for f, t in zip(ROC_FPRS, np.interp(ROC_FPRS, fpr, tpr), strict=True):
            curves.append({"attack": attack, "fpr": float(f), "tpr": float(t),
                           "ceiling_tpr": float(dp_tpr_ceiling(f, epsilon, delta))})
    return metrics, curves


def lira_tables(settings: Mapping[str, Any], data: PreparedDataset, epsilon: float,
                device: torch.device | str = "cpu") -> tuple[list[dict], list[dict]]:
    """A paper's ``lira:`` block at one ``epsilon``: every listed method that trains at it
    (private methods at finite epsilon, non-private ones at inf) with ``shadows`` shadow
    models on the pool (``membership``: how they draw their members, independent by default);
    ``(metric rows, ROC rows)`` tagged with the method and epsilon. The ceilings and the
    epsilon lower bound are for the relation between IN and OUT models (:data:`RELATIONS`;
    :func:`~dpminimax.metrics.dp_ceiling.relation_privacy` of the epsilon spent:
    ``epsilon_ceiling``, ``delta_ceiling``, ``relation``); an accountant certifying another
    relation than add/remove is refused. At the block's smallest private epsilon each private
    method also trains its :data:`CONTROL` (method ``"<name> [noise off]"``, ``control``
    ``"noise_off"``; the real rows' ``control`` is ``"none"``), under the ceiling of the epsilon
    its plan claims."""
    membership = settings.get("membership", INDEPENDENT)
    canaries = int(settings.get("canaries", 0))
    pool = pool_of(data, settings.get("max_rows"), membership, canaries,
                   float(settings.get("canary_norm", CANARY_NORM)), int(settings.get("seed", 0)))
    shadows, delta = int(settings["shadows"]), float(settings["delta"])
    metrics: list[dict] = []
    curves: list[dict] = []
    smallest = float(min(Epsilon.parse(eps, "lira.epsilons") for eps in settings["epsilons"]))
    for name, bug in [(name, bug) for name in trains_at(settings["methods"], epsilon)
                      for bug in (None, CONTROL)
                      if bug is None or (get_method(name).private and epsilon == smallest)]:
        losses, members, accounting = shadow_losses(
            name, pool, settings["methods"][name] or {}, epsilon, delta, shadows,
            seed=int(settings.get("seed", 0)), bug=bug, device=device)
        relations = {record["neighboring_relation"] for record in accounting}
        if relations != {"add_or_remove_one"}:
            raise ValueError(f"lira: {name} accounts under {sorted(relations)}; the ceilings "
                             "are derived from add/remove guarantees")
        spent = max(float(record["epsilon"]) for record in accounting)
        ceiling = relation_privacy(RELATIONS[membership], spent, delta)
        tags = {"method": name if bug is None else f"{name} [noise off]",
                "control": bug or "none", "epsilon": epsilon, "epsilon_spent": spent,
                "delta": delta,
                "relation": RELATIONS[membership], "epsilon_ceiling": ceiling[0],
                "delta_ceiling": ceiling[1],
                "shadows": shadows, "pool": len(pool.y_train) - canaries,
                "canaries": canaries, "dataset": data.name}
        rows, roc = evaluate(losses, members, *ceiling, canaries=canaries)
        metrics += [{**tags, **row} for row in rows]
        curves += [{**tags, **row} for row in roc]
    return metrics, curves


def lira_epsilons(settings: Mapping[str, Any]) -> list[str]:
    """The labels of the epsilons a ``lira:`` block trains at (``"1"``, ``"inf"``): its private
    targets, and ``inf`` when it lists a non-private method. Refuses unknown and
    non-shadowable methods, naming them."""
    for name in settings["methods"]:
        method = get_method(name)  # raises for an unknown name, listing the known ones
        if not method.shadowable:
            raise ValueError(f"lira: method {name!r} cannot train shadow models "
                             "(shadowable = False)")
    epsilons = [eps for eps in (Epsilon.parse(value, "lira.epsilons")
                                for value in settings["epsilons"]) if eps.is_private]
    if any(not get_method(name).private for name in settings["methods"]):
        epsilons.append(NON_PRIVATE)
    return [str(eps) for eps in epsilons]


def trains_at(methods: Sequence[str], epsilon: float) -> list[str]:
    """The methods of ``methods`` that train at ``epsilon`` (private ones at a finite target,
    non-private ones at inf)."""
    private = not np.isinf(epsilon)
    return [name for name in methods if get_method(name).private == private]
