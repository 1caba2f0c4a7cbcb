"""Snakemake adapter: rule select_configs -> dpminimax.api.select_configs (phase-1 choice)."""

from dpminimax.jobserver import hand_over

hand_over(snakemake.threads)  # in a fork of the workflow's warm job server (dpminimax.jobserver)

from dpminimax import api  # noqa: E402

with api.log_to(snakemake.log[0]):
    api.select_configs(
        snakemake.params.run_config,
        trials_path=snakemake.input.trials,
        out_path=snakemake.output.selected,
    )
