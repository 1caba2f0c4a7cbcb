"""Snakemake adapter: rule train -> dpminimax.api.train, then dpminimax.api.attack on its
models in the same process."""

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
    api.attack(
        train_dir=Path(snakemake.output.metrics).parent,
        data_dir=Path(snakemake.input.arrays).parent,
        out_path=snakemake.output.attack,
    )
