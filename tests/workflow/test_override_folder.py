"""A ``dataset_override`` run writes into its own folder (issue 40 item 9): never over the
papers' own outputs in results/<paper>/ (only the shared prepared data in results/data/)."""

from __future__ import annotations

from wfhelpers import planned_outputs, run_snakemake


def test_an_override_plans_only_outputs_in_its_own_folder(workflow_copy):
    result = run_snakemake(workflow_copy, "-n", "--config", "experiments={racodp: [fig4_dp]}",
                           "dataset_override=[synthetic-fair]")
    outputs = planned_outputs(result)
    own = {p for p in outputs if p.startswith("results/override~synthetic-fair/racodp/")}
    assert "results/override~synthetic-fair/racodp/figures/fig4_dp/tradeoff_dp.png" in own
    # its leaderboards too (rule compare: the fair-classification family reads fig4_dp)
    own |= {p for p in outputs if p.startswith("results/override~synthetic-fair/compare/")}
    assert "results/override~synthetic-fair/compare/fair_classification/leaderboard.csv" in own
    assert any("/train/fig4_dp/synthetic-fair/racodp/" in p for p in own)
    shared = {p for p in outputs if p.startswith("results/data/")}
    assert outputs == own | shared, sorted(outputs - own - shared)[:10]


def test_without_an_override_the_papers_own_folder_is_used(workflow_copy):
    outputs = planned_outputs(run_snakemake(workflow_copy, "-n", "--config",
                                            "experiments={racodp: [fig4_dp]}"))
    assert "results/racodp/figures/fig4_dp/tradeoff_dp.png" in outputs
    assert not any("override" in p for p in outputs)
