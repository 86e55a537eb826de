"""Numbers as the database stores them: `real` is IEEE single precision.

Postgres rounds a double sent to a `real` column, or compared with `::real`, to the nearest
single, and refuses one that is not zero but rounds to zero (underflow: below about 7e-46)
or lies past the largest single (overflow). Every number bound for a `real` is rounded here
first, the way Postgres rounds it, and checked as rounded: a value the database
would refuse reaches it as the single it means (1e-50 is 0), never as an error, and a filter
bound equal to a stored value still keeps it (both are the same single). docs/decisions/0011.
"""

from __future__ import annotations

import math
import struct

_F32 = struct.Struct("<f")


def as_real(value: float) -> float:
    """The single-precision value nearest to `value` (what a `real` column stores): 0 for a
    value below the smallest single, +-inf past the largest, NaN for NaN."""
    try:
        rounded: float = _F32.unpack(_F32.pack(value))[0]
    except OverflowError:
        return math.copysign(math.inf, value)
    return rounded
