"""Paper-style figures: written atomically as pdf and png, robust to thin tables."""

import math

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest

from dpminimax.report import ResultsTableError
from dpminimax.report.figures import plot_attack_vs_epsilon, plot_metric_vs_epsilon

EPSILONS = (0.5, 1.0, 3.0, 9.0)


@pytest.fixture
def runs():
    rng = np.random.default_rng(0)
    rows = []
    for dataset in ("adult", "credit"):
        for method, base in (("dpfermi", 0.8), ("tran2021a", 0.78), ("dp_sgd", 0.76)):
            for eps in EPSILONS:
                for seed in range(3):
                    rows.append({
                        "dataset": dataset, "method": method, "epsilon": eps, "seed": seed,
                        "test_accuracy": base + 0.02 * np.log(eps) + rng.normal(0, 0.01),
                        "attack_auc": 0.5 + 0.01 * np.log1p(eps) + rng.normal(0, 0.005),
                        "attack_tpr_at_1pct_fpr": 0.01 + abs(rng.normal(0, 0.003)),
                    })
        for seed in range(3):
            rows.append({"dataset": dataset, "method": "dp_sgd_nonprivate", "epsilon": math.inf,
                         "seed": seed, "test_accuracy": 0.85 + rng.normal(0, 0.005),
                         "attack_auc": 0.56, "attack_tpr_at_1pct_fpr": 0.02})
    return pd.DataFrame(rows)


def written(paths):
    return all(p.is_file() and p.stat().st_size > 1000 for p in paths)


def test_metric_figure_pdf_and_png(runs, tmp_path):
    paths = [tmp_path / "acc.pdf", tmp_path / "acc.png"]
    fig = plot_metric_vs_epsilon(runs, "test_accuracy", ylabel="Test accuracy", out_paths=paths,
                                 title="Accuracy")
    assert written(paths)
    assert paths[0].read_bytes().startswith(b"%PDF")
    assert paths[1].read_bytes().startswith(b"\x89PNG")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["acc.pdf", "acc.png"]  # no temp left
    assert [ax.get_title() for ax in fig.axes] == ["adult", "credit"]
    ax = fig.axes[0]
    assert ax.get_xscale() == "log"
    np.testing.assert_allclose(ax.get_xticks(), EPSILONS)
    assert plt.get_fignums() == []  # never registered with pyplot: nothing left open


def test_attack_figure_draws_the_dp_ceiling(runs, tmp_path):
    for metric in ("attack_auc", "attack_tpr_at_1pct_fpr"):
        paths = [tmp_path / f"{metric}.pdf", tmp_path / f"{metric}.png"]
        fig = plot_attack_vs_epsilon(runs, metric=metric, delta=1e-5, out_paths=paths)
        assert written(paths)
        labels = fig.legends[0].get_texts()
        assert any(t.get_text().startswith("(ε, δ)-DP ceiling") for t in labels)
        assert any(t.get_text() == "chance" for t in labels)


def test_single_seed_and_missing_method(runs, tmp_path):
    thin = runs.loc[(runs["seed"] == 0)
                    & ~((runs["dataset"] == "credit") & (runs["method"] == "tran2021a"))]
    paths = [tmp_path / "thin.png"]
    fig = plot_metric_vs_epsilon(thin, "test_accuracy", ylabel="Accuracy", out_paths=paths)
    assert written(paths)
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert legend.count("Tran et al. 2021a") == 1


def test_only_non_private_runs(runs, tmp_path):
    only = runs.loc[runs["method"] == "dp_sgd_nonprivate"]
    plot_attack_vs_epsilon(only, delta=1e-5, out_paths=[tmp_path / "np.png"])
    assert written([tmp_path / "np.png"])


def test_clear_errors(runs, tmp_path):
    with pytest.raises(ResultsTableError, match="eo_violation"):
        plot_metric_vs_epsilon(runs, "eo_violation", ylabel="EO", out_paths=[tmp_path / "x.png"])
    with pytest.raises(ValueError, match="no DP ceiling"):
        plot_attack_vs_epsilon(runs, metric="test_accuracy", delta=1e-5,
                               out_paths=[tmp_path / "x.png"])
    assert not (tmp_path / "x.png").exists()


def test_the_seed_note_is_the_title_of_a_figure_legend_under_the_axes(runs):
    """The note under a figure ("mean over N seeds ...") once overlapped the last row of a
    legend placed under the axes (RaCO-DP's Fig. 9, once saved): with a figure legend it is
    that legend's title, laid out with it; without one, a text under the figure."""
    from dpminimax.report.figures import stamp_seeds

    fig, ax = plt.subplots(layout="constrained")
    for method in ("a", "b", "c"):
        ax.plot([0, 1], [0, 1], label=f"method {method}")
    legend = fig.legend(loc="outside lower center", ncols=2, frameon=False)
    texts = len(fig.texts)
    stamp_seeds(fig, runs)
    assert legend.get_title().get_text().startswith("mean over 3 seed(s) per point")
    assert len(fig.texts) == texts
    plt.close(fig)
    bare, _ = plt.subplots(layout="constrained")
    stamp_seeds(bare, runs)
    assert bare.texts[-1].get_text().startswith("mean over 3 seed(s) per point")
    plt.close(bare)
