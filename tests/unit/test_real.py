"""Numbers as a `real` column stores them (recallmesh/wire/real.py): rounded the way Postgres
rounds a double to single precision, without its underflow and overflow errors."""

from __future__ import annotations

import math
import struct

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from recallmesh.wire.real import as_real


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_as_real_is_the_nearest_single(value: float) -> None:
    with np.errstate(over="ignore"):
        want = float(np.float32(value))
    assert as_real(value) == want


def test_the_edges() -> None:
    assert as_real(1e-50) == 0.0 and as_real(-1e-50) == 0.0
    smallest = struct.unpack("<f", struct.pack("<I", 1))[0]
    assert as_real(smallest) == smallest
    assert as_real(3.5e38) == math.inf and as_real(-1e308) == -math.inf
    assert math.isnan(as_real(math.nan))
    assert as_real(1.00000001) == 1.0
