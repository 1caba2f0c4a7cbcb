"""The attack stage of :mod:`dpminimax.api`: membership inference on a training job's models,
the papers' LiRA attacks, one-run privacy audits and the DP bilevel paper's leak attack."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd
import torch

from dpminimax.algorithms import get_method
from dpminimax.api.columns import RUN_COLUMNS
from dpminimax.api.model_io import load_model
from dpminimax.atomic import atomic_path, write_json, write_parquet
from dpminimax.attacks import dp_auc_ceiling, dp_tpr_ceiling, loss_threshold_attack
from dpminimax.data import load_prepared
from dpminimax.data.inputs import split_inputs
from dpminimax.device import default_device
from dpminimax.epsilon import Epsilon

log = logging.getLogger("dpminimax")


def attack(train_dir: str | Path, data_dir: str | Path, out_path: str | Path) -> pd.DataFrame:
    """Loss-threshold membership inference (Yeom et al. 2018) on every run of a training job.

    Members are the training rows, non-members the held-out test rows (same distribution); the
    larger side is subsampled so both have equal size. Beside each attack, the ceiling that the
    run's (epsilon, delta) implies for *any* attack (TPR <= e^eps FPR + delta) is recorded.
    """
    train_dir = Path(train_dir)
    data = load_prepared(data_dir)
    metrics = pd.read_parquet(train_dir / "metrics.parquet")
    task = get_method(str(metrics["method"].iloc[0])).task
    if not task.attacked:
        raise ValueError(f"{train_dir}: its method's task {task.name!r} is not attacked "
                         "(membership inference needs a member set and held-out rows)")
    model, state, run_ids = load_model(train_dir / "model.pt")
    cpu = torch.device("cpu")
    member = model.losses(state, split_inputs(data, "train", cpu), torch.as_tensor(data.y_train))
    nonmember = model.losses(state, split_inputs(data, "test", cpu), torch.as_tensor(data.y_test))
    rows = []
    for r, run_id in enumerate(run_ids):
        info = metrics.loc[metrics["run_id"] == run_id].iloc[0]
        result = loss_threshold_attack(member[r].numpy(), nonmember[r].numpy(), seed=int(r))
        eps, delta = float(info["epsilon_spent"]), float(info["delta"])
        rows.append({
            **{c: info[c] for c in RUN_COLUMNS},
            **result,
            "ceiling_auc": dp_auc_ceiling(eps, delta),
            "ceiling_tpr_at_1pct_fpr": float(dp_tpr_ceiling(0.01, eps, delta)),
        })
    table = pd.DataFrame(rows)
    write_parquet(table, out_path)
    return table


def lira(settings: Mapping[str, Any], data_dir: str | Path, epsilon: str | float,
         metrics_out: str | Path, roc_out: str | Path) -> pd.DataFrame:
    """The paper's LiRA attack (``lira:`` in its experiments.yaml; issue #23) at ``epsilon``:
    every listed method that trains at it, its shadow models as one batched program
    (:mod:`dpminimax.attacks.shadows`); writes the attacks' metrics and ROC curves."""
    from dpminimax.attacks.shadows import lira_tables

    data = load_prepared(data_dir)
    metrics, roc = lira_tables(settings, data, float(Epsilon.parse(epsilon, "lira epsilon")),
                               default_device())
    table = pd.DataFrame(metrics)
    write_parquet(table, metrics_out)
    write_parquet(pd.DataFrame(roc), roc_out)
    return table


def audit(settings: Mapping[str, Any], data_dir: str | Path, csv_out: str | Path,
          figure_out: Sequence[str | Path]) -> pd.DataFrame:
    """The paper's one-run privacy audit (``audit:`` in its experiments.yaml; issues #18, #42):
    every listed private method and its planted-bug controls, then each release of its plan
    alone (column ``release``), their eps_lower beside the claimed epsilon, as a table and a
    figure. Raises if a real method's or release's eps_lower exceeds its claim (a mechanism is
    broken); a gross control the audit misses is a warning (the audit lacks power there,
    column ``detected``); a near-claim control (noise / 2, noise / 4) missed is the audit's
    measured power, reported in the table only."""
    from dpminimax.attacks.bugs import GROSS_BUGS
    from dpminimax.attacks.canaries import audit_table
    from dpminimax.report.attacks.audit import draw_audit

    data = load_prepared(data_dir)
    table = pd.DataFrame(audit_table(settings, data, default_device()))
    with atomic_path(csv_out) as tmp:
        table.to_csv(tmp, index=False)
    draw_audit(table, figure_out)
    real, controls = table[table["bug"] == "none"], table[table["bug"] != "none"]
    missed = controls[~controls["detected"] & controls["bug"].isin(GROSS_BUGS)]
    if len(missed):
        log.warning("the audit did not detect planted bug(s) %s (table: %s)",
                    (missed["method"] + ":" + missed["bug"]).tolist(), csv_out)
    violated = [method if release == "all" else f"{method}: {release}" for method, release
                in real.loc[real["detected"], ["method", "release"]].itertuples(index=False)]
    if violated:
        raise RuntimeError(
            f"privacy audit: eps_lower above the claimed epsilon for "
            f"{violated} at {int(real['confidence'].iloc[0] * 100)}% "
            f"confidence: the mechanism does not have the epsilon it accounts (table: {csv_out})")
    return table


def leak(settings: Mapping[str, Any], csv_out: str | Path, figure_out: Sequence[str | Path],
         claims_out: str | Path) -> pd.DataFrame:
    """The DP bilevel paper's Section 3 leak attack (``leak:`` in its experiments.yaml) on Example
    3.1 at each of its (d, n) settings (:func:`dpminimax.attacks.bilevel_leak.leak_settings`): AUC,
    empirical epsilon and reconstruction error of M0-M3
    (:func:`dpminimax.attacks.bilevel_leak.leak_study`; one row per setting x mechanism x epsilon)
    as one table and one figure (a row of panels per setting), and the values its claims read, per
    setting (``{"claims": {id_d<d>_n<n>: value}}``, like a paper benchmark's)."""
    from dpminimax.attacks.bilevel_leak import leak_settings, leak_study
    from dpminimax.report.bilevel.bilevel_leak import draw_leak, leak_claims

    table = pd.DataFrame(leak_study(settings))
    with atomic_path(csv_out) as tmp:
        table.to_csv(tmp, index=False)
    draw_leak(table, figure_out)
    write_json(claims_out, {"claims": leak_claims(table), "settings": dict(settings),
                            "resolved": leak_settings(settings)})
    return table
