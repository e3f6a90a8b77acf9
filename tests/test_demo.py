"""`gateway demo` from the installed command: four roles, one task, every step checked by the demo itself."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from test_attestations import standard_verify

from gateway.config import GatewayConfig
from gateway.process import gateway_cli
from gateway.repo import Repo


@pytest.mark.slow
def test_demo_runs_end_to_end_and_prints_the_trace(tmp_path: Path) -> None:
    scratch = tmp_path / "demo"
    done = subprocess.run(
        [sys.executable, "-m", "gateway", "demo", "--dir", str(scratch)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    for step in ("task_submit", "DENIED", "waits for approval", "approved", "passed", "committed: merge", "replay"):
        assert step in out, f"{step!r} missing from:\n{out}"
    merges = Repo(scratch).run("log", "--merges", "--format=%H", "main").split()
    assert len(merges) == 1
    # the merge carries its attestation, which the standard verifiers accept too (tests/test_attestations.py)
    assert "gateway attest verify main" in out and "approved by demo-human" in out
    assert "gateway artifacts log notes/calc.md" in out and "r2 on r1 by worker-1 (worker), intent" in out
    note = Repo(scratch).run("notes", "--ref=refs/notes/gateway-attestations", "show", merges[0])
    config = GatewayConfig.load(scratch / "gateway.yaml")
    jwks = json.loads(gateway_cli(config, "attest", "keys").stdout)
    assert standard_verify(json.loads(note), jwks)["subject"][0]["digest"]["gitCommit"] == merges[0]
    trace = out.split("from the manifest to the merge commit", 1)[1]
    assert "fix-add" in trace and merges[0][:12] in trace, trace
    assert f"attestation of {merges[0][:12]}" in trace and "artifact notes/calc.md r2 (on r1)" in trace, trace
    assert re.search(r"task_submit|submit", trace)
    hint = re.search(r"^look around: (.+)$", out, re.M)  # a command a shell runs as shown
    assert hint, out
    shown = subprocess.run(hint.group(1), shell=True, capture_output=True, text=True, timeout=120)
    assert shown.returncode == 0 and "fix-add" in shown.stdout, shown.stderr


def test_demo_refuses_a_directory_that_is_not_empty(tmp_path: Path) -> None:
    (tmp_path / "keep.txt").write_text("mine")
    done = subprocess.run(
        [sys.executable, "-m", "gateway", "demo", "--dir", str(tmp_path)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2 and "not empty" in done.stderr  # a usage error, not a demo that went wrong (1)
    assert (tmp_path / "keep.txt").read_text() == "mine"


def test_the_example_manifest_submits_through_the_cli(config: Any) -> None:
    manifest = Path(__file__).parent.parent / "examples" / "workflow" / "manifest.yaml"

    submitted = gateway_cli(config, "task", "submit", str(manifest))
    assert submitted.returncode == 0, submitted.stderr
    assert json.loads(submitted.stdout)["task_id"] == "fix-add"
    listed = json.loads(gateway_cli(config, "task", "list").stdout)["tasks"]
    assert [(t["task_id"], t["state"], t["ready"]) for t in listed] == [("fix-add", "open", True)]
    shown = json.loads(gateway_cli(config, "task", "show", "fix-add").stdout)
    assert shown["manifest"]["allowed_paths"] == ["calc.py", "tests/**"]
    again = gateway_cli(config, "task", "submit", str(manifest))  # the same manifest again: the recorded answer
    assert again.returncode == 0 and json.loads(again.stdout) == {**json.loads(submitted.stdout), "replayed": True}
    changed = config.workspace.parent / "changed.yaml"
    changed.write_text(manifest.read_text().replace("objective:", "objective: (changed)", 1))
    other = gateway_cli(config, "task", "submit", str(changed))
    assert other.returncode != 0 and "already exists with another manifest" in other.stderr
    missing = gateway_cli(config, "task", "show", "nope")
    assert missing.returncode != 0 and "no task" in missing.stderr
