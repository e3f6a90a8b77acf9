"""The task artifacts of ARCHITECTURE.md section 5, as strict pydantic models.

Malformed artifacts are refused with the field named, never coerced: unknown fields, wrong types and
strings where numbers belong all fail. ``gateway`` writes their JSON schemas to docs/schemas/.

    manifest = TaskManifest.model_validate(data)      # raises ValidationError naming the field
"""

from __future__ import annotations

import json
import re
from datetime import datetime
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

from gateway.budgets import Budget
from gateway.linear_regex import PatternRefused, task_glob

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
    # a single string or a list of strings: both are how handoff notes are written
    handoff_notes: Annotated[str, Field(max_length=8000)] | list[Annotated[str, Field(max_length=2000)]] = ""
    depends_on: list[TaskId] = Field(default_factory=list, max_length=50)
    max_attempts: Annotated[int, Field(ge=1, le=50, description="Attempts in all, across strategies")] = 10
    max_attempts_per_strategy: Annotated[int, Field(ge=1, le=20)] = 5
    max_strategy_shifts: Annotated[int, Field(ge=0, le=10)] = 2
    budget: Budget | None = Field(
        default=None,
        description="Limits for this task (calls, tier2, tier3, egress_bytes, wall_s, rate): each can only tighten "
        "gateway.yaml's budgets.task",
    )
    acceptance: list[str] = Field(
        default_factory=list,
        max_length=50,
        description="Paths or globs the verification depends on (the tests that grade the work): read-only "
        "for the worker",
    )
    no_red_phase: Annotated[str, Field(max_length=2000)] = Field(
        default="",
        description="Why the verification need not fail on the base first (empty: it must; red, then green)",
    )
    frozen: list[Annotated[str, Field(min_length=1, max_length=500)]] = Field(
        default_factory=list,
        max_length=50,
        description="Interfaces the work must not change: paths or globs, or Python symbols as 'path.py:name' "
        "or 'path.py:Class.method'",
    )
    # the handoff envelope (optional; validated when present)
    # "1" or 1: an unquoted 1 in YAML is a number; either way it is kept as "1"
    schema_version: Literal["1"] | Annotated[int, Field(ge=1, le=1)] | None = None
    preconditions: list[Annotated[str, Field(min_length=1, max_length=1000)]] = Field(default_factory=list)
    deadline: str | None = Field(default=None, description="RFC 3339; a claim after it is refused")
    expected_artifact: Literal["ExecutionRecord"] | None = None

    @field_validator("allowed_paths", "acceptance")
    @classmethod
    def _paths(cls, patterns: list[str], info: ValidationInfo) -> list[str]:
        what = "allowed path" if info.field_name == "allowed_paths" else "acceptance path"
        for pattern in patterns:
            problem = glob_problem(pattern)
            if problem:
                raise ValueError(f"{what} {pattern!r} {problem}")
        return patterns

    @field_validator("frozen")
    @classmethod
    def _frozen(cls, entries: list[str]) -> list[str]:
        for entry in entries:
            path, _, symbol = entry.partition(":")
            problem = glob_problem(path)
            if problem:
                raise ValueError(f"frozen entry {entry!r}: {path!r} {problem}")
            if symbol and (not path.endswith(".py") or not re.fullmatch(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)?", symbol)):
                raise ValueError(f"frozen entry {entry!r}: a symbol is 'path.py:name' or 'path.py:Class.method'")
        return entries

    @field_validator("schema_version")
    @classmethod
    def _schema_version(cls, value: str | int | None) -> str | None:
        return None if value is None else str(value)

    @field_validator("deadline")
    @classmethod
    def _deadline(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                moment = datetime.fromisoformat(value)
            except ValueError:
                raise ValueError("deadline is not an RFC 3339 time") from None
            if moment.tzinfo is None:
                raise ValueError("deadline needs a time zone (e.g. 2026-11-23T18:00:00Z)")
        return value

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
    try:
        task_glob(pattern)
    except PatternRefused as exc:
        return f"is not a glob the gateway can match: {exc}"
    return None


class Claim(Artifact):
    task_id: TaskId
    owner: str
    expires_at: str  # RFC 3339, UTC
    attempt: int


class BlockerReport(Artifact):
    """What a worker adds when it reports a task blocked: its account of why. The gateway writes the rest
    of the blocker report itself (every attempt, its verification output, diff and violations)."""

    strategies_tried: list[str] = Field(default_factory=list)
    errors: list[str] = Field(default_factory=list)
    suspected_cause: Annotated[str, Field(max_length=4000)] = Field(default="", description="The hypothesis")
    human_action: Annotated[str, Field(max_length=4000)] = Field(
        default="", description="The recommended manual intervention"
    )


class StrategyShift(Artifact):
    """A worker's declaration, on task_claim, that its next attempt takes a new approach."""

    approach: Annotated[str, Field(min_length=1, max_length=500)]
    reason: Annotated[str, Field(min_length=1, max_length=2000, description="Why the last approach will not work")]


class ExecutionRecord(Artifact):
    """The worker's account of an attempt; files_changed is checked against the real diff."""

    task_id: TaskId
    status: Literal["done", "needs_review", "failed", "blocked"]  # needs_review: done, for the verifier
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
    "StrategyShift": StrategyShift,
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
