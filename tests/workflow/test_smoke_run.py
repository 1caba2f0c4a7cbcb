"""The real Snakefile, end to end at smoke scale: every rule runs for real.

The first test needs no downloaded data: the baselines paper on ``dataset_override:
[synthetic-fair]`` (the same prepare/train(+attack)/report code as the real datasets), then a
resumed run, the Snakemake report and a replay. The second runs the smoke config (the
experiments it selects of every paper) on the real Adult and Credit-Card files and is skipped
when they are not on the search path.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from wfhelpers import run_snakemake

pytestmark = pytest.mark.slow

FIGURES = ["accuracy_vs_epsilon", "dp_violation_vs_epsilon", "eo_violation_vs_epsilon",
           "attack_auc_vs_epsilon", "attack_tpr_vs_epsilon"]


def _outputs_ok(root, datasets, results="results"):
    runs = pd.read_parquet(root / results / "baselines/runs.parquet")
    assert set(runs["dataset"]) == set(datasets)
    assert set(runs["method"]) == {"dp_sgd", "dp_sgd_nonprivate"}
    assert runs["attack_auc"].between(0, 1).all()
    private = runs[runs["method"] == "dp_sgd"]
    assert (private["epsilon_spent"] <= private["epsilon"] * (1 + 1e-9)).all()
    assert np.isinf(runs.loc[runs["method"] == "dp_sgd_nonprivate", "epsilon_spent"]).all()
    for figure in FIGURES:
        for ext in ("pdf", "png"):
            path = root / results / f"baselines/figures/dpsgd_lr/{figure}.{ext}"
            assert path.stat().st_size > 1000, path
    summary = pd.read_csv(root / results / "baselines/tables/summary.csv")
    assert summary.groupby(["dataset", "method", "epsilon"]).ngroups == runs.groupby(
        ["dataset", "method", "epsilon"]).ngroups
    return runs


def test_smoke_run_on_synthetic_data_then_resume_and_replay(workflow_copy, monkeypatch):
    root = workflow_copy
    args = ("--cores", "2", "--configfile", "workflow/config/smoke.yaml",
            "--config", "dataset_override=[synthetic-fair]", "papers=[baselines]")
    monkeypatch.delenv("DPMINIMAX_JOBSERVER", raising=False)
    monkeypatch.setenv("DPMINIMAX_JOBSERVER_TRACE", str(root / "forks.txt"))
    first = run_snakemake(root, *args)
    assert first.returncode == 0, first.stderr[-4000:]
    # the jobs ran in forks of one warm job server (dpminimax.jobserver), none in its own
    forks = [line.split() for line in (root / "forks.txt").read_text().splitlines()]
    assert {pid for pid, _, _ in forks}.isdisjoint({server for _, server, _ in forks})
    scripts = [script.rsplit(".", 2)[-2] for _, _, script in forks]
    assert scripts.count("train") == 3 and scripts.count("figure") == len(FIGURES)
    one_thread = {server for (_, server, _), script in zip(forks, scripts, strict=True)
                  if script in ("train", "figure")}
    assert len(one_thread) == 1  # one server per thread count (lira's jobs ask for 2)
    assert "job server" not in first.stderr
    results = "results/override~synthetic-fair"  # an override's outputs: their own folder
    runs = _outputs_ok(root, ["synthetic-fair"], results)
    assert len(runs) == 2 * 2 + 2  # 2 epsilons x 2 seeds of DP-SGD + 2 non-private seeds
    assert not (root / "results/baselines").exists()

    job = root / results / "baselines/train/dpsgd_lr/synthetic-fair/dp_sgd/eps~1"
    accounting = json.loads((job / "accounting.json").read_text())
    assert {r["accountant"] for r in accounting["runs"]} == {"rdp"}
    assert all(r["epsilon"] <= 1.0 for r in accounting["runs"])

    again = run_snakemake(root, *args)
    assert again.returncode == 0, again.stderr[-4000:]
    assert "Nothing to be done" in again.stdout + again.stderr

    report = run_snakemake(root, *args, "--report", "report.html")
    assert report.returncode == 0, report.stderr[-4000:]
    html = (root / "report.html").read_text(errors="replace")
    assert "accuracy_vs_epsilon" in html and "summary.csv" in html
    status = (root / results / "report_status.html").read_text()  # a complete run: all current
    assert "0 stale, 0 missing" in status and "report_status.html" in html

    from dpminimax.cli import main

    assert main(["rerun", str(job / "run_config.json"), "--out", str(root / "replay")]) == 0
    original = pd.read_parquet(job / "metrics.parquet")
    replayed = pd.read_parquet(root / "replay/metrics.parquet")
    pd.testing.assert_frame_equal(original, replayed)


def test_smoke_run_on_real_adult_and_credit_card(workflow_copy):
    from dpminimax.data import DatasetNotFoundError, load_dataset

    try:
        load_dataset("adult", max_rows=200)
        load_dataset("credit-card", max_rows=200)
    except DatasetNotFoundError as err:
        pytest.skip(f"real data not on the search path: {err}")
    root = workflow_copy
    result = run_snakemake(root, "--cores", "2", "--configfile", "workflow/config/smoke.yaml")
    assert result.returncode == 0, result.stderr[-4000:]
    runs = _outputs_ok(root, ["adult", "credit-card"])
    assert (runs.loc[runs["method"] == "dp_sgd_nonprivate", "test_accuracy"] > 0.7).all()

    racodp = pd.read_parquet(root / "results/racodp/runs.parquet")
    assert set(racodp["method"]) == {"racodp", "racodp_nonprivate", "dp_sgd"}
    private = racodp[racodp["method"] == "racodp"]
    assert (private["epsilon_spent"] <= 1.0).all()
    assert (private["epsilon_paper_accounting"] < private["epsilon_spent"]).all()
    for ext in ("pdf", "png"):
        assert (root / f"results/racodp/figures/fig4_dp/tradeoff_dp.{ext}").stat().st_size > 1000

    fermi = pd.read_parquet(root / "results/dpfermi/runs.parquet")
    assert {"dpfermi", "dpfermi_paper", "dpfermi_code", "dpfermi_nonprivate", "tran2021a",
            "tran2021b", "racodp", "dp_sgd"} <= set(fermi["method"])
    real = fermi.loc[fermi["dataset"].isin(["adult", "credit-card"])]
    assert not real["data_standin"].any()
    parkinsons = racodp.loc[racodp["dataset"] == "parkinsons"]
    assert len(parkinsons) and parkinsons["data_standin"].all()  # not shipped here
    example = real.loc[real["method"] != "dpfermi_paper"]
    finite = example.loc[np.isfinite(example["epsilon"])]
    assert (finite["epsilon_spent"] <= finite["epsilon"] * (1 + 1e-9)).all()
    job = root / "results/dpfermi/train/fig2_adult_dp/adult/dpfermi_paper/eps~1"
    records = json.loads((job / "accounting.json").read_text())["runs"]
    assert {r["accountant"] for r in records} == {"paper_theorem_3_3"}
    assert all("caveats" in r and "guarantee_covered" in r for r in records)
    for paper in ("racodp", "dpfermi"):
        claims = pd.read_csv(root / f"results/{paper}/tables/claims.csv")
        assert claims["verdict"].notna().all() and len(claims) > 20
    utk = fermi.loc[fermi["dataset"] == "utkface"]  # VGG9 on the marked stand-in
    assert set(utk["method"]) == {"dpfermi"} and utk["data_standin"].all() and len(utk) == 2
    assert (utk["epsilon_spent"] <= 100.0).all()
    celeba = pd.read_parquet(root / "results/racodp/runs.parquet").query("dataset == 'celeba'")
    assert set(celeba["method"]) == {"racodp", "racodp_nonprivate"}
    assert celeba["data_standin"].all()
    for paper, experiment in (("dpfermi", "fig5_utkface_dp"), ("racodp", "fig2a_celeba")):
        figure = root / f"results/{paper}/figures/{experiment}/tradeoff_dp.png"
        assert figure.stat().st_size > 1000
    dominance = pd.read_csv(root / "results/dpfermi/tables/cross_paper_dp/dominance_dp.csv")
    assert set(dominance["dataset"]) == {"adult"}  # the smoke scale's one dataset
    assert (root / "results/racodp/bench/table2.json").exists()

    bilevel = pd.read_parquet(root / "results/bilevel/runs.parquet")  # DP bilevel, P-A
    assert set(bilevel["method"]) == {"dp_bilevel", "dp_aid", "np_pen", "np_aid"}
    private = bilevel[bilevel["method"].isin(["dp_bilevel", "dp_aid"])]
    assert (private["epsilon_spent"] <= private["epsilon"] * (1 + 1e-9)).all()
    alg1 = bilevel[bilevel["method"] == "dp_bilevel"]
    assert (alg1["epsilon_paper_accounting"] > alg1["epsilon"]).all()  # erratum A1
    error = bilevel.groupby("method")["gradient_mapping_norm"].max()
    assert error["np_aid"] < 1e-8 < error["np_pen"] < error["dp_bilevel"]
    assert error["dp_aid"] > 1e-8
    assert (root / "results/bilevel/figures/e3_rates/gradient_mapping_collapse.png").exists()
    leak = pd.read_csv(root / "results/bilevel/tables/leak.csv").set_index("mechanism")
    assert set(zip(leak["d"], leak["n"], strict=True)) == {(1, 100), (10, 1000)}
    assert (leak.loc[["M0", "M1", "M2"], "auc"] == 1.0).all()
    assert (leak.loc[["M0", "M1", "M2"], "reconstruction_error"] < 1e-12).all()
    assert (leak.loc["M3", "epsilon_hat"] < leak.loc["M3", "epsilon"]).all()
    claims = pd.read_csv(root / "results/bilevel/tables/claims.csv").set_index("id")
    for setting in ("d1_n100", "d10_n1000"):  # each leak setting has its five claims
        assert (claims.filter(regex=f"^leak_.*_{setting}$", axis=0)["verdict"]
                == "holds").sum() == 5  # consistency claims: certain by design
    assert (root / "results/bilevel/figures/e3_rates/gradient_mapping_vs_n.png").exists()
