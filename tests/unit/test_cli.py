"""The ``dpminimax`` command line prints JSON that agrees with the library."""

from __future__ import annotations

import argparse
import json

import pytest

from dpminimax.cli import build_parser, main
from dpminimax.privacy import dpsgd_event, epsilon


def _run(capsys, *argv):
    assert main(list(argv)) == 0
    return json.loads(capsys.readouterr().out)


def test_account_dpsgd(capsys):
    out = _run(capsys, "account", "dpsgd", "--q", "0.01", "--sigma", "1.1", "--steps", "1000",
               "--delta", "1e-5")
    assert out["accountant"] == "rdp" and out["delta"] == 1e-5
    assert out["epsilon"] == pytest.approx(epsilon(dpsgd_event(0.01, 1.1, 1000), 1e-5, "rdp"))
    assert out["event"]


def test_calibrate_then_account_round_trip(capsys):
    calibrated = _run(capsys, "calibrate", "dpsgd", "--q", "0.02", "--steps", "500",
                      "--epsilon", "3", "--delta", "1e-5", "--accountant", "pld")
    assert calibrated["epsilon_achieved"] <= 3.0
    accounted = _run(capsys, "account", "dpsgd", "--q", "0.02", "--sigma",
                     str(calibrated["sigma"]), "--steps", "500", "--delta", "1e-5",
                     "--accountant", "pld")
    assert accounted["epsilon"] == pytest.approx(calibrated["epsilon_achieved"], rel=1e-6)


def test_data_list(capsys):
    names = _run(capsys, "data", "list")
    assert {"adult", "credit-card", "mnist", "fashion-mnist", "synthetic-fair"} <= set(names)


def test_missing_argument_exits_with_usage():
    with pytest.raises(SystemExit):
        main(["account", "dpsgd", "--q", "0.01"])


def test_account_racodp_reports_sound_and_paper_epsilons(capsys):
    out = _run(capsys, "account", "racodp", "--q", "0.03", "--sigma", "4", "--laplace-scale",
               "4", "--steps", "1000", "--delta", "1e-5")
    assert out["epsilon"] == pytest.approx(1.30995482089787, rel=1e-6)
    assert out["epsilon_pld_product"] == out["epsilon"]
    assert out["epsilon_rdp_general"] == pytest.approx(2.232082651637802, rel=1e-6)
    assert out["epsilon_paper_accounting"] == pytest.approx(1.2754344186060387, rel=1e-6)
    assert out["accounting_gap"] > 0
    assert out["method"] == "pld_product_poisson_subsampled"


def test_account_racodp_done_means_check(capsys):
    """Issue #18: the sound value is within 2% of the tight product PLD (finest grid)."""
    from dpminimax.privacy import pld_product

    out = _run(capsys, "account", "racodp", "--q", "0.02", "--sigma", "3", "--laplace-scale",
               "4", "--steps", "2000", "--delta", "1e-5")
    tight = pld_product.epsilon(0.02, [3.0], [4.0], 2000, 1e-5, 1e-4 / 8)
    assert tight <= out["epsilon"] <= 1.02 * tight
    assert out["epsilon_rdp_general"] > out["epsilon"] > out["epsilon_paper_accounting"]


def test_calibrate_racodp_steps(capsys):
    out = _run(capsys, "calibrate", "racodp", "--q", "0.02", "--sigma", "3", "--laplace-scale",
               "4", "--epsilon", "1", "--delta", "1e-5", "--max-steps", "2000")
    assert out["epsilon_achieved"] <= 1.0 and 1 <= out["steps"] < 2000
    assert out["method"] == "pld_product_poisson_subsampled"
    assert out["epsilon_rdp_general"] > 1.0 and out["epsilon_paper_accounting"] < 1.0


def test_account_racodp_needs_a_histogram_scale(capsys):
    with pytest.raises(SystemExit):
        main(["account", "racodp", "--q", "0.03", "--sigma", "4", "--steps", "10",
              "--delta", "1e-5"])
    assert "--laplace-scale" in capsys.readouterr().err


def _actions(parser):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                yield from _actions(sub)
        elif not isinstance(action, argparse._HelpAction):
            yield parser.prog, action


def test_every_option_and_argument_has_help_text():
    missing = [f"{prog} {action.dest}" for prog, action in _actions(build_parser())
               if not action.help]
    assert missing == []


@pytest.mark.parametrize("argv, says", [
    (["account", "dpsgd", "--q", "2", "--sigma", "1", "--steps", "10", "--delta", "1e-5"],
     "argument --q: must be in (0, 1]"),
    (["account", "dpsgd", "--q", "0.1", "--sigma", "-6", "--steps", "10", "--delta", "1e-5"],
     "argument --sigma: must be in (0, inf)"),
    (["account", "dpsgd", "--q", "0.1", "--sigma", "six", "--steps", "10", "--delta", "1e-5"],
     "argument --sigma: not a number"),
    (["account", "dpsgd", "--q", "0.1", "--sigma", "1", "--steps", "0", "--delta", "1e-5"],
     "argument --steps: must be in (0, 1e+15]"),
    (["account", "dpsgd", "--q", "0.1", "--sigma", "1", "--steps", "10", "--delta", "1"],
     "argument --delta: must be in (0, 1)"),
    (["account", "dpsgd", "--q", "0.1", "--sigma", "1", "--steps", "1000000000000",
      "--delta", "1e-5", "--accountant", "pld"], "use the rdp accountant"),
    (["calibrate", "dpsgd", "--q", "0.1", "--epsilon", "nan", "--delta", "1e-5", "--steps",
      "10"], "argument --epsilon: must be in (0, inf)"),
    (["data", "prepare", "no-such-dataset", "--out", "/tmp/x"], "unknown dataset"),
    (["data", "prepare", "adult", "--out", "/tmp/x", "--max-rows", "0"],
     "argument --max-rows: must be in (0, 1e+15]"),
    (["data", "prepare", "adult", "--out", "/tmp/x", "--split-seed", "-1"],
     "argument --split-seed: must be an integer >= 0, got -1"),
    (["audit", "--method", "dp_sgd", "--data", "/tmp/x", "--epsilon", "1", "--delta", "1e-5",
      "--seed", "-1"], "argument --seed: must be an integer >= 0, got -1"),
    (["audit", "--method", "dp_sdg", "--data", "/tmp/x", "--epsilon", "1", "--delta", "1e-5"],
     "argument --method: unknown method 'dp_sdg'; did you mean 'dp_sgd'"),
    (["account", "--method", "racdp", "--n", "100", "--epsilon", "1", "--delta", "1e-5"],
     "did you mean 'racodp'? `dpminimax methods` lists all"),
    (["account", "--method", "sgda", "--n", "100", "--epsilon", "1", "--delta", "1e-5"],
     "argument --method: unknown method 'sgda': renamed to 'dp_sgda_nonprivate'"),
    (["rerun", "/no/such/run_config.json"], "No such file"),
])
def test_bad_input_is_one_line_and_exit_2(capsys, argv, says):
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert says in err
    assert "Traceback" not in err
    assert len([line for line in err.splitlines() if "error:" in line]) == 1


def test_debug_shows_the_traceback():
    with pytest.raises(ValueError, match="rdp accountant"):
        main(["--debug", "account", "dpsgd", "--q", "0.1", "--sigma", "1", "--steps",
              "1000000000000", "--delta", "1e-5", "--accountant", "pld"])


def test_methods_lists_every_registered_method(capsys):
    from dpminimax.algorithms import DIAGNOSTICS, METHODS

    listed = {entry["name"]: entry for entry in _run(capsys, "methods")}
    assert set(listed) == set(METHODS) | set(DIAGNOSTICS)
    for name in DIAGNOSTICS:
        assert listed[name]["diagnostic"] and not listed[name]["private"]
    for name, cls in METHODS.items():
        assert listed[name]["private"] == cls.private and not listed[name]["diagnostic"]
        assert listed[name]["parameters"] == json.loads(json.dumps(cls.parameters))
        assert (listed[name]["paper"], listed[name]["source"]) == (cls.paper, cls.source)
        assert (listed[name]["task"], listed[name]["attacked"]) == (cls.task.name,
                                                                   cls.task.attacked)


PLANNED_ON_N = ["dp_sgd", "racodp", "dpfermi", "jagielski2019", "tran2021a", "tran2021b",
                "dp_sgda"]


@pytest.mark.parametrize("name", PLANNED_ON_N)
def test_account_method_prints_the_epsilon_of_its_plan(capsys, name):
    from dpminimax.algorithms import get_method
    from dpminimax.algorithms.base import RunSpec
    from dpminimax.privacy.release import releases_of

    params = {"epochs": 2} if name in ("dp_sgd", "dpfermi", "tran2021a", "tran2021b") else {}
    out = _run(capsys, "account", "--method", name, "--params", json.dumps(params), "--n",
               "20000", "--epsilon", "2", "--delta", "1e-5")
    plan = get_method(name).plan(RunSpec(0, 2.0, 1e-5, params), 20000)
    assert out["epsilon"] <= 2.0
    assert out["epsilon"] == pytest.approx(epsilon(plan.event(), 1e-5, out["accountant"]))
    assert [r["name"] for r in out["releases"]] == [r.name for r in releases_of(plan.releases)]
    assert all(r["noise_multiplier"] > 0 for r in out["releases"])
    calibrated = _run(capsys, "calibrate", "--method", name, "--params", json.dumps(params),
                      "--n", "20000", "--epsilon", "2", "--delta", "1e-5")
    assert calibrated == out


def test_account_method_non_private_is_infinite(capsys):
    out = _run(capsys, "account", "--method", "dp_sgd_nonprivate", "--n", "1000", "--delta", "1e-5")
    assert out["epsilon"] == float("inf")
    assert all(r["noise_multiplier"] == 0 for r in out["releases"])


def test_account_method_reads_group_counts_from_data(capsys, tmp_path):
    from dpminimax.data.storage import load_prepared

    _run(capsys, "data", "prepare", "synthetic-fair", "--out", str(tmp_path))
    out = _run(capsys, "account", "--method", "dpfermi_paper", "--data", str(tmp_path),
               "--epsilon", "1", "--delta", "1e-5")
    assert out["accountant"] == "paper_theorem_3_3" and out["rho"] > 0
    assert out["n"] == len(load_prepared(tmp_path).y_train)


@pytest.mark.parametrize("argv, says", [
    (["account", "--method", "dpfermi_paper", "--n", "100", "--epsilon", "1", "--delta",
      "1e-5"], "--data DIR"),
    (["account", "--method", "dp_sgd", "--n", "100", "--delta", "1e-5"], "pass --epsilon"),
    (["account", "--method", "dp_sgd", "--epsilon", "1", "--delta", "1e-5"], "--n"),
    (["account", "--method", "dp_sgd", "--n", "100", "--epsilon", "1", "--delta", "1e-5",
      "--params", "{lr: 1}"], "--params is not JSON"),
    (["account", "--method", "dp_sgd", "--n", "100", "--epsilon", "1", "--delta", "1e-5",
      "--params", '{"no_such": 1}'], "has no parameter(s) ['no_such']"),
    (["account", "--method", "nope", "--n", "100", "--epsilon", "1", "--delta", "1e-5"],
     "unknown method 'nope'"),
    (["account", "dpsgd", "--method", "dp_sgd", "--n", "100", "--delta", "1e-5"], "not both"),
    (["account", "dpsgd", "--q", "0.1", "--delta", "1e-5"], "--sigma, --steps required"),
])
def test_bad_method_plans_are_one_line(capsys, argv, says):
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert says in err and "Traceback" not in err


@pytest.mark.parametrize("method", ["output_perturbation", "dp_bilevel", "dp_sgd_nonprivate"])
def test_audit_refuses_methods_it_cannot_run_in_one_line(capsys, tmp_path, method):
    """Issue 40 item 6: a method on a problem it draws itself ended in an AttributeError."""
    _run(capsys, "data", "prepare", "synthetic-fair", "--out", str(tmp_path))
    with pytest.raises(SystemExit) as exit_info:
        main(["audit", "--method", method, "--data", str(tmp_path), "--epsilon", "1",
              "--delta", "1e-5", "--canaries", "20", "--max-rows", "200"])
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and len(err.strip().splitlines()) == 1, err
    assert ("trains on a problem it draws itself" in err and "dp_sgd, dp_sgda_dro" in err
            if method != "dp_sgd_nonprivate" else "is not private" in err)


def test_audit_prints_the_one_run_audit(capsys, tmp_path):
    _run(capsys, "data", "prepare", "synthetic-fair", "--out", str(tmp_path))
    rows = _run(capsys, "audit", "--method", "dp_sgd", "--data", str(tmp_path), "--epsilon",
                "1", "--delta", "1e-5", "--params", '{"epochs": 2}', "--canaries", "50",
                "--max-rows", "500")
    assert [(row["release"], row["bug"]) for row in rows] == [
        ("all", "none"), *(("gradient", bug) for bug in ("none", "noise_over_2", "noise_over_4"))]
    assert rows[0]["canaries"] == 50 and rows[0]["confidence"] == 0.95
    assert rows[0]["epsilon_lower"] <= rows[0]["epsilon_claimed"] <= 1.0


def test_compare_offers_every_leaderboard_family():
    """The CLI lists the families by hand (it imports no report module to start): the list is
    the leaderboard's."""
    from dpminimax.report.compare.leaderboard import FAMILIES

    commands = next(a for a in build_parser()._actions if a.dest == "command")
    family = next(a for a in commands.choices["compare"]._actions if a.dest == "family")
    assert list(family.choices) == list(FAMILIES)
