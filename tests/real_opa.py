"""The real Open Policy Agent (OPA v1.20.2's Go engine), in a test process: no OPA binary can be had here.

The PyPI wheel ``opa-golib-python-bindings`` embeds OPA's Go evaluator as a C shared library
(``libopabridge.so``) with a small ctypes wrapper. Its wheels are tagged for Python 3.14 only, but the
library loads from 3.11 once the wheel is unpacked onto ``sys.path``. ``make test`` installs it into the
venv with ``install`` below: the pinned version, the wheel's sha256 checked, and two copies of the library,
each checked by sha256 too:

- ``strict``: the library as shipped. The bridge evaluates with OPA's strict builtin errors: a builtin that
  fails (``glob.match`` of a pattern that does not parse) fails the whole query, as regorus does.
- ``lenient``: the same library with that one flag turned off (one byte: the ``true`` given to
  ``rego.StrictBuiltinErrors`` in the bridge's evaluation). That is how an OPA server evaluates a request
  that does not ask for strict errors: a failing builtin makes its expression undefined, so
  ``not glob.match(bad, ...)`` is true. tests/opa_rest_server.py serves it.

A process holds one Go runtime, so it loads one of the two (``load``); the other runs in a subprocess.
Deciding thousands of inputs, a subprocess is cheaper anyway (``OpaProcess``): Go reads ``GOGC`` only from the
environment a process starts with, and with the default (100) its garbage collector took a third of the CPU
of each evaluation of the bundle; at ``GOGC=1000`` it takes a few percent, for a heap of about 130 MB.

    python tests/real_opa.py install .venv/real-opa     # what `make test` runs
    opa = RealOpa.for_bundle(Path("policies"), {"roles": roles})   # the modules (unit tests excluded), data
    opa.evaluate("gateway.decision", input_doc)         # the value, None when undefined; raises OpaFailure
    opa.query("x := data.gateway.fired", input_doc)     # the bindings of each result

    # either library, in a process of its own: one JSON input per line in, one answer per line out
    python tests/real_opa.py evaluate --mode lenient --bundle DIR --data data.json --query Q < inputs.jsonl
    answers = OpaProcess("strict", Path("policies"), data_file, query, input_lines).answers()
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import zipfile
from pathlib import Path
from typing import Any

REQUIREMENT = "opa-golib-python-bindings==0.4.4"
WHEEL = "opa_golib_python_bindings-0.4.4-py3-none-manylinux_2_34_x86_64.whl"
WHEEL_SHA256 = "d411c901e14b8c7c3023e23e4a944f4cf429c1d31baf80e959e57d11efbfd24a"
OPA_VERSION = "v1.20.2"
LIBRARY = "opa_bindings/libopabridge.so"
LIBRARY_SHA256 = {
    "strict": "8da2cf16edeae1c07e617b9572d2d1c61bad2ead8b620c79fc093be493b0f582",
    "lenient": "9acc43b3d5f10d825cd0ba80998f7b48ea10595891dc17497840d356e9a4ccfa",
}
MODES = tuple(LIBRARY_SHA256)
# In main.evalCommon.func1: lea StrictBuiltinErrors.3 closure; mov %rcx,(%rax); movb $0x1,0x8(%rax) - the
# closure's captured `yes`. The text segment is mapped at its file offset, so this is the file offset too.
STRICT_FLAG_AT = 0x9AB0A4
STRICT_FLAG_CODE = bytes.fromhex("488d0df5060000488908c6400801")

ROOT = Path(__file__).resolve().parent.parent
INSTALLED = Path(sys.prefix) / "real-opa"  # where `make test` puts it: in the venv the tests run from
GO_GC = "1000"  # the evaluating processes' GOGC (see above)
MISSING = f"the real OPA is not installed in {INSTALLED}: run `make .venv/real-opa/.installed` (make test does)"


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def install(target: Path) -> None:
    """Download the pinned wheel (pip, no dependencies), check it, and unpack a strict and a lenient copy."""
    with tempfile.TemporaryDirectory() as scratch:
        download = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:"]
        download += ["--python-version", "3.14", "--platform", "manylinux_2_34_x86_64", "-d", scratch, REQUIREMENT]
        subprocess.run(download, check=True)
        wheel = Path(scratch) / WHEEL
        if sha256(wheel) != WHEEL_SHA256:
            raise SystemExit(f"{WHEEL}: sha256 {sha256(wheel)}, expected {WHEEL_SHA256}: refusing to use it")
        shutil.rmtree(target, ignore_errors=True)
        for mode in MODES:
            with zipfile.ZipFile(wheel) as unpacked:
                unpacked.extractall(target / mode)
        library = target / "lenient" / LIBRARY
        code = bytearray(library.read_bytes())
        at = STRICT_FLAG_AT
        if code[at : at + len(STRICT_FLAG_CODE)] != STRICT_FLAG_CODE:
            raise SystemExit(f"{library}: the strict-builtin-errors flag is not where it was: not patching")
        code[at + len(STRICT_FLAG_CODE) - 1] = 0
        library.write_bytes(bytes(code))
        for mode in MODES:
            found = sha256(target / mode / LIBRARY)
            if found != LIBRARY_SHA256[mode]:
                raise SystemExit(f"{target / mode / LIBRARY}: sha256 {found}, expected {LIBRARY_SHA256[mode]}")


_loaded: str | None = None


def load(mode: str = "strict", root: Path = INSTALLED) -> Any:
    """The ``opa_bindings`` module with the ``mode`` library; one mode per process (one Go runtime)."""
    global _loaded
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}")
    if _loaded not in (None, mode):
        raise RuntimeError(f"this process loaded the {_loaded} OPA library; the {mode} one needs another process")
    directory = root / mode
    if not (directory / LIBRARY).is_file():
        raise FileNotFoundError(MISSING)
    if _loaded is None:
        sys.path.insert(0, str(directory))
        _loaded = mode
    import opa_bindings

    if not Path(opa_bindings.__file__).is_relative_to(directory):
        raise RuntimeError(f"opa_bindings was imported from {opa_bindings.__file__}, not {directory}")
    return opa_bindings


class OpaFailure(Exception):
    """OPA refused a module or failed an evaluation (with strict builtin errors: a builtin failed)."""


class RealOpa:
    """A bundle's modules and data in one real OPA engine of this process."""

    def __init__(self, sources: list[tuple[str, str]], data: dict[str, Any], mode: str = "strict") -> None:
        self.bindings = load(mode)
        self.engine = self.bindings.OpaEngine()
        self.mode = mode
        try:
            for name, text in sources:
                self.engine.add_policy(name, text)
            self.engine.add_data(data)
        except self.bindings.OpaError as exc:
            raise OpaFailure(str(exc)) from None

    @classmethod
    def for_bundle(cls, directory: Path, data: dict[str, Any], mode: str = "strict") -> RealOpa:
        """The bundle's policy modules, as the gateway loads them (unit tests excluded)."""
        from gateway.policy.bundle import policy_files

        files = policy_files(directory)
        return cls([(str(p.relative_to(directory)), p.read_text(encoding="utf-8")) for p in files], data, mode)

    def evaluate(self, rule: str, input_doc: Any) -> Any:
        """The value of ``data.<rule>``, None when undefined."""
        try:
            return self.engine.eval_document(rule, input_doc)
        except self.bindings.OpaUndefinedError:
            return None
        except self.bindings.OpaError as exc:
            raise OpaFailure(str(exc)) from None

    def query(self, query: str, input_doc: Any) -> list[dict[str, Any]]:
        """The bindings of each result of a query ([] when it has none)."""
        try:
            return list(self.engine.eval_query(query, input_doc))
        except self.bindings.OpaError as exc:
            raise OpaFailure(str(exc)) from None

    def close(self) -> None:
        self.engine.close()


def evaluate_lines(opa: RealOpa, query: str, lines: Any, out: Any) -> None:
    """One answer line per input line: {"result": [bindings...]} or {"error": why}."""
    for line in lines:
        try:
            answer: dict[str, Any] = {"result": opa.query(query, json.loads(line))}
        except OpaFailure as exc:
            answer = {"error": str(exc)}
        out.write(json.dumps(answer) + "\n")


class OpaProcess:
    """``evaluate`` in a process of its own, answering ``query`` for each of ``lines`` (one JSON input each)
    while this process does other work: the answers are read in a thread, and OPA evaluates on another core.
    Its CPU counts in this process's children once ``answers`` has waited for it."""

    def __init__(self, mode: str, bundle: Path, data: Path, query: str, lines: list[str]) -> None:
        command = [sys.executable, str(Path(__file__)), "evaluate", "--mode", mode, "--bundle", str(bundle)]
        command += ["--data", str(data), "--query", query]
        self.process = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "GOGC": GO_GC},
        )
        self.output: list[tuple[str, str]] = []
        text = "".join(line + "\n" for line in lines)
        self.thread = threading.Thread(target=lambda: self.output.append(self.process.communicate(text)))
        self.thread.start()

    def answers(self) -> list[dict[str, Any]]:
        """One per line: ``{"result": [bindings...]}`` or ``{"error": why}``."""
        self.thread.join()
        out, err = self.output[0]
        if self.process.returncode != 0:
            raise OpaFailure(f"the {self.process.args[3]} OPA process exited {self.process.returncode}: {err[-2000:]}")
        return [json.loads(line) for line in out.splitlines()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    installing = commands.add_parser("install", help="download, check and unpack the pinned wheel")
    installing.add_argument("target", type=Path)
    evaluating = commands.add_parser("evaluate", help="answer a query for each JSON input read from stdin")
    evaluating.add_argument("--mode", choices=MODES, default="strict")
    evaluating.add_argument("--bundle", type=Path, required=True)
    evaluating.add_argument("--data", type=Path, required=True)
    evaluating.add_argument("--query", required=True)
    args = parser.parse_args()
    if args.command == "install":
        install(args.target)
        (args.target / ".installed").touch()
        return
    opa = RealOpa.for_bundle(args.bundle, json.loads(args.data.read_text(encoding="utf-8")), args.mode)
    evaluate_lines(opa, args.query, sys.stdin, sys.stdout)


if __name__ == "__main__":
    main()
