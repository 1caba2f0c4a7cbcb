"""SPIDER estimators under differential privacy (paper 004, Algs. 2-3): what the DP-DRO programs
(:mod:`dpminimax.algorithms.dro`) and the SPIDER methods on games
(:mod:`dpminimax.algorithms.minimax.spider_game`) share, defined once.

A step ``t`` makes one or more *draws* (:class:`Draw`): a Poisson batch at the anchor rate
(``anchor_batch_size / n``) or the step rate (``batch_size / n``) and the releases computed
from it. Every ``period`` steps an estimate restarts from an *anchor* (Alg. 2 l. 4 and 10: the
clipped per-example gradients, bound C); in between it adds a *difference* (Alg. 2 l. 6 and 12:
the same examples' gradients at two consecutive iterates, clipped per example at
``min(c ||w_t - w_{t-1}||, 2 C)``, our choice where the paper is silent). A difference release
is planned at bound 2 C and shrunk each step by the public factor :func:`difference_shrink`
(a function of already released iterates: post-processing), its noise with it. The same
schedule gives the release tree the accountant composes (:func:`schedule_tree`, one noise
multiplier for all of it: :func:`calibrated_noise`) and drives the programs, so what is
accounted and what is noised cannot drift apart.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import torch

from dpminimax.kernels.runs import along_runs
from dpminimax.privacy.calibrate import calibrate_release_parameter
from dpminimax.privacy.release import Batch, Part, Release, Repeat

ANCHOR, DIFFERENCE = "anchor", "difference"


@dataclass(frozen=True)
class Draw:
    """One Poisson batch of a step, at the ``rate`` named ("anchor" or "step"), and the names of
    the releases made from it."""

    rate: str
    releases: tuple[str, ...]


Schedule = Callable[[int], tuple[Draw, ...]]


@dataclass(frozen=True)
class Stage:
    """One estimate of a step: the variables it updates (release ``<name>_anchor`` or
    ``<name>_difference`` each) and whether it is a SPIDER (differences between anchors) or a
    fresh gradient every step."""

    names: tuple[str, ...]
    spider: bool


def spider_schedule(period: int, stages: Sequence[Stage], separate_batches: bool) -> Schedule:
    """Step t's draws for ``stages`` in order: a SPIDER stage anchors at t % period == 0 and
    releases differences otherwise. With ``separate_batches`` (Alg. 2) each stage reads its
    own batch, at the anchor rate for an anchor and the step rate for a difference; otherwise
    one batch at the step rate serves every stage (DP-SGDA, PrivateDiff)."""

    def draws(t: int) -> tuple[Draw, ...]:
        kinds = [DIFFERENCE if stage.spider and t % period else ANCHOR for stage in stages]
        named = [tuple(f"{name}_{kind}" for name in stage.names)
                 for stage, kind in zip(stages, kinds, strict=True)]
        if separate_batches:
            return tuple(Draw("anchor" if kind == ANCHOR else "step", releases)
                         for kind, releases in zip(kinds, named, strict=True))
        return (Draw("step", sum(named, ())),)
    return draws


def schedule_tree(schedule: Schedule, period: int, periods: int,
                  releases: Mapping[str, Release], rates: Mapping[str, float]) -> Part:
    """The release tree of ``periods`` repetitions of steps 0..period-1 of ``schedule``:
    consecutive identical draws become one ``Batch`` with a count."""
    parts: list[Batch] = []
    for t in range(period):
        for draw in schedule(t):
            batch = Batch(tuple(releases[name] for name in draw.releases), 1, rates[draw.rate])
            last = parts[-1] if parts else None
            if last is not None and (last.releases, last.sampling_rate) == (
                    batch.releases, batch.sampling_rate):
                parts[-1] = Batch(batch.releases, last.count + 1, batch.sampling_rate)
            else:
                parts.append(batch)
    if len(parts) == 1:
        only = parts[0]
        return Batch(only.releases, only.count * periods, only.sampling_rate)
    return Repeat(tuple(parts), periods)


def steps_and_periods(epochs: float, n: int, batch_size: int, period: int) -> tuple[int, int]:
    """T = ceil(epochs n / b) rounded up to whole periods (epochs count step batches)."""
    periods = max(1, math.ceil(math.ceil(epochs * n / batch_size) / period))
    return periods * period, periods


def sampling_rates(batch_size: int, anchor_batch_size: int, n: int) -> dict[str, float]:
    """The Poisson rates of the two draws: ``step`` b / n and ``anchor`` b_1 / n (at most 1)."""
    return {"step": min(1.0, batch_size / n), "anchor": min(1.0, anchor_batch_size / n)}


#: Calibrated noise multipliers by (schedule key, epsilon, delta, accountant).
_CALIBRATED: dict[tuple, float] = {}


def calibrated_noise(key: tuple, make: Callable[[float], Part], epsilon: float, delta: float,
                     accountant: str) -> float:
    """The noise multiplier shared by every release of the tree ``make(sigma)`` with which it
    meets (epsilon, delta), memoised on ``key`` (what determines the tree's shape)."""
    full = (key, epsilon, delta, accountant)
    if full not in _CALIBRATED:
        _CALIBRATED[full] = calibrate_release_parameter(make, epsilon, delta, accountant)
    return _CALIBRATED[full]


def difference_shrink(bound: torch.Tensor, movement: torch.Tensor, factor: torch.Tensor
                      ) -> torch.Tensor:
    """``min(c ||w_t - w_{t-1}||, 2 C) / (2 C)`` (R,): the shrink of a difference release of
    per-run bound ``bound`` = 2 C (R,) for the iterate movement (R,) and the per-run c (1 where
    the bound is infinite: nothing is clipped)."""
    return torch.where(torch.isinf(bound), torch.ones_like(bound),
                       torch.clamp(factor * movement / bound, max=1.0))


def check_feedback(difference_clip: float, lr: float, sigma: float, d: int,
                   batch_size: int) -> None:
    """Refuse a SPIDER whose difference noise feeds back: a difference release clipped at
    c ||w_t - w_{t-1}|| adds noise of norm about sigma c ||w_t - w_{t-1}|| sqrt(d) / b, which
    moves the next iterate by lr times that, so c lr sigma sqrt(d) / b >= 1 lets the noise grow
    from step to step until the 2C cap (papers/dpdro/README.md, "Deviation: clipping")."""
    factor = difference_clip * lr * sigma * math.sqrt(d) / batch_size
    if factor >= 1:
        raise ValueError(
            f"difference_clip * lr * sigma * sqrt(d) / batch_size = {difference_clip:g}"
            f" * {lr:g} * {sigma:.4g} * sqrt({d}) / {batch_size} = "
            f"{factor:.3g} >= 1: the SPIDER difference noise feeds back; lower difference_clip "
            f"or lr")


def movement(now: Mapping[str, torch.Tensor], before: Mapping[str, torch.Tensor],
             *scalars: torch.Tensor) -> torch.Tensor:
    """||(x_t - x_{t-1}, scalar changes)|| per run (R,)."""
    total = sum((now[k] - before[k]).flatten(start_dim=1).square().sum(dim=1) for k in now)
    for change in scalars:
        total = total + change.square()
    return total.sqrt()


def subtract(a: Mapping[str, torch.Tensor], b: Mapping[str, torch.Tensor]
             ) -> dict[str, torch.Tensor]:
    return {k: a[k] - b[k] for k in a}


def add_to(a: Mapping[str, torch.Tensor], b: Mapping[str, torch.Tensor]
           ) -> dict[str, torch.Tensor]:
    return {k: a[k] + b[k] for k in a}


def descend(params: Mapping[str, torch.Tensor], direction: Mapping[str, torch.Tensor],
            lr: torch.Tensor) -> dict[str, torch.Tensor]:
    """``params - lr_r * direction`` (a new dict; ``params`` is kept as the previous iterate)."""
    return {k: v - along_runs(lr, v) * direction[k] for k, v in params.items()}
