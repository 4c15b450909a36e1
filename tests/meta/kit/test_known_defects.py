"""The ledger of known upstream defects is in use and well formed."""

import re
from pathlib import Path

from optax_gate.pytest_plugin import DEFAULT_LEDGER, load_ledger

ROOT = Path(__file__).resolve().parents[3]


def test_every_ledger_entry_is_pinned_by_a_contract_and_every_marker_is_in_the_ledger() -> None:
    ledger = load_ledger(ROOT / DEFAULT_LEDGER)
    used = set()
    sources = [*(ROOT / "tests" / "contracts").rglob("test_*.py"), *(ROOT / "src" / "optax_gate").rglob("*.py")]
    for path in sources:
        used |= set(re.findall(r'known_defect\("([^"]+)"\)', path.read_text()))
    assert ledger, "empty ledger"
    assert sorted(set(ledger) - used) == [], "stale ledger entries"
    assert sorted(used - set(ledger)) == [], "markers without a ledger entry"
