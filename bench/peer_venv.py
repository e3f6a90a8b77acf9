"""A peer proxy in a virtualenv of its own, made on first use: mcp-proxy needs mcp<2, the gateway's venv has 2.x.

found = PeerVenv(ROOT / "bench" / ".venv-mcp-proxy", "mcp-proxy").executable()
if isinstance(found, Skip):
    print(f"mcp-proxy skipped: {found.reason}")
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Skip:
    """Why a row is not measured (printed under the table)."""

    reason: str


class PeerVenv:
    """``python3 -m venv`` + ``pip install <package>`` once; its console script after that."""

    def __init__(self, path: Path, package: str, script: str | None = None) -> None:
        self.path = path
        self.package = package
        self.script = self.path / "bin" / (script or package)

    def executable(self) -> Path | Skip:
        if self.script.exists():
            return self.script
        python = shutil.which("python3") or sys.executable
        print(f"  making {self.path} for {self.package} (first run only)", file=sys.stderr)
        pip = str(self.path / "bin" / "pip")
        steps = [[python, "-m", "venv", str(self.path)], [pip, "install", "-q", self.package]]
        for step in steps:
            done = subprocess.run(step, capture_output=True, text=True, timeout=600)
            if done.returncode != 0:
                last = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
                return Skip(f"`{' '.join(step[-3:])}` failed: {last}")
        if not self.script.exists():
            return Skip(f"{self.package} installed no {self.script.name} script")
        return self.script
