"""Grid expansion of papers/<id>/experiments.yaml and its semantic checks."""

from __future__ import annotations

import copy
import dataclasses
import json
import math
from pathlib import Path

import pytest

from dpminimax.api.training import config_epsilon
from dpminimax.epsilon import Epsilon, EpsilonError
from dpminimax.experiments import (
    ExperimentConfigError,
    expand_jobs,
    load_experiments,
    select_experiments,
    selected_papers,
)

REPO = Path(__file__).resolve().parents[2]

SPEC = {
    "paper": "tiny",
    "title": "t",
    "delta": 1e-5,
    "experiments": {
        "exp": {
            "description": "d",
            "datasets": ["synthetic-fair"],
            "methods": {
                "dp_sgd": {"epsilons": ["0.5", 1, 3.0], "params": {"lr": [0.5, 1.0]}},
                "dp_sgd_nonprivate": {"params": {"lr": 1.0}},
            },
            "scales": {"smoke": {"seeds": [0, 1], "params": {"epochs": 1, "clip": 2.0}},
                       "quick": {"seeds": [0, 1, 2], "epsilons": ["1"]}},
        }
    },
}


def test_jobs_cover_datasets_methods_epsilons():
    jobs = expand_jobs(SPEC, "smoke")
    private = [j for j in jobs if j.method == "dp_sgd"]
    assert [str(j.epsilon) for j in private] == ["0.5", "1", "3"]
    assert {str(j.epsilon) for j in jobs if j.method == "dp_sgd_nonprivate"} == {"inf"}
    assert all(j.seeds == (0, 1) for j in jobs)
    # scale-level params reach the methods that have them, and only those
    assert all(j.params["epochs"] == 1 for j in jobs)
    assert "clip" in private[0].params and "clip" not in jobs[-1].params
    assert private[0].train_dir.startswith("results/tiny/train/exp/synthetic-fair/dp_sgd/eps~")


def test_a_job_carries_its_epsilon_parsed_once_and_writes_its_label():
    """``"0.5"``, ``1`` and ``3.0`` of the YAML are Epsilons on the job; its paths and
    run_config.json carry the canonical label (a string), training reads the value back."""
    jobs = {str(j.epsilon): j for j in expand_jobs(SPEC, "smoke")}
    assert {str(e): float(j.epsilon) for e, j in jobs.items()} == {
        "0.5": 0.5, "1": 1.0, "3": 3.0, "inf": math.inf}
    three, inf = jobs["3"], jobs["inf"]
    assert isinstance(three.epsilon, Epsilon) and three.epsilon == Epsilon.parse("3")
    assert three.train_dir == "results/tiny/train/exp/synthetic-fair/dp_sgd/eps~3"
    assert three.attack_path.endswith("/dp_sgd/eps~3/attack.parquet")
    assert inf.train_dir.endswith("/dp_sgd_nonprivate/eps~inf")
    config = three.run_config("v")
    assert config["epsilon"] == "3" and json.loads(json.dumps(config))["epsilon"] == "3"
    assert config_epsilon(config) == 3.0 and config_epsilon(inf.run_config("v")) == math.inf
    with pytest.raises(EpsilonError, match=r"^run_config.json: epsilon: epsilon is not a number"):
        config_epsilon({**config, "epsilon": "3,0"})
    with pytest.raises(TypeError, match="must be an Epsilon"):
        dataclasses.replace(three, epsilon="3")


def test_epsilon_params_override_params_per_epsilon_and_scale_params_win():
    spec = copy.deepcopy(SPEC)
    spec["experiments"]["exp"]["methods"]["dp_sgd"]["epsilon_params"] = {
        "1.0": {"lr": 2.0, "clip": 9.0}, "3": {"lr": 3.0}}
    jobs = {str(j.epsilon): j.params for j in expand_jobs(spec, "smoke")
            if j.method == "dp_sgd"}
    assert jobs["1"]["lr"] == 2.0 and jobs["3"]["lr"] == 3.0 and jobs["0.5"]["lr"] == [0.5, 1.0]
    assert jobs["1"]["clip"] == 2.0  # the smoke scale's clip overrides the epsilon's


def test_a_scales_method_params_win_for_that_method_alone():
    """``scales.<s>.methods.<m>.params`` override the scale's params for method m only (E8's
    paper scale: d_x up to 32 for the gradient tuners, DP-Grid kept at d_x = 2)."""
    spec = copy.deepcopy(SPEC)
    spec["experiments"]["exp"]["scales"]["smoke"]["methods"] = {"dp_sgd": {"params": {
        "epochs": 3, "lr": 0.25}}}
    jobs = expand_jobs(spec, "smoke")
    assert {(j.params["epochs"], j.params["lr"]) for j in jobs if j.method == "dp_sgd"} == {
        (3, 0.25)}
    assert {(j.params["epochs"], j.params["lr"]) for j in jobs
            if j.method == "dp_sgd_nonprivate"} == {(1, 1.0)}
    for override, message in (({"sgdx": {"params": {}}}, "methods.sgdx: not a method"),
                              ({"dp_sgd_nonprivate": {"params": {"clip": 1.0}}},
                               "methods.dp_sgd_nonprivate.params.clip")):
        spec["experiments"]["exp"]["scales"]["smoke"]["methods"] = override
        with pytest.raises(ExperimentConfigError, match=message):
            expand_jobs(spec, "smoke")


def test_dataset_override_replaces_datasets_of_the_same_family_only():
    spec = copy.deepcopy(SPEC)
    spec["experiments"]["images"] = {**copy.deepcopy(SPEC["experiments"]["exp"]),
                                     "datasets": ["utkface"]}
    spec["experiments"]["exp"]["datasets"] = ["adult", "credit-card"]

    def datasets(override):
        jobs = expand_jobs(spec, "smoke", dataset_override=override)
        return {exp: sorted({j.dataset for j in jobs if j.experiment == exp})
                for exp in ("exp", "images")}

    assert datasets(["synthetic-fair"]) == {"exp": ["synthetic-fair"], "images": ["utkface"]}
    assert datasets(["mnist", "heart"]) == {"exp": ["heart"], "images": ["mnist"]}
    assert datasets(None) == {"exp": ["adult", "credit-card"], "images": ["utkface"]}
    with pytest.raises(ExperimentConfigError, match="dataset_override: unknown dataset 'nope'"):
        expand_jobs(spec, "smoke", dataset_override=["nope"])


def test_scale_epsilon_subset():
    jobs = expand_jobs(SPEC, "quick")
    assert {str(j.epsilon) for j in jobs if j.method == "dp_sgd"} == {"1"}


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda s: s["experiments"]["exp"]["datasets"].append("nope"), "datasets[1]"),
        (lambda s: s["experiments"]["exp"]["methods"].update(sgdx={}), "sgdx"),
        (lambda s: s["experiments"]["exp"]["methods"]["dp_sgd"].update(epsilons=[-1]),
         "epsilons[0]: epsilon must be > 0"),
        (lambda s: s["experiments"]["exp"]["methods"]["dp_sgd"].update(epsilons=["inf"]),
         "dp_sgd_nonprivate"),
        (lambda s: s["experiments"]["exp"]["methods"]["dp_sgd"].update(epsilons=[1, "1.0"]),
         "epsilons[1]: duplicate"),
        # issue #41: every epsilon parsed once, an error naming the key
        (lambda s: s["experiments"]["exp"]["methods"]["dp_sgd"].update(epsilons=[1, "one"]),
         "experiments.exp.methods.dp_sgd.epsilons[1]: epsilon is not a number: 'one'"),
        (lambda s: s["experiments"]["exp"]["methods"]["dp_sgd"].update(epsilons=["nan"]),
         "experiments.exp.methods.dp_sgd.epsilons[0]: epsilon must be > 0, got nan"),
        (lambda s: s["experiments"]["exp"]["methods"]["dp_sgd"].update(epsilons=[1.2345678]),
         "epsilons[0]: 1.2345678 has more than the 6 significant digits of its label '1.23457'"),
        (lambda s: s["experiments"]["exp"]["scales"]["smoke"].update(epsilons=["1", "x"]),
         "experiments.exp.scales.smoke.epsilons[1]: epsilon is not a number: 'x'"),
        (lambda s: s["experiments"]["exp"]["methods"]["dp_sgd"].update(
            epsilon_params={"two": {"lr": 1.0}}),
         "experiments.exp.methods.dp_sgd.epsilon_params.two: epsilon is not a number: 'two'"),
        (lambda s: s.update(delta=1.5), "delta must be in (0, 1)"),
        (lambda s: s["experiments"]["exp"]["scales"]["smoke"].update(seeds=[]), "seeds"),
        (lambda s: s["experiments"]["exp"]["scales"]["smoke"]["params"].update(lrx=1),
         "params.lrx"),
        (lambda s: s["experiments"]["exp"]["methods"]["dp_sgd_nonprivate"]["params"].update(clip=1),
         "'clip'"),
        (lambda s: s["experiments"]["exp"]["scales"].pop("smoke"), "no entry for scale"),
        (lambda s: s["experiments"]["exp"]["methods"]["dp_sgd"].update(
            epsilon_params={"2": {"lr": 1.0}}), "epsilon_params.2: not one of"),
        (lambda s: s["experiments"]["exp"]["methods"]["dp_sgd"].update(
            epsilon_params={"1": {"lrx": 1.0}}), "'lrx'"),
        # issue #24: values checked when the DAG is built, naming the key and what it must be
        (lambda s: s["experiments"]["exp"]["scales"]["smoke"]["params"].update(batch_size=0),
         "parameter 'batch_size' must be an integer >= 1, got 0"),
        (lambda s: s["experiments"]["exp"]["methods"]["dp_sgd"]["params"].update(
            lr=[0.5, float("nan")]), "parameter 'lr' must be a number >= 0, got nan"),
        (lambda s: s["experiments"]["exp"]["methods"]["dp_sgd"]["params"].update(
            accountant="moments"), "parameter 'accountant' must be one of ['rdp', 'pld']"),
        (lambda s: s["experiments"]["exp"].update(figures=["no_such_figure"]),
         "figures[0]: unknown figure 'no_such_figure'"),
        (lambda s: s["experiments"]["exp"].update(tables=["no_such_table"]),
         "tables[0]: unknown table 'no_such_table'"),
        (lambda s: s["experiments"]["exp"]["methods"].update(
            dp_sgda={"epsilons": [1], "params": {}}),
         "methods: mixes methods on synthetic problems ['dp_sgda'] with methods on datasets"),
    ],
)
def test_semantic_errors_name_the_key(mutate, message):
    spec = copy.deepcopy(SPEC)
    mutate(spec)
    with pytest.raises(ExperimentConfigError) as err:
        expand_jobs(spec, "smoke", source="papers/tiny/experiments.yaml")
    assert message in str(err.value)
    assert "papers/tiny/experiments.yaml" in str(err.value)


PROBLEM_SPEC = {
    "paper": "tiny", "delta": 1e-7,
    "experiments": {"rates": {
        "datasets": ["p1_least_squares", "g1_quadratic_game"],
        "methods": {"output_perturbation": {"epsilons": [0.5], "params": {"n": [256, 512]}},
                    "exact_solution": {"params": {"n": [256, 512]}}},
        "scales": {"smoke": {"seeds": [0, 1]}}}},
}


def test_problem_experiments_name_the_problem_where_a_dataset_goes():
    """A method that draws its own data runs on the problems listed as datasets: the job's
    ``problem`` parameter is its dataset, and it is not attacked."""
    jobs = expand_jobs(PROBLEM_SPEC, "smoke", dataset_override=["adult"])
    assert sorted((j.dataset, j.method, str(j.epsilon)) for j in jobs) == [
        ("g1_quadratic_game", "exact_solution", "inf"),
        ("g1_quadratic_game", "output_perturbation", "0.5"),
        ("p1_least_squares", "exact_solution", "inf"),
        ("p1_least_squares", "output_perturbation", "0.5")]
    assert all(j.params["problem"] == j.dataset and not j.attacked for j in jobs)
    assert all(j.attacked for j in expand_jobs(SPEC, "smoke"))


def test_a_problem_experiment_refuses_a_dataset_and_the_reverse():
    spec = copy.deepcopy(PROBLEM_SPEC)
    spec["experiments"]["rates"]["datasets"].append("adult")
    with pytest.raises(ExperimentConfigError, match=r"datasets\[2\]: unknown problem 'adult'"):
        expand_jobs(spec, "smoke")
    spec = copy.deepcopy(SPEC)
    spec["experiments"]["exp"]["datasets"] = ["p1_least_squares"]
    with pytest.raises(ExperimentConfigError, match="unknown dataset 'p1_least_squares'"):
        expand_jobs(spec, "smoke")


def test_the_shipped_grids_expand_at_every_scale():
    for path in sorted((REPO / "papers").glob("*/experiments.yaml")):
        spec = load_experiments(path)
        for scale in ("smoke", "quick", "paper"):
            assert expand_jobs(spec, scale, source=str(path)), (path, scale)


TUNED = copy.deepcopy(SPEC)
TUNED["experiments"]["exp"]["methods"] = {
    "racodp": {"epsilons": ["1"], "params": {"gamma": [0.05, 0.1], "lr": 0.5},
               "tuning": {"cell": ["gamma"], "search": {"lr_dual": {"log_uniform": [0.01, 1]}},
                          "configs": 40, "seeds": 5}},
}
TUNED["experiments"]["exp"]["scales"]["smoke"] = {"seeds": [0], "tuning": {"configs": 2,
                                                                         "seeds": 1}}


def test_tuning_blocks_are_applied_only_in_protocol_mode_with_the_scale_overrides():
    untuned = expand_jobs(TUNED, "smoke")
    assert [job.tuned for job in untuned] == [False]
    assert "tuning" not in untuned[0].run_config("v")
    (job,) = expand_jobs(TUNED, "smoke", tuning="protocol")
    assert job.tuned and job.tuning["configs"] == 2 and job.tuning["seeds"] == 1
    assert job.run_config("v")["tuning"]["search"] == {"lr_dual": {"log_uniform": [0.01, 1]}}
    assert job.tune_dir == "results/tiny/tune/exp/synthetic-fair/racodp/eps~1"
    (quick,) = expand_jobs(TUNED, "quick", tuning="protocol")
    assert quick.tuning["configs"] == 40


@pytest.mark.parametrize("change, message", [
    (lambda m: m["tuning"]["search"].update(gamma={"values": [0.1]}), "both a cell and searched"),
    (lambda m: m["tuning"].update(cell=["clip"]), "not among the method's params"),
    (lambda m: m["params"].update(clip=[1.0, 3.0]), "neither searched nor a cell"),
    (lambda m: m["tuning"]["search"].update(lr={"uniform": [1, 0]}), "low <= high"),
])
def test_malformed_tuning_blocks_name_the_key(change, message):
    spec = copy.deepcopy(TUNED)
    change(spec["experiments"]["exp"]["methods"]["racodp"])
    with pytest.raises(ExperimentConfigError, match=message):
        expand_jobs(spec, "smoke", tuning="protocol")


def test_unknown_tuning_mode_is_an_error():
    with pytest.raises(ExperimentConfigError, match="tuning: must be one of"):
        expand_jobs(TUNED, "smoke", tuning="bayesian")


def test_an_experiment_may_set_its_own_delta():
    spec = copy.deepcopy(SPEC)
    spec["experiments"]["exp"]["delta"] = 1e-9
    assert {job.delta for job in expand_jobs(spec, "smoke")} == {1e-9}
    assert {job.delta for job in expand_jobs(SPEC, "smoke")} == {float(SPEC["delta"])}
    spec["experiments"]["exp"]["delta"] = 2.0
    with pytest.raises(ExperimentConfigError, match="exp.delta"):
        expand_jobs(spec, "smoke")


@pytest.mark.parametrize("selection, papers", [
    (None, ["racodp", "dpfermi", "byoa"]),
    ({}, ["racodp", "dpfermi", "byoa"]),
    ({"racodp": ["fig4_dp"]}, ["racodp"]),  # issue 40 item 8: c7eb000 ran the other two too
    ({"byoa": "all", "dpfermi": ["x"], "bilevel": ["y"]}, ["dpfermi", "byoa"]),
])
def test_a_selection_runs_only_the_papers_it_names(selection, papers):
    assert selected_papers(["racodp", "dpfermi", "byoa"], selection) == papers


def test_a_papers_selection_all_keeps_every_experiment():
    spec = {"paper": "p", "experiments": {"a": {}, "b": {}}}
    assert select_experiments(spec, "all") == spec
    assert list(select_experiments(spec, ["b"])["experiments"]) == ["b"]
