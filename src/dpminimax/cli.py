"""``dpminimax``: the command line for people (and for checks). Every command prints JSON.

    dpminimax methods   (every method: name, paper, private, parameters with defaults)
    dpminimax account --method NAME [--params JSON] --n N --epsilon E --delta D [--data DIR]
    dpminimax account dpsgd --q Q --sigma S --steps T --delta D [--accountant rdp|pld]
    dpminimax account racodp --q Q --sigma S --laplace-scale B --steps T --delta D
    dpminimax calibrate dpsgd --q Q --steps T --epsilon E --delta D [--accountant rdp|pld]
    dpminimax calibrate racodp --q Q --sigma S --laplace-scale B --epsilon E --delta D
    dpminimax audit --method NAME --data DIR --epsilon E --delta D [--controls] [--max-rows N]
    dpminimax data list | dpminimax data prepare NAME --out DIR [--max-rows N]
    dpminimax data hash FILE...   (prints YAML to paste into a dataset declaration)
    dpminimax train RUN_CONFIG.json --data DIR --out DIR
    dpminimax rerun results/.../run_config.json [--out DIR]
    dpminimax bench kernels|racodp|fermi-grid|jagielski|tuning|workflow|jobs|byoa|lira|dpdro
                    [--json] [--repeats N]
    dpminimax scorecard [--root DIR] [--check]   (README scorecards from papers/*/reference/)
    dpminimax compare RUNS.parquet [RUNS.parquet ...] --family F [--metric M] --out DIR
                      [--delta D] [--accountant A] [--experiments E ...] [--interval bootstrap|t]
                      [--tuning-budget K]
                      (leaderboards decided by intervals, every method scored as its expected
                      best of K configurations: DIR/leaderboard.csv, summary.md)
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from dpminimax.plugins import load_plugins


def _in_range(low: float, high: float, *, closed_high: bool = False, integer: bool = False):
    """An argparse type: a number in (low, high) (or (low, high]), checked before any
    accountant sees it, so a bad value is one line naming the option."""
    def parse(text: str):
        try:
            value = int(text) if integer else float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
        ok = low < value and (value <= high if closed_high else value < high)
        if not ok or value != value:
            bracket = "]" if closed_high else ")"
            raise argparse.ArgumentTypeError(f"must be in ({low:g}, {high:g}{bracket}, got {text}")
        return value
    return parse


def _seed(text: str) -> int:
    """An argparse type: a seed, an integer >= 0 (numpy's generators refuse negative ones)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be an integer >= 0, got {text}")
    return value


def _method_name(text: str) -> str:
    """An argparse type: a registered method or diagnostic; a typo gets the closest names, an old
    twin name (:data:`~dpminimax.algorithms.RENAMED`) its new one."""
    import difflib

    from dpminimax.algorithms import DIAGNOSTICS, METHODS, RENAMED, renamed_message

    names = sorted({*METHODS, *DIAGNOSTICS})
    if text in names:
        return text
    if text in RENAMED:
        raise argparse.ArgumentTypeError(renamed_message(text))
    close = difflib.get_close_matches(text, names, n=3, cutoff=0.6)
    hint = f"did you mean {' or '.join(map(repr, close))}? " if close else ""
    raise argparse.ArgumentTypeError(
        f"unknown method {text!r}; {hint}`dpminimax methods` lists all {len(names)}")


RATE = _in_range(0.0, 1.0, closed_high=True)
DELTA = _in_range(0.0, 1.0)
POSITIVE = _in_range(0.0, float("inf"))
STEPS = _in_range(0, 10**15, closed_high=True, integer=True)


def _print(obj: Any) -> None:
    json.dump(obj, sys.stdout, indent=2, sort_keys=True, default=str)
    sys.stdout.write("\n")


def _methods(args: argparse.Namespace) -> None:
    from dpminimax.algorithms import DIAGNOSTICS, METHODS

    _print([{"name": name, "label": cls.label, "paper": cls.paper,
             "source": cls.source,
             "private": cls.private and name not in DIAGNOSTICS,
             "diagnostic": name in DIAGNOSTICS,
             "parameters": cls.parameters, "shared_parameters": list(cls.shared_parameters),
             "uses_sensitive_attribute": cls.uses_sensitive_attribute,
             "task": cls.task.name, "attacked": cls.task.attacked}
            for name, cls in sorted({**METHODS, **DIAGNOSTICS}.items())])


def _method_plan(args: argparse.Namespace) -> None:
    """The plan of ``--method`` with ``--params`` on ``--n`` rows: every plan is calibrated to
    the target (epsilon, delta), so ``account`` and ``calibrate`` print the same object, whose
    ``epsilon`` is the accountant's for the planned releases."""
    from dpminimax.algorithms import get_method
    from dpminimax.algorithms.base import RunSpec
    from dpminimax.privacy.release import releases_of

    method = get_method(args.method)
    params = _json_object(args.params)
    data, n = None, args.n
    if args.data is not None:
        from dpminimax.data.storage import load_prepared

        data = load_prepared(args.data)
        n = len(data.y_train)
    if n is None:
        raise ValueError("--method: --n (training rows) or --data "
                         "(a prepared dataset) is required")
    target = args.epsilon if args.epsilon is not None else float("inf")
    if method.private and args.epsilon is None:
        raise ValueError(f"--method {method.name}: the method is "
                         "private and its plan is calibrated to a target: pass --epsilon")
    plan = method.plan(RunSpec(seed=0, epsilon=target, delta=args.delta, params=params), n,
                       data)
    _print({"method": method.name, "n": n, "epsilon_target": target,
            "params": method.resolve(params), "values": plan.values,
            "releases": [vars(release) for release in releases_of(plan.releases)],
            **plan.record})


def _account(args: argparse.Namespace) -> None:
    from dpminimax.privacy import accounting_record, dpsgd_event, epsilon

    missing = [f"--{name}" for name in ("q", "sigma", "steps") if getattr(args, name) is None]
    if missing:
        raise ValueError(f"{args.mechanism}: {', '.join(missing)} required")
    if args.mechanism == "dpsgd":
        event = dpsgd_event(args.q, args.sigma, args.steps)
    else:
        from dpminimax.algorithms.fair.racodp import paper_accounting_event, racodp_event

        if args.histogram_scale is None:
            raise ValueError("racodp: --laplace-scale (or --gaussian-scale) "
                             "is required")
        mechanism = (args.q, args.sigma, args.histogram_scale, args.histogram_noise, args.steps)
        event = racodp_event(*mechanism)
    record = accounting_record(event, args.delta, args.accountant)
    out = {k: record[k] for k in ("epsilon", "delta", "accountant", "event",
                                  "neighboring_relation", "method", "epsilon_pld_product",
                                  "epsilon_rdp_general") if k in record}
    if args.mechanism == "racodp":
        paper = epsilon(paper_accounting_event(*mechanism), args.delta, "pld")
        out.update(epsilon_paper_accounting=paper, accounting_gap=record["epsilon"] - paper,
                   paper_accounting="separately Poisson-sampled PLDs (the released code); "
                                    "unsound for releases on the same batch")
    _print(out)


def _planned_method(args: argparse.Namespace) -> bool:
    """``account`` / ``calibrate`` take a mechanism or ``--method``: print the method's plan
    (True) or leave the mechanism to the caller (False)."""
    if (args.method is None) == (args.mechanism is None):
        raise ValueError("give a mechanism (dpsgd, racodp) or --method NAME, not both")
    if args.method is None:
        return False
    _method_plan(args)
    return True


def _account_dispatch(args: argparse.Namespace) -> None:
    if _planned_method(args):
        return
    args.histogram_noise = "gaussian" if args.gaussian_scale is not None else "laplace"
    if args.gaussian_scale is not None:
        args.histogram_scale = args.gaussian_scale
    _account(args)


def _calibrate(args: argparse.Namespace) -> None:
    from dpminimax.privacy import calibrate_noise_multiplier, dpsgd_event, epsilon

    if _planned_method(args):
        return
    if args.q is None:
        raise ValueError(f"{args.mechanism}: --q is required")
    if args.mechanism == "racodp":
        _calibrate_racodp(args)
        return
    if args.steps is None:
        raise ValueError("dpsgd: --steps is required")
    sigma = calibrate_noise_multiplier(args.q, args.steps, args.epsilon, args.delta,
                                       args.accountant)
    achieved = epsilon(dpsgd_event(args.q, sigma, args.steps), args.delta, args.accountant)
    _print({"sigma": sigma, "epsilon_achieved": achieved, "epsilon_target": args.epsilon,
            "delta": args.delta, "accountant": args.accountant, "q": args.q,
            "steps": args.steps})


def _calibrate_racodp(args: argparse.Namespace) -> None:
    """Largest RaCO-DP step count <= --max-steps within (epsilon, delta), as training plans it."""
    from dpminimax.algorithms.base import RunSpec
    from dpminimax.algorithms.fair.racodp import RacoDp, racodp_releases

    if args.sigma is None or args.histogram_scale is None:
        raise SystemExit("dpminimax calibrate racodp: --sigma and --laplace-scale are required")
    mechanism = (args.sigma, args.histogram_scale, "laplace")
    run = RunSpec(seed=0, epsilon=args.epsilon, delta=args.delta, params={})
    shared = {"max_steps": args.max_steps, "accountant": args.accountant}
    steps = RacoDp().steps(args.q, mechanism, run, shared)
    record = RacoDp.account(racodp_releases(args.q, mechanism, 1.0, steps), run,
                            args.accountant).record
    _print({"steps": steps, "epsilon_achieved": record["epsilon"],
            "epsilon_target": args.epsilon, "delta": args.delta, "method": record["method"],
            **{k: record[k] for k in ("epsilon_pld_product", "epsilon_rdp_general",
                                      "epsilon_paper_accounting") if k in record},
            "accountant": args.accountant, "q": args.q,
            "max_steps": args.max_steps})


def _audit(args: argparse.Namespace) -> None:
    """The one-run audit of ``--method`` (and, with ``--controls``, its planted bugs)."""
    from dpminimax.attacks.bugs import PLANTED_BUGS
    from dpminimax.attacks.canaries import audit_table
    from dpminimax.data.storage import load_prepared

    params = _json_object(args.params)
    settings = {"methods": {args.method: params}, "epsilon": args.epsilon,
                "delta": args.delta, "canaries": args.canaries, "max_rows": args.max_rows,
                "seed": args.seed, "controls": PLANTED_BUGS if args.controls else ()}
    _print(audit_table(settings, load_prepared(args.data)))


def _json_object(text: str) -> dict:
    try:
        params = json.loads(text)
    except json.JSONDecodeError as error:
        raise ValueError(f"--params is not JSON ({error}): {text!r}") from None
    if not isinstance(params, dict):
        raise ValueError(f"--params must be a JSON object of parameter values, got {text}")
    return params


def _data(args: argparse.Namespace) -> None:
    from dpminimax import api
    from dpminimax.data import list_datasets

    if args.data_command == "list":
        _print(list_datasets())
        return
    if args.data_command == "hash":
        from dpminimax.data.declared import pin_snippet

        sys.stdout.write("".join(pin_snippet(path) for path in args.files))
        return
    dataset = api.prepare_dataset(args.name, args.out, max_rows=args.max_rows,
                                  split_seed=args.split_seed)
    _print(dataset.meta)


def _train(config_path: Path, data_dir: str | None, out_dir: str | None) -> None:
    from dpminimax import api
    from dpminimax.algorithms import get_method

    config = json.loads(Path(config_path).read_text())
    data = data_dir or config.get("data_dir")
    out = out_dir or config.get("out_dir") or Path(config_path).parent
    if data is None and not get_method(config["method"]).task.draws_data:
        raise SystemExit(f"{config_path}: no data_dir recorded; pass --data DIR")
    table = api.train(config, data_dir=data, out_dir=out)
    _print({"out_dir": str(out), "runs": len(table),
            **({"test_accuracy_mean": float(table["test_accuracy"].mean())}
               if "test_accuracy" in table else {})})


def _bench(args: argparse.Namespace) -> None:
    if args.suite == "racodp":
        from dpminimax.bench.racodp import run_table2

        result = run_table2(repeats=max(args.repeats, 50))
    elif args.suite == "fermi-grid":
        from dpminimax.bench.dpfermi import run_fermi_grid_benchmark

        result = run_fermi_grid_benchmark(steps=args.repeats, jobs=args.jobs)
    elif args.suite == "jagielski":
        from dpminimax.bench.dpfermi import run_jagielski_benchmark

        result = run_jagielski_benchmark()
    elif args.suite == "tuning":
        from dpminimax.bench.racodp import run_tuning_benchmark

        result = run_tuning_benchmark(args.mode, configs=args.configs, datasets=args.datasets,
                                      epsilons=args.epsilons, steps=min(args.repeats, 20))
    elif args.suite == "byoa":
        from dpminimax.bench.byoa import run_gradient_throughput

        result = run_gradient_throughput(repeats=args.repeats)
    elif args.suite == "lira":
        from dpminimax.bench.lira import run_shadow_benchmark

        result = run_shadow_benchmark()
    elif args.suite == "dpdro":
        from dpminimax.bench.dpdro import run_dpdro_benchmarks

        result = run_dpdro_benchmarks(repeats=min(args.repeats, 5))
    elif args.suite == "workflow":
        from dpminimax.bench.workflow import time_dry_run

        result = time_dry_run(".", scale="paper", repeats=min(args.repeats, 5))
    elif args.suite == "jobs":
        from dpminimax.bench.workflow import time_job_start

        result = time_job_start(repeats=min(args.repeats, 10))
    else:
        from dpminimax.bench.kernels import run_kernel_benchmarks

        result = run_kernel_benchmarks(repeats=args.repeats)
    if args.json:
        _print(result)
    else:
        for key, value in result.items():
            print(f"{key:40s} {value}")


def _method_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--method", type=_method_name,
                        help="a registered method (dpminimax methods): print its "
                             "privacy plan instead of a mechanism's epsilon")
    parser.add_argument("--params", default="{}",
                        help="--method: JSON object of parameter values (defaults otherwise)")
    parser.add_argument("--n", type=STEPS, help="--method: number of training rows")
    parser.add_argument("--data", help="--method: a prepared dataset dir (sets --n; plans that "
                                       "read group counts, e.g. dpfermi_paper, need it)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="dpminimax", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--debug", action="store_true",
                        help="show the full traceback of an error instead of one line")
    commands = parser.add_subparsers(dest="command", required=True)

    methods = commands.add_parser("methods", help="every registered method, as JSON")
    methods.set_defaults(handler=_methods)

    account = commands.add_parser("account", help="epsilon of a mechanism or a method's plan")
    account.add_argument("mechanism", nargs="?", choices=["dpsgd", "racodp"],
                         help="dpsgd: the subsampled Gaussian; racodp: its Laplace (or Gaussian) "
                              "histogram and Gaussian gradient from one Poisson batch")
    _method_options(account)
    account.add_argument("--q", type=RATE, help="mechanism: Poisson sampling rate")
    account.add_argument("--sigma", type=POSITIVE, help="mechanism: noise multiplier")
    scales = account.add_mutually_exclusive_group()
    scales.add_argument("--laplace-scale", type=POSITIVE, dest="histogram_scale",
                        help="racodp: Laplace scale of the histogram noise (the paper's 1/b)")
    scales.add_argument("--gaussian-scale", type=POSITIVE, dest="gaussian_scale",
                        help="racodp: std of Gaussian histogram noise (the variant)")
    account.add_argument("--steps", type=STEPS, help="mechanism: number of steps (T)")
    account.add_argument("--delta", type=DELTA, required=True, help="target delta in (0, 1)")
    account.add_argument("--epsilon", type=POSITIVE,
                         help="--method: the target its plan is calibrated to")
    account.add_argument("--accountant", choices=["rdp", "pld"], default="rdp",
                         help="dp_accounting's accountant for the events it supports")
    account.set_defaults(handler=_account_dispatch)

    calibrate = commands.add_parser(
        "calibrate", help="dpsgd: noise multiplier; racodp: step count, for a target epsilon")
    calibrate.add_argument("mechanism", nargs="?", choices=["dpsgd", "racodp"],
                           help="what to calibrate (see the command's help)")
    _method_options(calibrate)
    calibrate.add_argument("--q", type=RATE, help="mechanism: Poisson sampling rate")
    calibrate.add_argument("--steps", type=STEPS, help="dpsgd: step count")
    calibrate.add_argument("--sigma", type=POSITIVE, help="racodp: gradient noise multiplier")
    calibrate.add_argument("--laplace-scale", type=POSITIVE, dest="histogram_scale",
                           help="racodp: Laplace scale of the histogram noise")
    calibrate.add_argument("--max-steps", type=STEPS, default=5000, help="racodp: step cap")
    calibrate.add_argument("--epsilon", type=POSITIVE, required=True, help="target epsilon > 0")
    calibrate.add_argument("--delta", type=DELTA, required=True, help="target delta in (0, 1)")
    calibrate.add_argument("--accountant", choices=["rdp", "pld"], default="rdp",
                           help="dp_accounting's accountant for the events it supports")
    calibrate.set_defaults(handler=_calibrate)

    audit = commands.add_parser(
        "audit", help="one-run privacy audit (Steinke et al. 2023): eps_lower of a method")
    audit.add_argument("--method", required=True, type=_method_name,
                       help="a private method (dpminimax methods)")
    audit.add_argument("--data", required=True, help="a prepared dataset dir (tabular, binary)")
    audit.add_argument("--epsilon", type=POSITIVE, required=True, help="the target epsilon")
    audit.add_argument("--delta", type=DELTA, required=True, help="target delta in (0, 1)")
    audit.add_argument("--params", default="{}", help="JSON object of parameter values")
    audit.add_argument("--canaries", type=STEPS, default=1000,
                       help="canaries, each included with probability 1/2")
    audit.add_argument("--max-rows", type=STEPS, default=None,
                       help="audit on the first N training rows (default: all)")
    audit.add_argument("--seed", type=_seed, default=0, help="seed of training and canaries")
    audit.add_argument("--controls", action="store_true",
                       help="also audit the method with each planted bug (noise off, noise / "
                            "batch size, clipping removed)")
    audit.set_defaults(handler=_audit)

    data = commands.add_parser("data", help="list, prepare or pin (hash) datasets")
    data_commands = data.add_subparsers(dest="data_command", required=True)
    data_commands.add_parser("list", help="every registered dataset and where it is found")
    prepare = data_commands.add_parser("prepare", help="verify, preprocess and split a dataset")
    prepare.add_argument("name", help="a dataset name (dpminimax data list)")
    prepare.add_argument("--out", required=True, help="output dir (arrays.npz, meta.json)")
    prepare.add_argument("--max-rows", type=STEPS, default=None,
                         help="keep this many rows before splitting (default: all)")
    prepare.add_argument("--split-seed", type=_seed, default=100,
                         help="seed of the train/test split (the workflow's: 100)")
    pin = data_commands.add_parser(
        "hash", help="print the sha256 and size of files, as YAML to paste into the files: "
                     "list of a dataset declaration (docs/datasets.md)")
    pin.add_argument("files", nargs="+", type=Path, metavar="FILE", help="the canonical file(s)")
    data.set_defaults(handler=_data)

    train = commands.add_parser("train", help="train one job from a run config")
    train.add_argument("config", type=Path, help="a run_config.json (as the workflow writes)")
    train.add_argument("--data", required=True, help="prepared data dir (arrays.npz, meta.json)")
    train.add_argument("--out", required=True, help="output dir (written atomically)")
    train.set_defaults(handler=lambda a: _train(a.config, a.data, a.out))

    rerun = commands.add_parser("rerun", help="replay a job from its run_config.json")
    rerun.add_argument("config", type=Path, help="the job's run_config.json")
    rerun.add_argument("--data", default=None, help="prepared data dir (default: the recorded one)")
    rerun.add_argument("--out", default=None, help="write here instead of the recorded dir")
    rerun.set_defaults(handler=lambda a: _train(a.config, a.data, a.out))

    bench = commands.add_parser("bench", help="speed benchmarks")
    bench.add_argument("suite", choices=["kernels", "racodp", "fermi-grid", "jagielski",
                                          "tuning", "workflow", "jobs", "byoa", "lira",
                                          "dpdro"],
                       help="which benchmark (BENCHMARKS.md lists what each measures)")
    bench.add_argument("--json", action="store_true", help="print JSON instead of a table")
    bench.add_argument("--repeats", type=int, default=30, help="timed steps (or runs) per method")
    bench.add_argument("--mode", choices=["estimate", "full"], default="estimate",
                       help="tuning: time the protocol end to end or estimate it")
    bench.add_argument("--configs", type=int, default=None,
                       help="tuning: phase-1 configurations (default: the paper's benchmark)")
    bench.add_argument("--jobs", type=int, default=None,
                       help="fermi-grid: time every method as this many one-thread jobs side "
                            "by side (the workflow's default profile) instead of one process")
    bench.add_argument("--datasets", nargs="+", default=None,
                       help="tuning: datasets (default: the paper's benchmark)")
    bench.add_argument("--epsilons", nargs="+", default=None, help="tuning: epsilons")
    bench.set_defaults(handler=_bench)

    card = commands.add_parser(
        "scorecard", help="regenerate the README scorecard blocks from the reference claims "
                          "tables (papers/<id>/reference/claims_default.csv)")
    card.add_argument("--root", type=Path, default=Path("."), help="the repository root")
    card.add_argument("--check", action="store_true",
                      help="change nothing; exit 1 when a README's block is stale")
    card.set_defaults(handler=_scorecard)
    compare = commands.add_parser(
        "compare", help="leaderboards of a problem family over runs tables, win / tie / loss "
                        "decided by intervals (one split, delta and accountant per cell)")
    compare.add_argument("runs", nargs="+", type=Path, metavar="RUNS.parquet",
                         help="runs tables (results/<paper>/runs.parquet)")
    compare.add_argument("--family", required=True,
                         choices=["fair_classification", "fair_classification_eo", "kl_dro",
                                  "kl_dro_linear", "games",
                                  "hyperparameter_tuning"],
                         help="the problem family (its papers, cells and default metric)")
    compare.add_argument("--metric", default=None,
                         help="a runs-table column (default: the family's)")
    compare.add_argument("--out", required=True, help="output dir")
    compare.add_argument("--delta", type=DELTA, default=None,
                         help="keep only the private runs of this delta")
    compare.add_argument("--accountant", default=None,
                         help="keep only the private runs of this accountant")
    compare.add_argument("--experiments", nargs="+", default=None,
                         help="keep only the runs of these experiments")
    compare.add_argument("--interval", choices=["bootstrap", "t"], default="bootstrap",
                         help="a method's own interval (differences and ranks: bootstrap)")
    compare.add_argument("--draws", type=STEPS, default=1000, help="bootstrap draws")
    compare.add_argument("--tuning-budget", type=STEPS, default=None,
                         help="configurations per method: each scored as its expected best of "
                              "this many (default: each cell's smallest configuration count)")
    compare.set_defaults(handler=_compare)
    return parser


def _compare(args: argparse.Namespace) -> None:
    """Leaderboards of ``--family`` over the runs tables (:func:`.leaderboard.compare`)."""
    from dpminimax.report.compare.leaderboard import compare

    _print(compare(args.runs, args.family, args.out, metric=args.metric, delta=args.delta,
                   accountant=args.accountant, experiments=args.experiments,
                   interval=args.interval, draws=args.draws,
                   tuning_budget=args.tuning_budget))


def _scorecard(args: argparse.Namespace) -> None:
    from dpminimax.report.claims.scorecard import sync_readmes

    stale = [str(path) for path in sync_readmes(args.root, check=args.check)]
    _print({"stale" if args.check else "updated": stale})
    if args.check and stale:
        raise SystemExit(1)


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; an error is one line on stderr and exit status 2 (``--debug``: the
    traceback)."""
    from dpminimax.data.errors import DataError

    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        load_plugins()
        args.handler(args)
    except (ValueError, OSError, LookupError, RuntimeError, DataError) as err:
        if args.debug:
            raise
        message = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        parser.exit(2, f"dpminimax {args.command}: error: {message}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
