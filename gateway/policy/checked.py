"""Which policy sources already passed the undefined-function check, remembered across processes.

The check (``gateway.policy.bundle.undefined_calls``) walks regorus's AST of every module: about 50 ms
of each ``gateway check`` and command hook, for sources that rarely change. It depends on the sources
alone, so a pass is remembered as an empty file named by the digest of the sources (every file's name
and text) and of this check's version, in a directory of the state dir (which no agent can reach: the
sandbox hides it and the policy denies writes to it). Any change to any module is a new digest, checked
again. Only passes are remembered; a failure is found again each time. Whatever the directory holds, a
call to a function no module defines still fails when it is evaluated, and the engine's error is a deny.

    checked = CheckedSources(config.state / "policy-checks")
    if not checked.passed(sources):
        ...                                   # run the check; on a pass:
        checked.remember(sources)
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Sequence
from pathlib import Path

# names the check: a change to undefined_calls that could refuse sources it once passed bumps it
CHECK_VERSION = "undefined-calls/1"


class CheckedSources:
    def __init__(self, directory: Path) -> None:
        self.directory = directory

    @staticmethod
    def digest(sources: Sequence[tuple[str, str]]) -> str:
        hasher = hashlib.sha256(CHECK_VERSION.encode())
        for name, text in sorted(sources):
            for part in (name, text):  # length-prefixed: no two different bundles hash the same bytes
                data = part.encode()
                hasher.update(len(data).to_bytes(8, "big") + data)
        return hasher.hexdigest()

    def passed(self, sources: Sequence[tuple[str, str]]) -> bool:
        return (self.directory / self.digest(sources)).is_file()

    def remember(self, sources: Sequence[tuple[str, str]]) -> None:
        """Remembered when the state dir can be written; a read-only one only costs the check next time."""
        with contextlib.suppress(OSError):
            self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
            (self.directory / self.digest(sources)).touch(mode=0o600)
