"""Twin names (issue #41 item 3): a private method's non-private twin is ``<method>_nonprivate``
(or the twin of a private method it derives from: ``dpfermi_code`` -> ``dpfermi_nonprivate``),
but for a paper's own shared non-private algorithms; an old twin name is refused with the new."""

from __future__ import annotations

import pytest

from dpminimax.algorithms import (
    CONTROLS,
    DIAGNOSTICS,
    METHODS,
    RENAMED,
    UnknownMethodError,
    get_method,
)

#: Twins named after a paper's own non-private algorithm or exact reference (nonprivate_twin).
KEPT = {"np_aid", "np_grid", "np_pen", "exact_solution", "phased_exact", "csc_exact",
        "phased_minimax_exact", "scdro"}


@pytest.mark.parametrize("name", sorted(name for name, cls in METHODS.items()
                                         if cls.private and cls.twin))
def test_a_twin_is_named_after_a_private_method_it_derives_from(name):
    cls = METHODS[name]
    named_after = {f"{other}_nonprivate" for other, base in METHODS.items()
                   if base.private and issubclass(cls, base)}
    assert cls.twin in named_after | KEPT
    assert not METHODS[cls.twin].private


@pytest.mark.parametrize(("old", "new"), sorted(RENAMED.items()))
def test_an_old_twin_name_is_refused_naming_the_new_one(old, new):
    assert old not in {**METHODS, **DIAGNOSTICS, **CONTROLS}
    assert not METHODS[new].private
    with pytest.raises(UnknownMethodError) as refused:
        get_method(old)
    assert str(refused.value) == f"unknown method {old!r}: renamed to {new!r}"
