"""Releases: the noisy sums a method publishes, each of which both adds its noise and reports its
mechanism, so the noise drawn and the noise accounted cannot differ (issue #17, item 1).

A :class:`Release` is one run's release of a sum of per-example contributions whose norm is
bounded by ``sensitivity`` (l2 for ``gaussian``, l1 for ``laplace``, l-infinity for
``exponential``; ``inf`` = not clipped), with noise of scale ``noise_multiplier * sensitivity``
(``noise_multiplier`` 0: no noise, the non-private twin). Its :meth:`~Release.event` is the
dp_accounting mechanism of that release. A release with ``noise_off`` (:func:`silenced`) keeps
its planned noise multiplier but adds no noise and claims no privacy: a noiseless control's.
An ``exponential`` release publishes only the index of the smallest noisy score
(report-noisy-min with Gumbel noise, :meth:`BatchedRelease.select_min`), never the noisy scores.

A method's plan arranges releases in a tree whose event is derived, never written by hand:

* :class:`Batch`: ``count`` rounds, each drawing one Poisson(``sampling_rate``) batch and making
  ``releases`` from it (composed INSIDE the sampling event, as the releases share the batch);
  ``sampling_rate=None`` is the full dataset (no sampling event).
* :class:`Repeat`: ``parts`` in order, ``count`` times (composed outside).
* :class:`Parallel`: ``parts`` on disjoint parts of the data (composed in parallel).
* :class:`RepeatAndSelect`: ``parts`` as one trial, run a random number of times, only the
  best trial's output released (Papernot & Steinke 2022; dp_accounting's
  ``RepeatAndSelectDpEvent``).

:class:`BatchedRelease` is the same release for the R runs of a batched program: its ``clip``
(R,) bounds the per-example contributions, :meth:`~BatchedRelease.privatize` is the one privacy
step of a sum of per-example contributions (clip at ``clip``, sum, noise) and
:meth:`~BatchedRelease.perturb` adds run r's noise from run r's generator
(:func:`dpminimax.kernels.noise.add_noise`) to a sum already bounded. Kernels and programs take a
``BatchedRelease``, never a raw noise scale or clip bound.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Union

import torch
from dp_accounting import dp_event
from dp_accounting.dp_event import DpEvent

from dpminimax.kernels.clip import clip_and_accumulate, clipped_sum
from dpminimax.kernels.noise import add_noise
from dpminimax.privacy.events import (
    exponential_mechanism,
    gaussian,
    laplace,
    non_private_event,
    validate_event,
)

MECHANISMS = ("gaussian", "laplace", "exponential")
_EVENTS = {"gaussian": gaussian, "laplace": laplace, "exponential": exponential_mechanism}


@dataclass(frozen=True)
class Release:
    """One run's noisy release of a sum of contributions bounded by ``sensitivity``; ``clip``:
    the per-example bound the program clips at where it is not ``sensitivity`` itself (a
    replace-one sum: half of it; an output whose stability bound rests on clipped gradients:
    their bound)."""

    name: str
    mechanism: str
    noise_multiplier: float
    sensitivity: float
    clip: float | None = None
    #: Made without noise whatever ``noise_multiplier`` says (a noiseless control's release,
    #: :func:`silenced`): it adds nothing and its event is not private.
    noise_off: bool = False

    def __post_init__(self) -> None:
        if self.mechanism not in MECHANISMS:
            raise ValueError(f"release {self.name!r}: mechanism must be one of {MECHANISMS}, "
                             f"got {self.mechanism!r}")
        if self.clip is not None and not self.clip > 0:
            raise ValueError(f"release {self.name!r}: clip must be > 0, got {self.clip}")
        if not self.noise_multiplier >= 0:
            raise ValueError(f"release {self.name!r}: noise multiplier must be >= 0, got "
                             f"{self.noise_multiplier}")
        if not self.sensitivity > 0:
            raise ValueError(f"release {self.name!r}: sensitivity must be > 0, got "
                             f"{self.sensitivity}")
        if self.noise_multiplier > 0 and math.isinf(self.sensitivity):
            raise ValueError(f"release {self.name!r} is noised but its contributions are not "
                             "bounded (sensitivity inf): clip them or set the noise to 0")

    @property
    def private(self) -> bool:
        return self.noise_multiplier > 0 and not self.noise_off

    @property
    def clip_bound(self) -> float:
        """The per-example bound the program clips at: ``clip``, else the sensitivity."""
        return self.sensitivity if self.clip is None else self.clip

    def event(self) -> DpEvent:
        """The mechanism: Gaussian / Laplace / report-noisy-min with this noise multiplier (noise
        over sensitivity), or no privacy when the release is not noised."""
        if not self.private:
            return non_private_event()
        return _EVENTS[self.mechanism](self.noise_multiplier)


@dataclass(frozen=True)
class Batch:
    """``count`` rounds of ``releases`` made from one Poisson(``sampling_rate``) batch per round
    (``None``: the full dataset)."""

    releases: tuple[Release, ...]
    count: int = 1
    sampling_rate: float | None = None

    def event(self) -> DpEvent:
        if not self.releases:
            raise ValueError("a batch must make at least one release")
        mechanisms = [release.event() for release in self.releases]
        inner = mechanisms[0] if len(mechanisms) == 1 else dp_event.ComposedDpEvent(mechanisms)
        if self.sampling_rate is not None:
            inner = dp_event.PoissonSampledDpEvent(float(self.sampling_rate), inner)
        elif self.count == 1:
            return inner
        return dp_event.SelfComposedDpEvent(inner, int(self.count))


@dataclass(frozen=True)
class Repeat:
    """``parts`` (batches or repeats) in order, ``count`` times."""

    parts: tuple[Part, ...]
    count: int = 1

    def event(self) -> DpEvent:
        if not self.parts:
            raise ValueError("a repeat must have at least one part")
        composed = dp_event.ComposedDpEvent([part.event() for part in self.parts])
        return composed if self.count == 1 else dp_event.SelfComposedDpEvent(composed,
                                                                              int(self.count))


@dataclass(frozen=True)
class Parallel:
    """``parts`` made on disjoint parts of the data, each part possibly reading the outputs
    of the earlier ones (phases on disjoint chunks). One example is in one part only, so the
    parts compose in parallel (BYOA paper 003, Lemma A.1, its adaptive form): the whole is as
    private as its least private part. Accounted where every part has the same event (then
    it is the event of one part, as for BYOA's phases, which all spend the full budget);
    parts with different events are refused rather than accounted loosely."""

    parts: tuple[Part, ...]

    def event(self) -> DpEvent:
        if not self.parts:
            raise ValueError("a parallel composition must have at least one part")
        events = [part.event() for part in self.parts]
        if any(repr(event) != repr(events[0]) for event in events[1:]):
            raise ValueError("parallel parts with different events are not accounted here "
                             "(their composition is the least private part's)")
        return events[0]


@dataclass(frozen=True)
class RepeatAndSelect:
    """``parts`` as one trial, repeated K times with K random (truncated negative binomial
    of ``mean`` and ``shape``: 1 geometric, 0 logarithmic), and only the best trial's output
    released: dp_accounting's ``RepeatAndSelectDpEvent`` (Papernot & Steinke 2022, Thms. 2
    and 6). K is unbounded, so each release is made an unbounded number of times
    (``count`` inf)."""

    parts: tuple[Part, ...]
    mean: float
    shape: float

    #: How many times the trial is made: unbounded (K has unbounded support).
    count = math.inf

    def event(self) -> DpEvent:
        trial = self.parts[0] if len(self.parts) == 1 else Repeat(self.parts)
        return dp_event.RepeatAndSelectDpEvent(trial.event(), float(self.mean),
                                               float(self.shape))


Part = Union[Batch, Repeat, Parallel, RepeatAndSelect]  # noqa: UP007 (a runtime alias used before Python 3.12)


def releases_of(part: Part) -> list[Release]:
    """Every release of ``part``, in order (once each, however often it is repeated)."""
    if isinstance(part, Batch):
        return list(part.releases)
    return [release for sub in part.parts for release in releases_of(sub)]


def release_counts(part: Part) -> dict[str, float]:
    """How many times ``part`` makes each release (by name): a batch's count, multiplied by
    the counts of the repeats around it (inf inside a :class:`RepeatAndSelect`)."""
    counts: dict[str, float] = {}
    if isinstance(part, Batch):
        for release in part.releases:
            counts[release.name] = counts.get(release.name, 0) + int(part.count)
        return counts
    for sub in part.parts:
        for name, count in release_counts(sub).items():
            counts[name] = counts.get(name, 0) + count * getattr(part, "count", 1)
    return counts


def silenced(part: Part) -> Part:
    """``part`` with every release made without noise (``noise_off``): the same tree, counts,
    sampling rates, clips, sensitivities and planned noise multipliers (issue #38's noiseless
    clipped control)."""
    if isinstance(part, Batch):
        return replace(part, releases=tuple(replace(release, noise_off=True)
                                            for release in part.releases))
    return replace(part, parts=tuple(silenced(sub) for sub in part.parts))


def plan_event(part: Part) -> DpEvent:
    """The DpEvent of one run's release tree; a run none of whose releases is noised is not
    private (``NonPrivateDpEvent``)."""
    if not any(release.private for release in releases_of(part)):
        return non_private_event()
    return validate_event(part.event())


class BatchedRelease:
    """The release ``name`` of R batched runs (``releases[r]`` is run r's): per-run clip bounds
    and the noise each run adds to its own sum."""

    def __init__(self, releases: Sequence[Release], device: torch.device | str = "cpu",
                 dtype: torch.dtype | None = None) -> None:
        names = {(release.name, release.mechanism) for release in releases}
        if len(names) != 1:
            raise ValueError(f"the runs of one batched release must make the same release; "
                             f"got {sorted(names)}")
        self.releases = tuple(releases)
        self.name, self.mechanism = names.pop()
        #: (R,) per-example contribution bounds (the clip norms; inf = not clipped), in
        #: ``dtype`` (None: torch's default; the noise scale is computed in the default dtype).
        self.clip = torch.tensor([release.clip_bound for release in releases],
                                 dtype=dtype, device=device)
        sensitivity = torch.tensor([release.sensitivity for release in releases], device=device)
        multiplier = torch.tensor([0.0 if release.noise_off else release.noise_multiplier
                                   for release in releases], device=device)
        bounded = torch.where(torch.isinf(sensitivity), torch.zeros_like(sensitivity),
                              sensitivity)
        #: (R,) noise scale of each run: std (Gaussian) or scale (Laplace).
        self.noise_std = multiplier * bounded

    @classmethod
    def of(cls, plans: Sequence[Mapping[str, Release]], name: str,
           device: torch.device | str = "cpu") -> BatchedRelease:
        """Release ``name`` from every run's ``{name: Release}``."""
        return cls([plan[name] for plan in plans], device)

    def shrunk(self, factor: torch.Tensor) -> BatchedRelease:
        """This release with run r's clip bound and sensitivity (hence its noise) multiplied by
        ``factor[r]`` in (0, 1], a public function of already released values (the SPIDER
        difference clips of paper 004, Thms. 6 and 8, tied to the iterate movement). The
        noise multiplier is unchanged, so each release's event, and the plan's accounting,
        is the planned one."""
        factors = torch.as_tensor(factor, dtype=torch.float64)
        # a diverged run's NaN movement keeps the full bound (the finite guard then stops it)
        factors = torch.clamp(torch.nan_to_num(factors, nan=1.0), 1e-12, 1.0)
        return BatchedRelease([replace(release, sensitivity=release.sensitivity * f,
                                       clip=None if release.clip is None else release.clip * f)
                               for release, f in zip(self.releases, factors.tolist(),
                                                     strict=True)],
                              self.clip.device, self.clip.dtype)

    def privatize(self, per_example: Mapping[str, torch.Tensor] | torch.Tensor,
                  generators: Sequence[torch.Generator], mask: torch.Tensor | None = None):
        """The privacy step (Abadi et al. 2016, Alg. 1: clip, sum, noise): the per-example
        contributions (a tensor (R, B, d), or a dict of (R, B, ...) tensors, an example's norm
        taken over all of them) clipped at this release's ``clip``, summed over the unmasked
        examples (``mask`` (R, B); None: all, for a tensor only), and :meth:`perturb`-ed. A
        tensor is summed by :func:`~dpminimax.kernels.clip.clipped_sum` (the same bits alone or
        in any batch), a dict by :func:`~dpminimax.kernels.clip.clip_and_accumulate` (one
        einsum per tensor)."""
        summed = (clipped_sum(per_example, self.clip, mask)
                  if isinstance(per_example, torch.Tensor)
                  else clip_and_accumulate(per_example, self.clip, mask))
        return self.perturb(summed, generators)

    def perturb(self, summed: Mapping[str, torch.Tensor] | torch.Tensor,
                generators: Sequence[torch.Generator]):
        """``summed`` (a tensor or dict of (R, ...) tensors) plus run r's noise from
        ``generators[r]``; runs without noise draw nothing and get their sums back."""
        if self.mechanism == "exponential":
            raise ValueError(f"release {self.name!r} is report-noisy-min: only the index of its "
                             "smallest noisy score is private (select_min), not the scores")
        return add_noise(summed, self.noise_std, generators, self.mechanism)

    def select_min(self, scores: torch.Tensor,
                   generators: Sequence[torch.Generator]) -> torch.Tensor:
        """Report-noisy-min: for (R, K) ``scores`` (sums whose entries each move by at most the
        sensitivity between neighbours), run r's index ``argmin_k scores[r, k] + b_r Z_rk``
        with Z negated standard Gumbel, i.e. k with probability proportional to
        exp(-scores[r, k] / b_r): the exponential mechanism (events.exponential_mechanism)."""
        if self.mechanism != "exponential":
            raise ValueError(f"release {self.name!r} is {self.mechanism}, not report-noisy-min")
        return add_noise(scores, self.noise_std, generators, "negated_gumbel").argmin(-1)
