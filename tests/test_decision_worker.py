"""A decision worker (gateway/policy/worker.py) skips the bundle's checks only for the content its gateway checked.

The gateway names the content digest its own load passed (``checked``); the worker reads the files itself. A
bundle that fails its checks (here: a call of a function no module defines) is refused by a worker told
nothing, or told the digest of other content; only the exact digest of what it read lets it skip them. Real
worker processes, the real protocol.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from gateway.digests import digest

BROKEN = 'package gateway\n\ndecision := {"action": "allow"} if {\n\tdata.lib.missing(1)\n}\n'
DATA: dict[str, Any] = {"roles": {}}


def worker_setup(directory: Path, checked: str | None) -> dict[str, Any]:
    """The first answer of a worker started on ``directory`` and told ``checked``."""
    setup = {"directory": str(directory), "data": DATA, "data_revision": "r1", "checked": checked}
    proc = subprocess.run(
        [sys.executable, "-m", "gateway.policy.worker"],
        input=json.dumps(setup) + "\n",
        capture_output=True,
        text=True,
        timeout=60,
    )
    return dict(json.loads(proc.stdout.splitlines()[0]))


def test_a_worker_checks_a_bundle_unless_told_its_exact_content_passed(tmp_path: Path) -> None:
    (tmp_path / "decision.rego").write_text(BROKEN)
    refused = worker_setup(tmp_path, None)
    assert refused["ok"] is False and "undefined function data.lib.missing" in refused["error"]
    # the digest of other content (the file as the gateway read it before an edit) does not count
    other = digest([[("decision.rego", BROKEN + "# edited\n")], DATA])
    assert worker_setup(tmp_path, other)["ok"] is False
    assert worker_setup(tmp_path, digest([[("decision.rego", BROKEN)], DATA]))["ok"] is True
