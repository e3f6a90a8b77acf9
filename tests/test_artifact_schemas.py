"""The JSON schema of each artifact in docs/schemas is the one the models enforce."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gateway.tasks.models import ARTIFACTS

SCHEMAS = Path(__file__).parent.parent / "docs" / "schemas"


@pytest.mark.parametrize("name", sorted(ARTIFACTS))
def test_documented_schema_is_current(name: str) -> None:
    documented = json.loads((SCHEMAS / f"{name}.schema.json").read_text())
    assert documented == ARTIFACTS[name].model_json_schema(), "regenerate with write_schemas (docs/artifacts.md)"


def test_manifests_refuse_unknown_fields_in_the_schema_too() -> None:
    schema = json.loads((SCHEMAS / "TaskManifest.schema.json").read_text())
    assert schema["additionalProperties"] is False
    assert {"task_id", "objective", "allowed_paths", "verification"} <= set(schema["required"])
