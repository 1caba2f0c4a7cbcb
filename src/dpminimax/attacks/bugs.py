"""Planted bugs: the controls of the privacy audits (:mod:`.canaries`, :mod:`.release_audit`)
and of LiRA (:mod:`.shadows`). Inside :func:`planted` every release made carries the bug; the
gross ones must be detected, the near-claim ones measure an audit's power."""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator

import torch

from dpminimax.privacy.release import BatchedRelease

#: Violations far from the claim: noise off, noise divided by the expected batch size (noise for
#: the mean instead of the sum), clipping removed.
GROSS_BUGS = ("noise_off", "noise_over_batch", "clipping_removed")
#: Noise divided by a factor: violations near the claim (positive controls of the audit's power).
NEAR_CLAIM_BUGS = {"noise_over_2": 2.0, "noise_over_4": 4.0}
PLANTED_BUGS = (*GROSS_BUGS, *NEAR_CLAIM_BUGS)


@contextlib.contextmanager
def planted(bug: str | None, batch_size: float = 1.0) -> Iterator[None]:
    """Every :class:`BatchedRelease` made inside the block carries ``bug`` (None: none); a
    ``<release>_<near-claim bug>`` (e.g. ``histogram_noise_over_4``: its noise / 4) only the
    releases named ``<release>`` (a bug confined to one release, which
    :mod:`dpminimax.attacks.release_audit` isolates)."""
    if bug is None:
        yield
        return
    only, near = one_release_bug(bug)
    if bug not in PLANTED_BUGS and only is None:
        raise ValueError(f"unknown planted bug {bug!r}; known: {PLANTED_BUGS} and "
                         "'<release>_<near-claim bug>'")
    original = BatchedRelease.__init__

    def broken(self, *args, **kwargs) -> None:
        original(self, *args, **kwargs)
        if only is not None:
            if self.name == only:
                self.noise_std = self.noise_std / NEAR_CLAIM_BUGS[near]
        elif bug == "noise_off":
            self.noise_std = torch.zeros_like(self.noise_std)
        elif bug == "noise_over_batch":
            self.noise_std = self.noise_std / batch_size
        elif bug in NEAR_CLAIM_BUGS:
            self.noise_std = self.noise_std / NEAR_CLAIM_BUGS[bug]
        else:
            self.clip = torch.full_like(self.clip, math.inf)

    BatchedRelease.__init__ = broken
    try:
        yield
    finally:
        BatchedRelease.__init__ = original


def one_release_bug(bug: str) -> tuple[str | None, str | None]:
    """``(release, near-claim bug)`` of a ``<release>_<near-claim bug>`` name, else ``(None,
    None)``."""
    for near in NEAR_CLAIM_BUGS:
        release = bug.removesuffix(f"_{near}")
        if release != bug and release:
            return release, near
    return None, None
