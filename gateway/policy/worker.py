"""A decision worker: evaluates Rego for a running gateway, one request at a time, over stdin and stdout.

Started by gateway/policy/isolated.py as ``python -m gateway.policy.worker``; it imports the bundle and
nothing else, so it starts in a fraction of a second, and the gateway can kill it when a decision runs
past its deadline without losing anything but that decision.

Protocol, one JSON line each: the first line names the bundle (``{"directory", "data", "data_revision",
"checked"}``; ``checked`` is the content digest the gateway's own load of it passed its checks with, so a
worker that reads that same content skips them, a tenth of a second of its start) and is answered
``{"ok": true}`` once it loads (or ``{"ok": false, "error"}``); then each request is a header line
(``{"rule", "revision"}``, with ``"data", "data_revision"`` when the gateway's data, the roles, changed since,
and ``"checked"`` when its bundle did) and a line holding the input document, answered by ``{"ok": true}``
and a line holding the value (``null`` when undefined), or by ``{"ok": false, "error"}`` alone.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import BinaryIO

from gateway.policy.bundle import BundleError, LiveBundle, engine_message, passed
from gateway.policy.reload import DataDocument


def serve(requests: BinaryIO, answers: BinaryIO) -> int:
    def answer(*lines: str) -> None:
        answers.write("".join(f"{line}\n" for line in lines).encode())
        answers.flush()

    setup = json.loads(requests.readline() or b"{}")
    if isinstance(setup.get("checked"), str):
        passed(setup["checked"])
    try:
        data = DataDocument(setup["data"], setup["data_revision"])
        live = LiveBundle(Path(setup["directory"]), data)
    except (BundleError, KeyError, OSError) as exc:
        answer(json.dumps({"ok": False, "error": f"the policy bundle does not load: {exc}"}))
        return 1
    answer('{"ok": true}')
    while True:
        header = requests.readline()
        payload = requests.readline()
        if not header or not payload:
            return 0  # the gateway closed the pipe (or died): nothing more to decide
        try:
            request = json.loads(header)
            if isinstance(request.get("checked"), str):
                passed(request["checked"])
            if "data" in request:
                data.replace(request["data"], request["data_revision"])
            if request.get("revision") not in (None, live.bundle.revision):
                # the gateway already sees newer files: decide with them, not with what this worker last
                # read, so a decision the gateway caches under its revision was made by that revision
                live.current(force=True)
            value = live.evaluate_json(request["rule"], payload.decode())
        except Exception as exc:
            answer(json.dumps({"ok": False, "error": engine_message(exc)}))
            continue
        # one line: compact JSON (sets, which Rego has and JSON has not, as lists)
        answer('{"ok": true}', json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=list))


if __name__ == "__main__":
    sys.exit(serve(sys.stdin.buffer, sys.stdout.buffer))
