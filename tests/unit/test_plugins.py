"""Paper plugins (dpminimax.plugins, issue #41 item 3): what ``register(house)`` adds, the
training code fingerprint that covers the plugin files, and the one-line refusals of a clash, a
missing file and a plugin without ``register``."""

from __future__ import annotations

import pytest

from dpminimax import plugins
from dpminimax.algorithms import CONTROLS, FAMILIES, METHODS, RunSpec, get_method
from dpminimax.problems import BILEVEL_PROBLEMS, PROBLEMS
from dpminimax.problems.least_squares import LeastSquares
from dpminimax.problems.ridge_tuning import RidgeTuning
from dpminimax.provenance import train_code_fingerprint
from dpminimax.report.registry import FIGURES, TABLES, get_drawer, get_table

PLUGIN = """
from dpminimax.algorithms.base import nonprivate_twin
from dpminimax.algorithms.baselines.dp_sgd import DpSgd
from dpminimax.problems.least_squares import LeastSquares
from dpminimax.problems.ridge_tuning import RidgeTuning


class PluggedSgd(DpSgd):
    name = "plugged_sgd"


PluggedTwin = nonprivate_twin(PluggedSgd, "PluggedTwin", name="plugged_sgd_nonprivate",
                              label="Plugged SGD (non-private)", doc="No clip, no noise.",
                              fixed={"clip": float("inf")})


def draw(table, request):
    return None


def register(house):
    house.method(PluggedSgd, family="plugged")
    house.method(PluggedTwin, family="plugged")
    house.problem("plugged_least_squares", LeastSquares)
    house.problem("plugged_ridge_tuning", RidgeTuning)
    house.figure("plugged_figure", draw)
    house.table("plugged_table", len)
"""


@pytest.fixture
def house(monkeypatch, tmp_path):
    """A plugin file in ``$DPMINIMAX_PLUGINS`` and, after the test, the registries as they were
    (a plugin adds to them for the life of the process)."""
    saved = [(registry, dict(registry)) for registry in
             (METHODS, CONTROLS, FAMILIES, PROBLEMS, BILEVEL_PROBLEMS, FIGURES, TABLES)]
    monkeypatch.setattr(plugins, "_LOADED", {})
    monkeypatch.setattr(plugins, "_ENTRY_POINTS_READ", [])
    path = tmp_path / "toy" / "plugin.py"
    path.parent.mkdir()
    path.write_text(PLUGIN)
    monkeypatch.setenv(plugins.ENV_VAR, str(path))
    yield path
    for registry, snapshot in saved:
        registry.clear()
        registry.update(snapshot)


def test_a_plugin_registers_methods_controls_problems_figures_and_tables(house):
    assert plugins.load_plugins() == (str(house),)
    assert get_method("plugged_sgd").private and not get_method("plugged_sgd_nonprivate").private
    assert FAMILIES["plugged"] == ("plugged_sgd", "plugged_sgd_nonprivate")
    assert get_method("plugged_sgd_noise_off").control == "noise_off"
    assert "plugged_sgd_nonprivate_noise_off" not in CONTROLS
    assert PROBLEMS["plugged_least_squares"] is LeastSquares
    assert BILEVEL_PROBLEMS["plugged_ridge_tuning"] is RidgeTuning
    assert get_drawer("plugged_figure").__name__ == "draw" and get_table("plugged_table") is len
    # the registered method plans as its base class does
    plan = get_method("plugged_sgd").plan(RunSpec(0, 1.0, 1e-5, {"epochs": 1}), 1000)
    base = get_method("dp_sgd").plan(RunSpec(0, 1.0, 1e-5, {"epochs": 1}), 1000)
    assert plan.releases == base.releases
    assert plugins.load_plugins() == (str(house),)  # once per process


def test_the_training_fingerprint_covers_the_plugin_files(house, monkeypatch):
    with_plugin = train_code_fingerprint()
    house.write_text(PLUGIN + "\n# edited\n")
    assert train_code_fingerprint() != with_plugin
    monkeypatch.delenv(plugins.ENV_VAR)
    assert train_code_fingerprint() not in (with_plugin, "")


def test_a_name_that_exists_is_refused_naming_the_plugin(house):
    house.write_text(PLUGIN.replace('name = "plugged_sgd"', 'name = "dp_sgd"'))
    with pytest.raises(plugins.PluginError, match=r"plugin .*plugin.py: method 'dp_sgd' "
                                                  r"exists already; rename it"):
        plugins.load_plugins()
    assert METHODS["dp_sgd"].__name__ == "DpSgd"


@pytest.mark.parametrize("text, message", [
    ("x = 1\n", r"no function register\(house\); define one"),
    (None, r"no plugin file .*missing.py; remove it or create it")])
def test_a_broken_plugin_is_one_line(house, monkeypatch, text, message):
    if text is None:
        monkeypatch.setenv(plugins.ENV_VAR, str(house.parent / "missing.py"))
    else:
        house.write_text(text)
    with pytest.raises(plugins.PluginError, match=message):
        plugins.load_plugins()


def test_no_plugin_registers_nothing(monkeypatch):
    monkeypatch.setattr(plugins, "_LOADED", {})
    monkeypatch.delenv(plugins.ENV_VAR, raising=False)
    before = dict(METHODS)
    assert plugins.load_plugins() == () and METHODS == before


def test_an_entry_point_registers_once_per_process(house, monkeypatch):
    """An installed package's ``dpminimax.papers`` entry point is registered like a file; the
    entry points are read once per process."""
    registered, scans = [], []

    class Entry:
        name = "toy_package"

        def load(self):
            return lambda house: registered.append(house.source)

    def entry_points(group):
        scans.append(group)
        return [Entry()]

    monkeypatch.setattr(plugins.importlib.metadata, "entry_points", entry_points)
    monkeypatch.delenv(plugins.ENV_VAR)
    assert plugins.load_plugins() == plugins.load_plugins() == ("entry point toy_package",)
    assert registered == ["entry point toy_package"] and scans == [plugins.ENTRY_POINT_GROUP]


def test_the_estimator_finds_a_plugin_method_by_name_alone(house):
    """The estimator's front door loads the plugins before it looks the name up."""
    from dpminimax.estimator import needs_sensitive

    assert needs_sensitive("plugged_sgd") is False
