"""The whole paper-scale DAG builds (its timing is a benchmark, not a test: see BENCHMARKS.md)."""

from __future__ import annotations

from wfhelpers import run_snakemake


def test_paper_scale_dag_builds(workflow_copy):
    result = run_snakemake(workflow_copy, "-n", "--config", "scale=paper", "--quiet", "rules")
    assert result.returncode == 0, result.stderr[-4000:]
    out = result.stdout + result.stderr
    for rule in ("prepare_data", "train", "aggregate", "figure", "table"):
        assert rule in out, out


def test_tuning_protocol_adds_the_tune_and_select_stages(workflow_copy):
    """With ``tuning=protocol`` every tuned train job waits for its tune -> select_configs jobs;
    without it (the default) neither stage is in the DAG."""
    tuned = run_snakemake(workflow_copy, "-n", "--config", "scale=paper", "tuning=protocol",
                          "--quiet", "rules")
    assert tuned.returncode == 0, tuned.stderr[-4000:]
    plain = run_snakemake(workflow_copy, "-n", "--config", "scale=paper", "--quiet", "rules")
    assert plain.returncode == 0, plain.stderr[-4000:]
    for rule in ("tune", "select_configs"):
        assert f"\n{rule} " in tuned.stdout + tuned.stderr, tuned.stdout
        assert f"\n{rule} " not in plain.stdout + plain.stderr, plain.stdout


def test_default_profile_is_picked_up(workflow_copy):
    """``snakemake`` without ``--profile`` uses workflow/profiles/default: Snakemake looks for
    ``profiles/default`` beside the Snakefile, which the top-level ``profiles`` link provides."""
    result = run_snakemake(workflow_copy, "-n", "--quiet", "rules")
    assert result.returncode == 0, result.stderr[-4000:]
    assert "Using workflow specific profile profiles/default" in result.stdout + result.stderr
