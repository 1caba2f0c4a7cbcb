"""A toy paper's plugin (tests/workflow/test_paper_plugin.py): the method, figure and stage a
sixth paper would add, registered from its own folder without editing a shared file."""

from __future__ import annotations

import matplotlib.pyplot as plt

from dpminimax.algorithms.baselines.dp_sgd import DpSgd


class ToySgd(DpSgd):
    """The toy paper's Algorithm 1: DP-SGD (Abadi et al. 2016, Alg. 1) under its own name."""

    name = "toy_sgd"
    label = "Toy SGD"
    paper = "toy"
    source = "the toy paper, Alg. 1"


def accuracy_bars(table, request):
    """The toy paper's Figure 1: mean test accuracy per method and epsilon."""
    means = table.groupby(["method", "epsilon"])["test_accuracy"].mean()
    fig, ax = plt.subplots(figsize=(4, 3))
    ax.bar([f"{method}\neps {eps:g}" for method, eps in means.index], means.to_numpy())
    ax.set_ylabel("Test accuracy")
    return fig


def register(house):
    house.method(ToySgd, family="toy")
    house.figure("toy_accuracy_bars", accuracy_bars)
