"""The surface tables are consistent with the baseline lock and with themselves."""

import re
from pathlib import Path

from optax_gate.kit.surface import calls as surface_calls
from optax_gate.kit.surface import table as surface_table

ROOT = Path(__file__).resolve().parents[3]


def test_baseline_optax_matches_the_lock() -> None:
    """``BASELINE_OPTAX`` decides where an unknown public name fails (the
    baseline) and where it is ``new, not contracted``: it must be the locked optax."""
    found = re.search(r"^optax==(\S+)", (ROOT / "requirements-lock.txt").read_text(), re.M)
    assert found is not None
    pinned = found.group(1)
    assert pinned == surface_table.BASELINE_OPTAX


def test_no_path_is_in_two_tables_and_every_left_out_has_a_reason() -> None:
    transformations = set(surface_table.TRANSFORMATIONS) | {
        a for e in surface_table.TRANSFORMATIONS.values() for a in e.aliases
    }
    calls = set(surface_calls.CALLS) | {a for _, aliases, _ in surface_calls.CALLS.values() for a in aliases}
    assert not transformations & calls
    assert not (transformations | calls) & set(surface_calls.LEFT_OUT)
    assert all(r.strip() for r in surface_calls.LEFT_OUT.values())
    assert all(e.left_out.strip() for e in surface_table.TRANSFORMATIONS.values() if e.left_out)
    assert set(surface_calls.EXPECT) <= set(surface_calls.CALLS)
