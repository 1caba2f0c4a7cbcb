"""Snakemake adapter: rule tune -> dpminimax.api.tune (phase 1 of the tuning protocol)."""

from dpminimax.jobserver import hand_over

hand_over(snakemake.threads)  # in a fork of the workflow's warm job server (dpminimax.jobserver)

from dpminimax.threads import reserve_threads  # noqa: E402

reserve_threads(snakemake.threads)  # before anything imports numba (dpminimax.threads)

from pathlib import Path  # noqa: E402

from dpminimax import api  # noqa: E402

with api.log_to(snakemake.log[0]):
    api.set_threads(snakemake.threads)
    api.tune(
        snakemake.params.run_config,
        data_dir=Path(snakemake.input.arrays).parent,
        out_path=snakemake.output.trials,
    )
