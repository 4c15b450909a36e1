"""``gate/base/model.py``, the report's TypedDicts, is generated from ``report.schema.json``
(``optax_gate.gate.report.schema_model``) and must be the current generation: a change to the
schema without ``./noxw -s report-model`` fails here, so the type checker never reads a stale model."""

import ast
import json
import os
import shutil
import typing
from typing import Any

import pytest

from optax_gate.gate.base import model
from optax_gate.gate.report import schema_model


def test_the_model_is_generated_from_the_current_schema() -> None:
    if shutil.which("datamodel-codegen") is None and not os.environ.get("NOX_CURRENT_SESSION"):
        # under ./noxw (nox names its session) the generator is on PATH, and its absence fails below
        pytest.skip("datamodel-codegen is not on PATH: ./noxw -s tests puts it there (from requirements-tools.txt)")
    committed = schema_model.MODEL.read_text(encoding="utf-8")
    assert schema_model.generate() == committed, (
        "gate/base/model.py is not what report.schema.json generates: run ./noxw -s report-model and review git diff"
    )


def _titled(node: Any, found: Any) -> Any:
    if isinstance(node, dict):
        if "title" in node and node is not SCHEMA:
            found.add(node["title"])
        for value in node.values():
            _titled(value, found)
    elif isinstance(node, list):
        for value in node:
            _titled(value, found)
    return found


SCHEMA = json.loads(schema_model.SCHEMA.read_text(encoding="utf-8"))


def test_every_titled_object_of_the_schema_is_a_typeddict_of_that_name() -> None:
    names = _titled(SCHEMA, set())
    assert len(names) >= 29
    for name in sorted(names):
        assert typing.is_typeddict(getattr(model, name)), name
    assert typing.is_typeddict(model.Report)


def _required(typed_dict: Any) -> Any:
    """Its keys not marked ``NotRequired`` (the model's annotations are strings, so ``__required_keys__`` holds them
    all)."""
    hints = typing.get_type_hints(typed_dict, include_extras=True)
    return {k for k, h in hints.items() if typing.get_origin(h) is not typing.NotRequired}


def test_the_report_keys_and_which_are_required_follow_the_schema() -> None:
    assert set(typing.get_type_hints(model.Report)) == set(SCHEMA["properties"])
    assert _required(model.Report) == set(SCHEMA["required"])
    row = SCHEMA["properties"]["contracts"]["items"]
    assert _required(model.ContractRow) == set(row["required"])
    assert typing.get_args(typing.get_type_hints(model.ContractRow)["change"]) == tuple(
        row["properties"]["change"]["enum"]
    )


def test_the_model_module_holds_only_type_definitions() -> None:
    """The gate imports it in the light tool environment: nothing but ``typing`` may be imported."""
    tree = ast.parse(schema_model.MODEL.read_text(encoding="utf-8"))
    imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)} | {
        a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names
    }
    assert imported <= {"__future__", "typing"}, imported
