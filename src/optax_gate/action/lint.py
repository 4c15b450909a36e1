"""``python -m optax_gate.action.lint ACTION_YML OUT``: write the composite
steps of ``action.yml`` as a ``workflow_call`` workflow with the same inputs,
for actionlint, which lints workflows but not action metadata files
(``./noxw -s lint-workflows``). The ``inputs`` context of a reusable workflow
is the action's; ``github.action_path`` is a known property in both. Needs
PyYAML (installed by that session, not by the entry script)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any


def as_workflow(action: dict[str, Any]) -> dict[str, Any]:
    """A workflow whose one job runs the composite ``action``'s steps, its inputs as ``workflow_call`` inputs."""
    inputs = {
        name: {"type": "string", "required": bool(spec.get("required")), "default": str(spec.get("default", ""))}
        for name, spec in (action.get("inputs") or {}).items()
    }
    return {
        "name": f"steps of {action['name']}",
        "on": {"workflow_call": {"inputs": inputs}},
        "permissions": {"contents": "read"},
        "jobs": {"action": {"runs-on": "ubuntu-24.04", "steps": action["runs"]["steps"]}},
    }


def main(argv: list[str]) -> int:
    """``python -m optax_gate.action.lint ACTION_YML OUT``: write the composite action's steps as a workflow for
    actionlint; the exit status."""
    import yaml

    source, out = map(Path, argv)
    Path(out).write_text(
        yaml.safe_dump(as_workflow(yaml.safe_load(source.read_text(encoding="utf-8"))), sort_keys=False),
        encoding="utf-8",
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
