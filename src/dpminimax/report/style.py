"""The shared look of every figure: method colours, markers, labels and the rcParams context.

A method keeps its colour and marker in every figure of every paper. Series that are variants of a
method (``"dpfermi [lam=1.0]"``, one per swept hyper-parameter value) keep the method's hue, with
shades from dark to light and distinct line styles.
"""

from __future__ import annotations

import contextlib
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import matplotlib as mpl
import numpy as np
import seaborn as sns
from matplotlib.colors import to_rgb

# Okabe-Ito / seaborn "colorblind" hues; the papers' own methods get the strongest ones.
_METHODS: dict[str, tuple[str, str, str]] = {  # name -> (label, colour, marker)
    "racodp": ("RaCO-DP", "#0072B2", "o"),
    "dpfermi": ("DP-FERMI", "#D55E00", "s"),
    "dpfermi_paper": ("DP-FERMI (Thm. 3.3, sens.-attr. DP)", "#F0A06A", "s"),
    "dpfermi_code": ("DP-FERMI (released code v1)", "#A63603", "s"),
    "dpfermi_nonprivate": ("Non-private FERMI", "#7F2704", "s"),
    "dp_sgda": ("DP-SGDA", "#009E73", "^"),
    "dp_sgda_nonprivate": ("SGDA (non-private)", "#222222", "^"),
    "dp_sgda_dro": ("DP-SGDA", "#009E73", "^"),
    "privatediff_dro": ("PrivateDiff", "#CC79A7", "D"),
    "dp_double_spider": ("DP Double-SPIDER", "#0072B2", "o"),
    "dp_recursive_spider": ("DP Recursive-SPIDER", "#D55E00", "s"),
    "scdro": ("SCDRO (non-private)", "#222222", "*"),
    "dp_double_spider_nonprivate": ("Double-SPIDER (non-private)", "#5A9BD4", "o"),
    "dp_recursive_spider_nonprivate": ("Recursive-SPIDER (non-private)", "#F08A4B", "s"),
    "dp_sgda_dro_control": ("DP-SGDA (noiseless control)", "#66C2A5", "^"),
    "privatediff_dro_control": ("PrivateDiff (noiseless control)", "#E7A9CF", "D"),
    "dp_double_spider_control": ("DP Double-SPIDER (noiseless control)", "#5A9BD4", "o"),
    "dp_recursive_spider_control": ("DP Recursive-SPIDER (noiseless control)", "#F08A4B",
                                    "s"),
    "byoa": ("BYOA", "#0072B2", "o"),
    "output_perturbation": ("Output perturbation (BYOA Alg. 1 / 3)", "#0072B2", "o"),
    "phased_output_perturbation": ("Phased output perturbation (BYOA Alg. 2)", "#0072B2", "s"),
    "exact_solution": ("Exact ERM / saddle point (non-private)", "#222222", "*"),
    "phased_exact": ("Phased regularized ERM (non-private)", "#222222", "d"),
    "phased_minimax_output_perturbation": ("Phased output perturbation (BYOA Algs. 4 o 5)",
                                           "#0072B2", "D"),
    "phased_minimax_exact": ("Phased regularized saddle points (non-private)", "#222222", "d"),
    "csc_output_perturbation": ("C-SC phased output perturbation (BYOA Cor. 4.9)", "#0072B2",
                                "^"),
    "csc_exact": ("Phased regularized C-SC saddle points (non-private)", "#222222", "d"),
    "ridge_output_perturbation": ("Single-phase output perturbation + ridge (B1 / B9)",
                                  "#D55E00", "p"),
    "dp_sgd_bassily2019": ("DP-SGD, Bassily et al. 2019 (B2)", "#56B4E9", "v"),
    "phased_sgd": ("Phased SGD, Feldman et al. 2020 (B3)", "#E69F00", "P"),
    "phased_sgd_nonprivate": ("Phased SGD (non-private)", "#F5C26B", "P"),
    "nseg": ("NSEG, Boob & Guzmán 2021 (B7)", "#CC79A7", "X"),
    "nseg_nonprivate": ("Stochastic extragradient (non-private)", "#E2A9CB", "X"),
    "dp_double_spider_game": ("DP Double-SPIDER, problem-generic (paper 004, Alg. 2)", "#009E73",
                              "o"),
    "dp_double_spider_game_nonprivate": ("Double-SPIDER, problem-generic (non-private)", "#66C2A5",
                                         "o"),
    "privatediff_game": ("PrivateDiff, problem-generic (Zhang et al.)", "#F0E442", "D"),
    "privatediff_game_nonprivate": ("PrivateDiff, problem-generic (non-private)", "#F6EE8F", "D"),
    "bilevel": ("DP bilevel", "#0072B2", "o"),
    "dp_bilevel": ("DP bilevel, Alg. 1 + output perturbation (A1-OP)", "#0072B2", "o"),
    "dp_bilevel_locgd": ("DP bilevel, Alg. 1 + DP-Loc-GD (A1-LocGD)", "#D55E00", "s"),
    "dp_bilevel_gd": ("DP bilevel, Alg. 1 + DP-GD, M = 1 (A1-GD)", "#CC79A7", "^"),
    "dp_bilevel_locgd_warm": ("DP bilevel, Alg. 1 + DP-Loc-GD, warm start (A7)", "#009E73",
                              "D"),
    "np_pen": ("Penalty method, exact inner (NP-Pen, non-private)", "#222222", "d"),
    "np_aid": ("Exact hypergradient descent (NP-AID, non-private)", "#666666", "*"),
    "dp_bilevel_minibatch": ("DP bilevel, Alg. 3: Poisson mini-batch outer (A3-OP)", "#E69F00",
                             "v"),
    "dp_bilevel_minibatch_locsgd": ("DP bilevel, Alg. 3 + DP-Loc-SGD (Alg. 4)", "#CC79A7", "P"),
    "dp_aid": ("DP-AID: private inner + Eq. (1) hypergradient (derived)", "#009E73", "D"),
    "bilevel_d1": ("D1: exact inner + outer noise (diagnostic, NOT private)", "#56B4E9", "<"),
    "bilevel_d2": ("D2: private inner, σ = 0 (diagnostic, NOT private)", "#CC79A7", ">"),
    "bilevel_naive_outer": ("Naive outer noise, exact inner (NOT private)", "#B00020", "x"),
    "dp_bilevel_pp": ("Alg. 1 (A1-OP), outer step as post-processing (σ = 0)", "#56B4E9", "s"),
    "sec7_paper_sign": ("Section 7 as printed: sign flipped (A10, non-private)", "#B00020",
                        "x"),
    "dp_grid": ("DP-Grid (OP fits, report-noisy-min)", "#D55E00", "^"),
    "fixed_omega": ("Fixed ω = ω_min, OP fit", "#E69F00", "v"),
    "ps_tuning": ("Papernot & Steinke 2022 (geometric repetition)", "#CC79A7", "D"),
    "np_grid": ("Grid search (non-private)", "#999999", "^"),
    "dp_sgd": ("DP-SGD", "#56B4E9", "v"),
    "tran2021a": ("Tran et al. 2021a", "#E69F00", "P"),
    "tran2021b": ("Tran et al. 2021b", "#999933", "X"),
    "tran2021a_nonprivate": ("Tran et al. 2021a (non-private)", "#F5C26B", "P"),
    "tran2021b_nonprivate": ("Tran et al. 2021b (non-private)", "#CCCC88", "X"),
    "jagielski2019": ("Jagielski et al. 2019", "#8C564B", "h"),
    "jagielski2019_nonprivate": ("Jagielski et al. 2019 (non-private)", "#C49C94", "h"),
    "dp_sgd_nonprivate": ("Non-private", "#222222", "*"),
    "racodp_nonprivate": ("Non-private SGDA", "#222222", "d"),
}
_FALLBACK_COLOURS = sns.color_palette("colorblind", 10).as_hex()
_FALLBACK_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "h", "<", ">")
_LINESTYLES = ("-", "--", "-.", ":")

PANEL_SIZE = (3.4, 2.8)  # inches per panel
SAVE_DPI = 200
BAND_ALPHA = 0.18
CEILING_COLOUR = "#000000"
CHANCE_COLOUR = "#808080"

RC_PARAMS = {
    "font.size": 9.5,
    "axes.titlesize": 10.5,
    "axes.labelsize": 10,
    "xtick.labelsize": 8.5,
    "ytick.labelsize": 8.5,
    "legend.fontsize": 8.5,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.alpha": 0.35,
    "grid.linewidth": 0.6,
    "lines.linewidth": 1.6,
    "lines.markersize": 5.5,
    "pdf.fonttype": 42,  # embed TrueType: editable text, accepted by publishers
    "ps.fonttype": 42,
}


@dataclass(frozen=True)
class SeriesStyle:
    """How one series (a method, or a variant of it) is drawn."""

    label: str
    color: tuple[float, float, float]
    marker: str
    linestyle: str = "-"


#: The name suffix of a private method's noiseless clipped control
#: (:func:`dpminimax.algorithms.base.noise_off_control`).
NOISE_OFF_SUFFIX = "_noise_off"


def base_method(series: str) -> str:
    """The method a series belongs to: ``"dpfermi [lam=1.0]"`` -> ``"dpfermi"``."""
    return series.split(" [", 1)[0]


def method_style(method: str) -> SeriesStyle:
    """The fixed style of ``method``; a noiseless control (``<method>_noise_off``) its private
    method's, lighter and labelled so; unknown names get a stable colour derived from the name."""
    private = method.removesuffix(NOISE_OFF_SUFFIX)
    if private != method and private in _METHODS:
        base = method_style(private)
        return SeriesStyle(f"{base.label} (noise off)", _shade(base.color, 0.45), base.marker)
    if method in _METHODS:
        label, colour, marker = _METHODS[method]
    else:
        index = zlib.crc32(method.encode())
        label = method
        colour = _FALLBACK_COLOURS[index % len(_FALLBACK_COLOURS)]
        marker = _FALLBACK_MARKERS[index % len(_FALLBACK_MARKERS)]
    return SeriesStyle(label, to_rgb(colour), marker)


def series_styles(series: Iterable[str]) -> dict[str, SeriesStyle]:
    """Styles of the given series, ordered by method (the papers' methods first), then name."""
    known = list(_METHODS)
    order = lambda name: (known.index(b) if (b := base_method(name)) in known else len(known), name)
    ordered = sorted(set(series), key=order)
    styles = {}
    for method in dict.fromkeys(map(base_method, ordered)):
        variants = [name for name in ordered if base_method(name) == method]
        base = method_style(method)
        shifts = np.linspace(-0.4, 0.4, len(variants)) if len(variants) > 1 else [0.0]
        for i, (name, shift) in enumerate(zip(variants, shifts, strict=True)):
            styles[name] = SeriesStyle(
                label=base.label + name[len(method):],
                color=_shade(base.color, shift),
                marker=base.marker,
                linestyle=_LINESTYLES[i % len(_LINESTYLES)],
            )
    return styles


@contextlib.contextmanager
def paper_style() -> Iterator[None]:
    """rcParams of a paper figure (seaborn "ticks" + "paper" context, larger fonts)."""
    rc = {**sns.axes_style("ticks"), **sns.plotting_context("paper"), **RC_PARAMS}
    with mpl.rc_context(rc):
        yield


def _shade(colour: tuple[float, float, float], shift: float) -> tuple[float, float, float]:
    """Mix ``colour`` with black (``shift < 0``) or white (``shift > 0``) by ``|shift|``."""
    target = np.ones(3) if shift > 0 else np.zeros(3)
    mixed = (1 - abs(shift)) * np.asarray(colour) + abs(shift) * target
    return tuple(float(c) for c in mixed)
