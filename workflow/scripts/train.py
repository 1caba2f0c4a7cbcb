"""Snakemake adapter: rule train -> dpminimax.api.train."""

from dpminimax.threads import reserve_threads

reserve_threads(snakemake.threads)  # before anything imports numba (dpminimax.threads)

from pathlib import Path  # noqa: E402

from dpminimax import api  # noqa: E402

with api.log_to(snakemake.log[0]):
    api.set_threads(snakemake.threads)
    api.train(
        snakemake.params.run_config,
        data_dir=Path(snakemake.input.arrays).parent,
        out_dir=Path(snakemake.output.metrics).parent,
        selection=snakemake.input.get("selection"),
    )
