"""The api functions the workflow calls, chained in one process on synthetic data."""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest

from dpminimax import api


@pytest.fixture(scope="module")
def pipeline(tmp_path_factory):
    root = tmp_path_factory.mktemp("pipeline")
    data_dir = root / "data"
    api.prepare_dataset("synthetic-fair", data_dir, max_rows=1200)
    train_dirs = []
    for method, eps, params in [("dp_sgd", "2", {"lr": 1.0, "clip": 1.0}),
                                ("dp_sgd_nonprivate", "inf", {"lr": 1.0})]:
        config = {"paper": "p", "experiment": "e", "dataset": "synthetic-fair",
                  "method": method, "epsilon": eps, "delta": 1e-5, "seeds": [0, 1],
                  "params": {**params, "batch_size": 128, "epochs": 2}}
        out = root / method
        api.train(config, data_dir, out)
        api.attack(out, data_dir, out / "attack.parquet")
        train_dirs.append(out)
    runs = api.aggregate([d / "metrics.parquet" for d in train_dirs],
                         [d / "attack.parquet" for d in train_dirs], root / "runs.parquet")
    return root, train_dirs, runs


def test_train_writes_metrics_accounting_model_and_config(pipeline):
    _, (dp_dir, _), _ = pipeline
    for name in ("metrics.parquet", "accounting.json", "model.pt", "run_config.json"):
        assert (dp_dir / name).stat().st_size > 0
    accounting = json.loads((dp_dir / "accounting.json").read_text())
    assert len(accounting["runs"]) == 2
    for record in accounting["runs"]:
        assert record["epsilon"] <= 2.0 and record["delta"] == 1e-5
        assert record["neighboring_relation"]
        assert "event" in record
    config = json.loads((dp_dir / "run_config.json").read_text())
    assert config["out_dir"] == str(dp_dir.resolve())


def test_runs_table_joins_metrics_and_attacks(pipeline):
    _, _, runs = pipeline
    assert len(runs) == 4
    assert runs[["test_accuracy", "attack_auc", "ceiling_auc"]].notna().all().all()
    assert (runs["attack_auc"] <= runs["ceiling_auc"] + 0.1).all()
    twin = runs["method"] == "dp_sgd_nonprivate"
    assert math.isinf(runs.loc[twin, "ceiling_auc"].iloc[0]) is False
    assert (runs.loc[twin, "ceiling_auc"] == 1.0).all()
    assert {"p_lr", "p_noise_multiplier", "p_steps"} <= set(runs.columns)


def test_figures_and_table(pipeline, tmp_path):
    root, _, _ = pipeline
    for figure in ("accuracy_vs_epsilon", "attack_auc_vs_epsilon"):
        outs = [tmp_path / f"{figure}.pdf", tmp_path / f"{figure}.png"]
        api.make_figure(root / "runs.parquet", figure, outs, experiment="e")
        assert all(p.stat().st_size > 1000 for p in outs)
    summary = api.make_table(root / "runs.parquet", tmp_path / "summary.csv")
    assert summary.groupby(["method", "epsilon"]).ngroups == 2
    assert {"test_accuracy", "attack_auc", "epsilon_spent"} <= set(summary["metric"])
    assert (summary["n"] == 2).all()
    assert len(pd.read_csv(tmp_path / "summary.csv")) == len(summary)


def test_a_figure_is_drawn_once_per_file(pipeline, tmp_path, monkeypatch):
    """make_figure saves each output once, after the seed stamp (the drawer is asked to save
    nothing: a second save drew the whole figure again)."""
    from matplotlib.figure import Figure
    root, _, _ = pipeline
    saved = []
    real = Figure.savefig

    def counted(fig, path, **kw):
        saved.append(kw.get("format"))
        return real(fig, path, **kw)

    monkeypatch.setattr(Figure, "savefig", counted)
    for figure in ("accuracy_vs_epsilon", "tradeoff_dp"):
        saved.clear()
        api.make_figure(root / "runs.parquet", figure,
                        [tmp_path / f"{figure}.pdf", tmp_path / f"{figure}.png"], experiment="e")
        assert sorted(saved) == ["pdf", "png"], figure


def test_unknown_figure_is_an_error(pipeline, tmp_path):
    root, _, _ = pipeline
    with pytest.raises(ValueError, match="unknown figure"):
        api.make_figure(root / "runs.parquet", "nope", [tmp_path / "x.png"])


def test_experiment_table_is_computed_from_that_experiments_runs(tmp_path):
    runs = pd.DataFrame({
        "experiment": ["cmp", "cmp", "other"], "dataset": ["d"] * 3, "epsilon": [1.0] * 3,
        "method": ["racodp", "dpfermi", "racodp"], "seed": [0, 0, 0],
        "p_gamma": [0.05, None, 0.05], "p_lam": [None, 1.0, None],
        "test_error": [0.15, 0.2, 0.01], "dp_violation": [0.04, 0.01, 0.0],
    })
    runs.to_parquet(tmp_path / "runs.parquet")
    out = tmp_path / "dominance.csv"
    table = api.make_experiment_table(tmp_path / "runs.parquet", "dominance_dp", out,
                                      experiment="cmp")
    assert out.exists()
    winners = dict(zip(table["budget"], table["best_method"], strict=True))
    assert winners[0.01] == "dpfermi" and winners[0.05] == "racodp"   # "other" is ignored
    with pytest.raises(ValueError, match="unknown table"):
        api.make_experiment_table(tmp_path / "runs.parquet", "nope", out, experiment="cmp")


def test_a_constant_predictor_is_flagged(pipeline, tmp_path, caplog):
    """lr = 0 leaves the zero weights: every test example gets one class. The run row says so
    and the job log warns; trained runs are not flagged."""
    root, _, runs = pipeline
    assert not runs["degenerate_predictor"].any()
    config = {"paper": "p", "experiment": "e", "dataset": "synthetic-fair",
              "method": "dp_sgd_nonprivate", "epsilon": "inf", "delta": 1e-5, "seeds": [0],
              "params": {"lr": 0.0, "batch_size": 128, "epochs": 1}}
    with caplog.at_level("WARNING", logger="dpminimax"):
        table = api.train(config, root / "data", tmp_path / "flat")
    assert table["degenerate_predictor"].all() and table["below_majority"].all()
    assert "constant predictor" in caplog.text
    assert "not better than the majority class" in caplog.text


@pytest.mark.parametrize("lr", [3e38])  # finite, but the weights overflow float32
def test_a_non_finite_run_is_an_error_and_writes_nothing(pipeline, tmp_path, lr):
    root, _, _ = pipeline
    config = {"paper": "p", "experiment": "e", "dataset": "synthetic-fair",
              "method": "dp_sgd_nonprivate", "epsilon": "inf", "delta": 1e-5, "seeds": [0, 1],
              "params": {"lr": lr, "batch_size": 128, "epochs": 1}}
    with pytest.raises(api.NonFiniteResultError, match=r"run seed=0;.*not finite after step"):
        api.train(config, root / "data", tmp_path / "job")
    assert not (tmp_path / "job").exists()


def test_a_replay_stamps_the_code_that_ran_and_warns_when_it_differs(pipeline, tmp_path,
                                                                    caplog):
    from dpminimax.provenance import train_code_fingerprint

    root, (dp_dir, _), _ = pipeline
    config = json.loads((dp_dir / "run_config.json").read_text())
    config["code_version"] = "deadbeefdeadbeef"
    with caplog.at_level("WARNING", logger="dpminimax"):
        table = api.train(config, root / "data", tmp_path / "replay")
    assert (table["code_version"] == train_code_fingerprint()).all()
    assert "deadbeefdeadbeef" in caplog.text
    saved = json.loads((tmp_path / "replay/run_config.json").read_text())
    assert saved["recorded_code_version"] == "deadbeefdeadbeef"
    assert saved["code_version"] == train_code_fingerprint()


def test_public_names_survive_their_stage_modules_import():
    """Every public name of ``dpminimax.api`` is its function or class, also once the stage
    modules are imported (a submodule named like a function would replace it on the package)."""
    import importlib
    import types

    from dpminimax import api

    for module in ("training", "tuning", "attacks", "model_io", "reporting"):
        importlib.import_module(f"dpminimax.api.{module}")
    for name in api.__all__:
        assert not isinstance(getattr(api, name), types.ModuleType), name
