"""Privacy accounting: algorithms build dp_accounting DpEvents, this package interprets them.

See docs/architecture.md, "Releases". Modules: :mod:`.events` (building / serialising events),
:mod:`.accounting` (epsilon and the per-run record), :mod:`.pld_product` (the tight PLD of
same-batch Gaussian / Laplace releases, Poisson-subsampled product pair), :mod:`.rdp_general` (RDP
maths, including the general Poisson-subsampling bound), :mod:`.calibrate` (noise / step
calibration).
"""

from dpminimax.privacy.accounting import (
    UnsupportedEventError,
    accounting_record,
    epsilon,
    general_rdp_curve,
)
from dpminimax.privacy.calibrate import (
    calibrate_event_parameter,
    calibrate_noise_multiplier,
    calibrate_steps,
)
from dpminimax.privacy.events import (
    dpsgd_event,
    event_from_dict,
    event_to_dict,
    gaussian,
    laplace,
    non_private_event,
    same_batch_event,
    separately_sampled_event,
    validate_event,
)

__all__ = [
    "UnsupportedEventError",
    "accounting_record",
    "calibrate_event_parameter",
    "calibrate_noise_multiplier",
    "calibrate_steps",
    "dpsgd_event",
    "epsilon",
    "event_from_dict",
    "event_to_dict",
    "gaussian",
    "general_rdp_curve",
    "laplace",
    "non_private_event",
    "same_batch_event",
    "separately_sampled_event",
    "validate_event",
]
