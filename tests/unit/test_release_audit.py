"""Per-release audits (issue #42): Dirac canaries in one release of a method's plan catch a bug
confined to that release (its noise / 4) and nothing in another release; the real release stays
below its own epsilon."""

from __future__ import annotations

import pytest
from test_conformance import DELTA, problem, tiny_params

from dpminimax.attacks.canaries import planted
from dpminimax.attacks.release_audit import audit_release, release_epsilon
from dpminimax.privacy.release import Release


def test_a_laplace_release_made_once_spends_its_sensitivity_over_its_scale():
    """Noise Lap(multiplier x sensitivity) on a sum of that l1 sensitivity is
    (1 / multiplier)-DP, whatever the sensitivity."""
    assert release_epsilon(Release("histogram", "laplace", 4.0, 1.0), DELTA) == pytest.approx(
        0.25, rel=1e-3)
    assert release_epsilon(Release("histogram", "laplace", 4.0, 2.0), DELTA) == pytest.approx(
        0.25, rel=1e-3)


@pytest.mark.parametrize(("method", "release", "other"), [
    ("racodp", "histogram", "gradient"), ("dpfermi", "group_counts", "theta_gradient")])
def test_a_bug_in_one_release_is_caught_there_and_only_there(method, release, other):
    def audit(name, bug=None):
        return audit_release(method, problem(), tiny_params(method), 1.0, DELTA, name, bug=bug)

    bug = f"{release}_noise_over_4"
    real, broken, elsewhere = audit(release), audit(release, bug), audit(other, bug)
    assert not real["detected"] and real["epsilon_lower"] <= real["epsilon_release"]
    assert broken["detected"] and broken["epsilon_lower"] > 1.5 * broken["epsilon_release"]
    assert not elsewhere["detected"]
    assert elsewhere["epsilon_lower"] == audit(other)["epsilon_lower"]  # untouched


def test_an_unknown_release_or_bug_is_refused():
    with pytest.raises(ValueError, match="no release 'counts'"):
        audit_release("racodp", problem(), tiny_params("racodp"), 1.0, DELTA, "counts")
    with pytest.raises(ValueError, match="unknown planted bug"), planted("histogram_over_4"):
        pass
