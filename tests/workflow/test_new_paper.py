"""A new paper that reuses the library's methods and figures is one folder (issue 41 item 3):
``papers/<id>/experiments.yaml`` and ``claims.yaml`` added to a copy of the workflow (nothing
else of it edited), selected with ``--config papers=[<id>]``, plan their jobs, figures, claims
and report."""

from __future__ import annotations

import yaml
from wfhelpers import planned_outputs, run_snakemake

TOY = {
    "paper": "toy",
    "title": "A toy paper: DP-SGD on a synthetic fair-classification dataset",
    "delta": 1.0e-5,
    "experiments": {
        "acc": {
            "description": "DP-SGD against its non-private twin.",
            "datasets": ["synthetic-fair"],
            "methods": {"dp_sgd": {"epsilons": ["1", "3"], "params": {"lr": 1.0, "clip": 1.0}},
                        "dp_sgd_nonprivate": {"params": {"lr": 1.0}}},
            "figures": ["accuracy_vs_epsilon"],
            "scales": {"smoke": {"seeds": [0], "params": {"epochs": 1}}},
        },
    },
}

CLAIMS = {
    "claims": [{
        "id": "toy_accuracy", "figure": "none", "dataset": "synthetic-fair", "epsilon": 1.0,
        "method": "dp_sgd", "quantity": "test accuracy of DP-SGD at epsilon 1",
        "value": 0.8, "unit": "fraction", "comparison": "at_least",
        "tolerance": {"kind": "absolute", "value": 0.1}, "kind": "reproduction",
        "source_quote": "a toy claim",
        "measure": {"metric": "test_accuracy", "how": "mean over seeds",
                    "filter": {"dataset": "synthetic-fair", "method": "dp_sgd", "epsilon": 1.0},
                    "agg": "mean"},
    }],
}


def test_a_paper_that_reuses_methods_is_one_folder(workflow_copy):
    folder = workflow_copy / "papers" / "toy"
    folder.mkdir()
    (folder / "experiments.yaml").write_text(yaml.safe_dump(TOY, sort_keys=False))
    (folder / "claims.yaml").write_text(yaml.safe_dump(CLAIMS, sort_keys=False))
    result = run_snakemake(workflow_copy, "-n", "--config", "papers=[toy]", "scale=smoke")
    outputs = planned_outputs(result)
    for path in ("results/toy/figures/acc/accuracy_vs_epsilon.png",
                 "results/toy/tables/claims.csv", "results/toy/report.html",
                 "results/toy/train/acc/synthetic-fair/dp_sgd/eps~1/metrics.parquet",
                 "results/toy/train/acc/synthetic-fair/dp_sgd_nonprivate/eps~inf/metrics.parquet"):
        assert path in outputs, sorted(outputs)[:20]
