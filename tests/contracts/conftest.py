"""Fixtures shared by the contract modules."""

import pytest

from optax_gate.kit import dtypes


@pytest.fixture(params=dtypes.FLOAT_DTYPES)
def dtype(request):
    """Each floating dtype in turn (float64 with x64 mode on for the test)."""
    with dtypes.precision(request.param) as dt:
        yield dt

