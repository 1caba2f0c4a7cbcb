"""``dpminimax``: the command line for people (and for checks). Every command prints JSON.

    dpminimax account dpsgd --q Q --sigma S --steps T --delta D [--accountant rdp|pld]
    dpminimax account racodp --q Q --sigma S --laplace-scale B --steps T --delta D
    dpminimax calibrate dpsgd --q Q --steps T --epsilon E --delta D [--accountant rdp|pld]
    dpminimax data list | dpminimax data prepare NAME --out DIR [--max-rows N]
    dpminimax train RUN_CONFIG.json --data DIR --out DIR
    dpminimax rerun results/.../run_config.json [--out DIR]
    dpminimax bench kernels|racodp|fermi-grid|jagielski|tuning|workflow [--json] [--repeats N]
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any


def _print(obj: Any) -> None:
    json.dump(obj, sys.stdout, indent=2, sort_keys=True, default=str)
    sys.stdout.write("\n")


def _account(args: argparse.Namespace) -> None:
    from dpminimax.privacy import accounting_record, dpsgd_event, epsilon

    if args.mechanism == "dpsgd":
        event = dpsgd_event(args.q, args.sigma, args.steps)
    else:
        from dpminimax.algorithms.racodp import paper_accounting_event, racodp_event

        if args.histogram_scale is None:
            raise SystemExit("dpminimax account racodp: --laplace-scale (or --gaussian-scale) "
                             "is required")
        mechanism = (args.q, args.sigma, args.histogram_scale, args.histogram_noise, args.steps)
        event = racodp_event(*mechanism)
    record = accounting_record(event, args.delta, args.accountant)
    out = {k: record[k] for k in ("epsilon", "delta", "accountant", "event",
                                  "neighboring_relation", "method")}
    if args.mechanism == "racodp":
        paper = epsilon(paper_accounting_event(*mechanism), args.delta, "pld")
        out.update(epsilon_paper_accounting=paper, accounting_gap=record["epsilon"] - paper,
                   paper_accounting="separately Poisson-sampled PLDs (the released code); "
                                    "unsound for releases on the same batch")
    _print(out)


def _account_dispatch(args: argparse.Namespace) -> None:
    args.histogram_noise = "gaussian" if args.gaussian_scale is not None else "laplace"
    if args.gaussian_scale is not None:
        args.histogram_scale = args.gaussian_scale
    _account(args)


def _calibrate(args: argparse.Namespace) -> None:
    from dpminimax.privacy import calibrate_noise_multiplier, dpsgd_event, epsilon

    sigma = calibrate_noise_multiplier(args.q, args.steps, args.epsilon, args.delta,
                                       args.accountant)
    achieved = epsilon(dpsgd_event(args.q, sigma, args.steps), args.delta, args.accountant)
    _print({"sigma": sigma, "epsilon_achieved": achieved, "epsilon_target": args.epsilon,
            "delta": args.delta, "accountant": args.accountant, "q": args.q,
            "steps": args.steps})


def _data(args: argparse.Namespace) -> None:
    from dpminimax import api
    from dpminimax.data import list_datasets

    if args.data_command == "list":
        _print(list_datasets())
        return
    dataset = api.prepare_dataset(args.name, args.out, max_rows=args.max_rows,
                                  split_seed=args.split_seed)
    _print(dataset.meta)


def _train(config_path: Path, data_dir: str | None, out_dir: str | None) -> None:
    from dpminimax import api

    config = json.loads(Path(config_path).read_text())
    data = data_dir or config.get("data_dir")
    out = out_dir or config.get("out_dir") or Path(config_path).parent
    if data is None:
        raise SystemExit(f"{config_path}: no data_dir recorded; pass --data DIR")
    table = api.train(config, data_dir=data, out_dir=out)
    _print({"out_dir": str(out), "runs": len(table),
            "test_accuracy_mean": float(table["test_accuracy"].mean())})


def _bench(args: argparse.Namespace) -> None:
    if args.suite == "racodp":
        from dpminimax.bench_racodp import run_racodp_benchmark

        result = {name: run_racodp_benchmark(name, repeats=max(args.repeats, 50))
                  for name in ("adult", "credit-card")}
    elif args.suite == "fermi-grid":
        from dpminimax.bench_fermi_grid import run_fermi_grid_benchmark

        result = run_fermi_grid_benchmark(steps=args.repeats, jobs=args.jobs)
    elif args.suite == "jagielski":
        from dpminimax.bench_jagielski import run_jagielski_benchmark

        result = run_jagielski_benchmark()
    elif args.suite == "tuning":
        from dpminimax.bench_tuning import DATASETS, run_tuning_benchmark

        result = run_tuning_benchmark(args.mode, configs=args.configs,
                                      datasets=args.datasets or DATASETS,
                                      epsilons=args.epsilons, steps=min(args.repeats, 20))
    elif args.suite == "workflow":
        from dpminimax.bench_workflow import time_dry_run

        result = time_dry_run(".", scale="paper", repeats=min(args.repeats, 5))
    else:
        from dpminimax.bench import run_kernel_benchmarks

        result = run_kernel_benchmarks(repeats=args.repeats)
    if args.json:
        _print(result)
    else:
        for key, value in result.items():
            print(f"{key:40s} {value}")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="dpminimax", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)

    account = commands.add_parser("account", help="epsilon of a mechanism")
    account.add_argument("mechanism", choices=["dpsgd", "racodp"])
    account.add_argument("--q", type=float, required=True, help="Poisson sampling rate")
    account.add_argument("--sigma", type=float, required=True, help="noise multiplier")
    scales = account.add_mutually_exclusive_group()
    scales.add_argument("--laplace-scale", type=float, dest="histogram_scale",
                        help="racodp: Laplace scale of the histogram noise (the paper's 1/b)")
    scales.add_argument("--gaussian-scale", type=float, dest="gaussian_scale",
                        help="racodp: std of Gaussian histogram noise (the variant)")
    account.add_argument("--steps", type=int, required=True)
    account.add_argument("--delta", type=float, required=True)
    account.add_argument("--accountant", choices=["rdp", "pld"], default="rdp")
    account.set_defaults(handler=_account_dispatch)

    calibrate = commands.add_parser("calibrate", help="noise multiplier for a target epsilon")
    calibrate.add_argument("mechanism", choices=["dpsgd"])
    calibrate.add_argument("--q", type=float, required=True)
    calibrate.add_argument("--steps", type=int, required=True)
    calibrate.add_argument("--epsilon", type=float, required=True)
    calibrate.add_argument("--delta", type=float, required=True)
    calibrate.add_argument("--accountant", choices=["rdp", "pld"], default="rdp")
    calibrate.set_defaults(handler=_calibrate)

    data = commands.add_parser("data", help="list or prepare datasets")
    data_commands = data.add_subparsers(dest="data_command", required=True)
    data_commands.add_parser("list")
    prepare = data_commands.add_parser("prepare")
    prepare.add_argument("name")
    prepare.add_argument("--out", required=True)
    prepare.add_argument("--max-rows", type=int, default=None)
    prepare.add_argument("--split-seed", type=int, default=100)
    data.set_defaults(handler=_data)

    train = commands.add_parser("train", help="train one job from a run config")
    train.add_argument("config", type=Path)
    train.add_argument("--data", required=True)
    train.add_argument("--out", required=True)
    train.set_defaults(handler=lambda a: _train(a.config, a.data, a.out))

    rerun = commands.add_parser("rerun", help="replay a job from its run_config.json")
    rerun.add_argument("config", type=Path)
    rerun.add_argument("--data", default=None, help="prepared data dir (default: the recorded one)")
    rerun.add_argument("--out", default=None, help="write here instead of the recorded dir")
    rerun.set_defaults(handler=lambda a: _train(a.config, a.data, a.out))

    bench = commands.add_parser("bench", help="speed benchmarks")
    bench.add_argument("suite", choices=["kernels", "racodp", "fermi-grid", "jagielski",
                                          "tuning", "workflow"])
    bench.add_argument("--json", action="store_true")
    bench.add_argument("--repeats", type=int, default=30)
    bench.add_argument("--mode", choices=["estimate", "full"], default="estimate",
                       help="tuning: time the protocol end to end or estimate it")
    bench.add_argument("--configs", type=int, default=40, help="tuning: phase-1 configurations")
    bench.add_argument("--jobs", type=int, default=None,
                       help="fermi-grid: time every method as this many one-thread jobs side "
                            "by side (the workflow's default profile) instead of one process")
    bench.add_argument("--datasets", nargs="+", default=None, help="tuning: datasets")
    bench.add_argument("--epsilons", nargs="+", default=None, help="tuning: epsilons")
    bench.set_defaults(handler=_bench)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    args.handler(args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
