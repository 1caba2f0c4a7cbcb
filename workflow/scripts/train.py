"""Snakemake adapter: rule train -> dpminimax.api.train, then dpminimax.api.attack on its
models in the same process; rule train_problem -> dpminimax.api.train alone (no data, no
attack)."""

from dpminimax.jobserver import hand_over

hand_over(snakemake.threads)  # in a fork of the workflow's warm job server (dpminimax.jobserver)

from dpminimax.threads import reserve_threads  # noqa: E402

reserve_threads(snakemake.threads)  # before anything imports numba (dpminimax.threads)

from pathlib import Path  # noqa: E402

from dpminimax import api  # noqa: E402

with api.log_to(snakemake.log[0]):
    api.set_threads(snakemake.threads)
    data_dir = Path(snakemake.input.arrays).parent if "arrays" in snakemake.input.keys() else None
    api.train(
        snakemake.params.run_config,
        data_dir=data_dir,
        out_dir=Path(snakemake.output.metrics).parent,
        selection=snakemake.input.get("selection"),
    )
    if "attack" in snakemake.output.keys():
        api.attack(
            train_dir=Path(snakemake.output.metrics).parent,
            data_dir=data_dir,
            out_path=snakemake.output.attack,
        )
