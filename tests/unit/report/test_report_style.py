"""The shared figure style: one look per method across every figure."""

import matplotlib as mpl

from dpminimax.report.style import base_method, method_style, paper_style, series_styles


def test_known_method_keeps_its_style_in_every_figure():
    alone = series_styles(["dpfermi"])["dpfermi"]
    together = series_styles(["dp_sgd_nonprivate", "dp_sgd", "dpfermi"])["dpfermi"]
    assert alone == together == method_style("dpfermi")
    assert alone.label == "DP-FERMI"


def test_unknown_method_gets_a_stable_style():
    assert method_style("someone2024") == method_style("someone2024")
    assert method_style("someone2024").label == "someone2024"


def test_variants_share_the_hue_and_differ_in_shade():
    names = ["dpfermi [lam=0.1]", "dpfermi [lam=1.0]", "dp_sgd"]
    styles = series_styles(names)
    assert list(styles) == ["dpfermi [lam=0.1]", "dpfermi [lam=1.0]", "dp_sgd"]
    first, second = styles["dpfermi [lam=0.1]"], styles["dpfermi [lam=1.0]"]
    assert first.color != second.color and first.linestyle != second.linestyle
    assert first.label == "DP-FERMI [lam=0.1]" and first.marker == second.marker
    assert base_method("dpfermi [lam=0.1]") == "dpfermi"


def test_paper_style_is_scoped():
    before = mpl.rcParams["pdf.fonttype"]
    with paper_style():
        assert mpl.rcParams["pdf.fonttype"] == 42
    assert mpl.rcParams["pdf.fonttype"] == before


def test_every_registered_method_has_a_label_of_its_own():
    """Figures name methods by their report-side label (report jobs do not import the
    algorithms): a method registered without one would be drawn under its bare name."""
    from dpminimax.algorithms import METHODS

    assert all(method_style(name).label != name for name in METHODS)
