"""Snakemake adapter: rule prepare_data -> dpminimax.api.prepare_dataset."""

from dpminimax.jobserver import hand_over

hand_over(snakemake.threads)  # in a fork of the workflow's warm job server (dpminimax.jobserver)

from pathlib import Path  # noqa: E402

from dpminimax import api  # noqa: E402

with api.log_to(snakemake.log[0]):
    api.prepare_dataset(
        snakemake.wildcards.dataset,
        Path(snakemake.output.arrays).parent,
        max_rows=snakemake.params.max_rows,
        split_seed=snakemake.params.split_seed,
        missing_data=snakemake.params.missing_data,
    )
