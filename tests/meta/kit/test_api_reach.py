"""``docs/api-reach.md`` is current: its first column (the pinned baseline) is what ``tests/meta/api_reach.py``
finds in the contracts collected in this environment. A contract module added, or an API's classes changed,
without regenerating the page fails here."""

from __future__ import annotations

import sys

import optax

from tests.meta import api_reach


def test_the_api_reach_page_is_current_for_the_baseline() -> None:
    version, groups, reach = api_reach.collect(sys.executable)
    page = (api_reach.ROOT / "docs" / "api-reach.md").read_text()
    assert f"| API | optax {version} |" in page, f"docs/api-reach.md's first column is not optax {optax.__version__}"
    for group in groups:
        shown = ", ".join(f"`{n}`" for n in group[:3]) + (f" (+{len(group) - 3})" if len(group) > 3 else "")
        row = f"| {shown} | {reach.get(group[0], '—')} |"
        assert row in page, (
            f"docs/api-reach.md is stale at {group[0]} (expected a row starting {row!r}): run python "
            "tests/meta/api_reach.py --python BASELINE_PY --python CANDIDATE_PY"
        )
