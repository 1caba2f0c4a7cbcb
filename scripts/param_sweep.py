"""One parameter of one configured job swept, the rest as experiments.yaml sets it at a scale:
the seed means of every metric with Student-t 95% intervals per value (a diagnosis of a claim
that is not reproduced, e.g. Tran et al. 2021b's tolerance alpha in DP-FERMI's Sec. 4 gain).

    PYTHONPATH=src python scripts/param_sweep.py papers/dpfermi/experiments.yaml \
        --experiment fig2_adult_dp --method tran2021b --epsilon 1 --scale quick \
        --data results/data/adult --param alpha --values 0.02 0.04 0.06 0.1 --out sweep.csv

Every value trains the job's seeds as one batched program (``dpminimax.api.train``) into
``--work/<param>~<value>``; a value already trained there is read back (resumable).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd
import yaml

from dpminimax import api
from dpminimax.epsilon import Epsilon
from dpminimax.experiments import expand_jobs, load_experiments
from dpminimax.report import summarize

METRICS = ("test_error", "test_accuracy", "dp_violation", "eo_violation",
           "train_max_constraint_violation", "epsilon_spent")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("experiments", help="a paper's experiments.yaml")
    parser.add_argument("--experiment", required=True)
    parser.add_argument("--method", required=True)
    parser.add_argument("--epsilon", required=True, type=Epsilon.parse,
                        help="one of the method's epsilons (1, 0.5, inf)")
    parser.add_argument("--dataset", help="default: the experiment's only dataset")
    parser.add_argument("--scale", default="quick")
    parser.add_argument("--data", required=True, help="the prepared dataset directory")
    parser.add_argument("--param", required=True)
    parser.add_argument("--values", required=True, nargs="+", type=yaml.safe_load)
    parser.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE",
                        help="other parameters fixed for every value (YAML values)")
    parser.add_argument("--by", nargs="*", default=[],
                        help="runs-table columns of the job's own grid to keep apart (p_clip)")
    parser.add_argument("--work", default="sweep", help="folder of the trained jobs")
    parser.add_argument("--out", required=True, help="CSV of the summary")
    args = parser.parse_args()
    jobs = [job for job in expand_jobs(load_experiments(args.experiments), args.scale)
            if job.experiment == args.experiment and job.method == args.method
            and job.epsilon == args.epsilon
            and (args.dataset is None or job.dataset == args.dataset)]
    if len(jobs) != 1:
        parser.error(f"{len(jobs)} jobs match (name --dataset if the experiment has several)")
    job = jobs[0]
    fixed = {key: yaml.safe_load(value) for key, value in
             (item.split("=", 1) for item in args.set)}
    runs = []
    for value in args.values:
        out = Path(args.work) / f"{args.param}~{value}"
        if not (out / "metrics.parquet").is_file():
            config = {"paper": job.paper, "experiment": job.experiment, "dataset": job.dataset,
                      "method": job.method, "epsilon": str(job.epsilon), "delta": job.delta,
                      "seeds": list(job.seeds), "scale": job.scale,
                      "params": {**job.params, **fixed, args.param: value}}
            api.train(config, data_dir=args.data, out_dir=out)
        runs.append(pd.read_parquet(out / "metrics.parquet").assign(**{args.param: value}))
    table = pd.concat(runs, ignore_index=True)
    summary = summarize(table, [m for m in METRICS if m in table.columns],
                        by=[args.param, *args.by, "method", "epsilon"])
    summary.to_csv(args.out, index=False)
    print(summary.to_string())


if __name__ == "__main__":
    main()
