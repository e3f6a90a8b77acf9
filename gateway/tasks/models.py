"""The task artifacts of ARCHITECTURE.md section 5, as strict pydantic models.

Malformed artifacts are refused with the field named, never coerced: unknown fields, wrong types and
strings where numbers belong all fail. ``gateway`` writes their JSON schemas to docs/schemas/.

    manifest = TaskManifest.model_validate(data)      # raises ValidationError naming the field
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

TASK_ID = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"
MAX_COMMAND = 4096

TaskId = Annotated[str, Field(pattern=TASK_ID, description="Task id: letters, digits, '_', '.', '-'")]


class Artifact(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class TaskManifest(Artifact):
    """The planner's bounded contract for one unit of work."""

    task_id: TaskId
    objective: Annotated[str, Field(min_length=1, max_length=4000)]
    allowed_paths: Annotated[
        list[str], Field(min_length=1, max_length=100, description="Globs ('/' separated) the worker may change")
    ]
    constraints: list[Annotated[str, Field(max_length=1000)]] = Field(default_factory=list, max_length=50)
    verification: Annotated[
        list[Annotated[str, Field(min_length=1, max_length=MAX_COMMAND)]],
        Field(min_length=1, max_length=20, description="Shell commands that must all exit 0"),
    ]
    handoff_notes: Annotated[str, Field(max_length=8000)] = ""
    depends_on: list[TaskId] = Field(default_factory=list, max_length=50)
    max_attempts: Annotated[int, Field(ge=1, le=20)] = 3

    @field_validator("allowed_paths")
    @classmethod
    def _paths(cls, patterns: list[str]) -> list[str]:
        for pattern in patterns:
            problem = glob_problem(pattern)
            if problem:
                raise ValueError(f"allowed path {pattern!r} {problem}")
        return patterns

    @field_validator("depends_on")
    @classmethod
    def _no_duplicates(cls, ids: list[str]) -> list[str]:
        if len(set(ids)) != len(ids):
            raise ValueError("depends_on lists a task twice")
        return ids


def glob_problem(pattern: str) -> str | None:
    """Why an allowed-path glob is unacceptable, or None. Globs that match everything are caught later,
    by the policy engine's own glob semantics (see TaskBoard.submit)."""
    if not pattern or pattern != pattern.strip():
        return "is empty or has surrounding spaces"
    if "\x00" in pattern or any(ord(ch) < 32 for ch in pattern):
        return "contains control characters"
    if pattern.startswith("/") or pattern.startswith("~") or re.match(r"^[A-Za-z]:", pattern):
        return "must be relative to the workspace"
    parts = pattern.split("/")
    if ".." in parts:
        return "must not climb out of the workspace with '..'"
    if parts[0] in (".git", ".gateway") or ".git" in parts:
        return "must not reach into git's or the gateway's internals"
    return None


class Claim(Artifact):
    task_id: TaskId
    owner: str
    expires_at: str  # RFC 3339, UTC
    attempt: int


class BlockerReport(Artifact):
    """What a worker hands a human when retrying will not help."""

    strategies_tried: list[str] = Field(min_length=1)
    errors: list[str] = Field(default_factory=list)
    suspected_cause: Annotated[str, Field(min_length=1)]
    human_action: Annotated[str, Field(min_length=1, description="What a person should do next")]


class ExecutionRecord(Artifact):
    """The worker's account of an attempt; files_changed is checked against the real diff."""

    task_id: TaskId
    status: Literal["done", "failed", "blocked"]
    files_changed: list[str] = Field(default_factory=list)
    commands_run: list[str] = Field(default_factory=list)
    risks: list[str] = Field(default_factory=list)
    next_step: str = ""
    blocker: BlockerReport | None = None


class VerificationResult(Artifact):
    task_id: TaskId
    commit: str  # the task branch commit that was verified
    commands: list[str]
    exit_codes: list[int | None]  # None: not run (refused by policy, or an earlier command failed)
    passed: bool
    output_digests: list[str]
    notes: list[str] = Field(default_factory=list)


ARTIFACTS: dict[str, type[Artifact]] = {
    "TaskManifest": TaskManifest,
    "Claim": Claim,
    "ExecutionRecord": ExecutionRecord,
    "BlockerReport": BlockerReport,
    "VerificationResult": VerificationResult,
}


def write_schemas(directory: Path) -> list[Path]:
    """Write docs/schemas/<Artifact>.schema.json, one JSON schema per artifact (the docs' copy is tested).

    from pathlib import Path; from gateway.tasks.models import write_schemas; write_schemas(Path("docs/schemas"))
    """
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for name, model in ARTIFACTS.items():
        path = directory / f"{name}.schema.json"
        path.write_text(json.dumps(model.model_json_schema(), indent=2) + "\n")
        written.append(path)
    return written
