"""The LiRA figure and table: written as pdf and png for thin tables, ceilings flagged, sorted."""

import math

import matplotlib
import numpy as np
import pandas as pd
import pytest

from dpminimax.metrics.dp_ceiling import (
    dp_auc_ceiling,
    dp_tpr_ceiling,
    relation_privacy,
    replace_one,
)
from dpminimax.report.attacks.lira import ATTACK_ORDER, draw_lira, lira_summary

matplotlib.use("Agg")

DELTA = 1e-5
FPRS = np.logspace(-4, 0, 81)


def tables(methods=("dp_sgd", "racodp"), epsilons=(1.0, 8.0, math.inf),
           neighbours="add_or_remove_one"):
    """Synthetic metrics and ROC tables shaped like :func:`attacks.shadows.lira_tables`."""
    metrics, roc = [], []
    for method in methods:
        for eps in epsilons:
            spent = eps * 0.97 if np.isfinite(eps) else eps
            relation = relation_privacy(neighbours, spent, DELTA)
            tags = {"method": method, "epsilon": eps, "epsilon_spent": spent, "delta": DELTA,
                    "shadows": 16, "pool": 2000, "dataset": "adult", "relation": neighbours,
                    "control": "none", "canaries": 32,
                    "epsilon_ceiling": relation[0], "delta_ceiling": relation[1]}
            ceiling = {"ceiling_auc": dp_auc_ceiling(*relation),
                       "ceiling_tpr_at_0.1pct": dp_tpr_ceiling(1e-3, *relation),
                       "ceiling_tpr_at_1pct": dp_tpr_ceiling(1e-2, *relation)}
            for k, attack in enumerate(ATTACK_ORDER):
                share = 0.5 / (k + 1)  # of the way from chance to the ceiling
                tpr = FPRS + share * (dp_tpr_ceiling(FPRS, *relation) - FPRS)
                at = {"0.1pct": tpr[np.isclose(FPRS, 1e-3)][0],
                      "1pct": tpr[np.isclose(FPRS, 1e-2)][0]}
                metrics.append({**tags, "attack": attack, "targets": "rows",
                                "auc": 0.5 + share * (ceiling["ceiling_auc"] - 0.5),
                                **{f"tpr_at_{f}{end}": t * scale for f, t in at.items()
                                   for end, scale in (("", 1.0), ("_low", 0.5),
                                                      ("_high", 1.2))},
                                **{f"tpr_at_{f}_fpr_high": float(f.removesuffix("pct")) / 100
                                   for f in at},
                                "n_members": 16000, "n_nonmembers": 16000,
                                "epsilon_lower": 0.0, **ceiling})
                roc += [{**tags, "attack": attack, "fpr": f, "tpr": t,
                         "ceiling_tpr": dp_tpr_ceiling(f, *relation)}
                        for f, t in zip(FPRS, tpr, strict=True)]
    return pd.DataFrame(metrics), pd.DataFrame(roc)


def test_figure_pdf_and_png(tmp_path):
    paths = [tmp_path / "lira.pdf", tmp_path / "lira.png"]
    draw_lira(*tables(), paths)
    assert paths[0].read_bytes().startswith(b"%PDF")
    assert paths[1].read_bytes().startswith(b"\x89PNG")
    assert all(p.stat().st_size > 1000 for p in paths)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["lira.pdf", "lira.png"]  # no temp


@pytest.mark.parametrize("select", [
    {"methods": ("dp_sgd",), "epsilons": (1.0,)},
    {"epsilons": (math.inf,)},
    {"methods": ("dp_sgd", "dp_sgd [noise off]"), "epsilons": (1.0, 8.0)},
], ids=["one-method-one-epsilon", "non-private-only", "with-a-control"])
def test_figure_thin_tables(tmp_path, select):
    path = tmp_path / "lira.png"
    draw_lira(*tables(**select), [path])
    assert path.read_bytes().startswith(b"\x89PNG") and path.stat().st_size > 1000


def test_summary_flags_a_tpr_interval_above_the_ceiling():
    metrics, _ = tables(epsilons=(1.0,))
    planted = (metrics["method"] == "racodp") & (metrics["attack"] == "lira_online")
    metrics.loc[planted, "tpr_at_1pct_low"] = metrics.loc[planted, "ceiling_tpr_at_1pct"] + 1e-3
    summary = lira_summary(metrics)
    flagged = summary.loc[summary["above_ceiling"], ["method", "attack"]]
    assert flagged.to_dict("records") == [{"method": "racodp", "attack": "lira_online"}]
    # above the ceiling at 1% FPR, not at the upper end of the FPR's interval: no flag
    metrics.loc[planted, "tpr_at_1pct_fpr_high"] = 0.02
    assert not lira_summary(metrics)["above_ceiling"].any()
    # the point estimate above the ceiling, its interval's lower end not: no flag
    metrics.loc[planted, "tpr_at_1pct_fpr_high"] = 0.01
    metrics.loc[planted, "tpr_at_1pct_low"] = 0.0
    metrics.loc[planted, "tpr_at_1pct"] = 1.0
    assert not lira_summary(metrics)["above_ceiling"].any()


@pytest.mark.parametrize(("neighbours", "allowed", "flagged"),
                         [("add_or_remove_one", 0.9, 1.0), ("replace_one", 1.5, 2.0)])
def test_summary_flags_an_epsilon_lower_bound_above_the_relations_epsilon(neighbours, allowed,
                                                                          flagged):
    """Spent 0.97 (add/remove): with independent membership IN and OUT differ by an added row,
    so 1.0 is a violation; with fixed-size shadows by a replaced row, so 1.5 is none (replace-one
    epsilon 1.94) and 2.0 is."""
    metrics, _ = tables(epsilons=(1.0, math.inf), neighbours=neighbours)
    planted = (metrics["method"] == "dp_sgd") & (metrics["attack"] == "loss_threshold")
    metrics.loc[planted, "epsilon_lower"] = allowed
    assert not lira_summary(metrics)["above_ceiling"].any()
    metrics.loc[planted, "epsilon_lower"] = flagged
    summary = lira_summary(metrics)
    flagged = summary.loc[summary["above_ceiling"], ["method", "epsilon", "attack"]]
    assert flagged.to_dict("records") == [
        {"method": "dp_sgd", "epsilon": 1.0, "attack": "loss_threshold"}]  # not at inf


def test_summary_order_and_columns():
    metrics, _ = tables(epsilons=(math.inf, 8.0, 1.0))
    summary = lira_summary(metrics.sample(frac=1.0, random_state=0))
    assert list(summary.columns[:7]) == ["dataset", "method", "control", "epsilon",
                                         "epsilon_spent", "attack", "targets"]
    assert {"tpr_at_0.1pct_low", "tpr_at_1pct_high", "shadows", "pool", "canaries"} <= set(
        summary)
    assert "n_members" not in summary
    keys = list(zip(summary["method"], summary["epsilon"], summary["attack"], strict=True))
    assert keys == [(m, e, a) for m in ("dp_sgd", "racodp") for e in (1.0, 8.0, math.inf)
                    for a in ATTACK_ORDER]
    both = lira_summary(pd.concat([metrics.assign(targets="canaries"), metrics]))
    assert both["targets"].tolist()[:2 * len(ATTACK_ORDER)] == ["rows"] * len(ATTACK_ORDER) \
        + ["canaries"] * len(ATTACK_ORDER)  # per method and epsilon: the data rows first


def test_replace_one_is_two_add_remove_steps():
    """(eps, delta) add/remove gives (2 eps, (1 + e^eps) delta) for a replaced row; no privacy
    stays none."""
    eps, delta = replace_one(1.0, 1e-5)
    assert eps == 2.0 and delta == pytest.approx((1 + math.e) * 1e-5)
    assert replace_one(math.inf, 1e-5) == (math.inf, 1e-5)
    assert replace_one(np.array([0.5, 3.0]), 1e-5)[0].tolist() == [1.0, 6.0]
    assert relation_privacy("add_or_remove_one", 1.0, 1e-5) == (1.0, 1e-5)
    assert relation_privacy("replace_one", 1.0, 1e-5) == replace_one(1.0, 1e-5)
    with pytest.raises(ValueError, match="relation"):
        relation_privacy("replace_special", 1.0, 1e-5)


def test_the_report_warns_when_no_attack_sees_a_control_on_the_canaries(tmp_path, caplog):
    """A noise-off control flagged on the planted canaries is the attack seeing the leak (no
    warning); one no attack flags there is a warning naming it."""
    from dpminimax import api

    metrics, roc = tables(methods=("dp_sgd",), epsilons=(1.0,))
    canaries = metrics.assign(targets="canaries")
    control = pd.concat([metrics, canaries]).assign(method="dp_sgd [noise off]",
                                                    control="noise_off")
    paths = [tmp_path / name for name in ("metrics.parquet", "roc.parquet")]
    pd.concat([metrics, canaries, control]).to_parquet(paths[0])
    roc.to_parquet(paths[1])
    api.make_lira_report([paths[0]], [paths[1]], tmp_path / "lira.csv", [tmp_path / "l.png"])
    assert "did not see the leak" in caplog.text and "dp_sgd [noise off]@1.0" in caplog.text
    caplog.clear()
    control.loc[control["targets"] == "canaries", "epsilon_lower"] = 5.0  # seen
    pd.concat([metrics, canaries, control]).to_parquet(paths[0])
    api.make_lira_report([paths[0]], [paths[1]], tmp_path / "lira.csv", [tmp_path / "l.png"])
    assert "did not see the leak" not in caplog.text
