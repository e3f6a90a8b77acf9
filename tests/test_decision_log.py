"""The decision log's buffered writer: batches reach the file in order, on size, on flush, at exit and after a
failure, and nothing recorded is dropped without a log line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs

from gateway import decision_log
from gateway.decision_log import DecisionLog, read_entries

ROOT = Path(__file__).resolve().parent.parent
NEVER = 3600.0  # a flush interval no test outlives: only size, flush() or exit write


def record(log: DecisionLog, n: int, tag: str = "d") -> list[str]:
    ids = [f"{tag}{i}" for i in range(n)]
    for decision_id in ids:
        log.record({"tool": {}}, {"action": "allow"}, trace_id=None, span_id=None, decision_id=decision_id)
    return ids


def lines(path: Path) -> list[str]:
    if not path.exists():
        return []
    return [json.loads(line)["decision_id"] for line in path.read_text().splitlines()]


def wait_for(condition: Callable[[], Any], what: str, timeout: float = 60.0) -> Any:
    """Poll until ``condition()`` is truthy (a generous deadline: this waits on the writer, never on a sleep)."""
    deadline = time.monotonic() + timeout
    while not (value := condition()):
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.01)
    return value


def test_entries_wait_in_the_buffer_until_flushed_and_keep_their_order(tmp_path: Path) -> None:
    path = tmp_path / "decisions.jsonl"
    log = DecisionLog(path, labels={}, flush_s=NEVER)
    ids = record(log, 20)
    assert lines(path) == []  # nothing written per entry
    log.flush()
    assert lines(path) == ids
    more = record(log, 3, "e")
    log.flush()
    assert lines(path) == ids + more


def test_a_full_buffer_is_written_at_once(tmp_path: Path) -> None:
    path = tmp_path / "decisions.jsonl"
    probe = DecisionLog(tmp_path / "probe.jsonl", labels={}, flush_s=NEVER)
    record(probe, 1)
    probe.flush()
    size = len((tmp_path / "probe.jsonl").read_bytes())
    log = DecisionLog(path, labels={}, flush_s=NEVER, flush_bytes=3 * size)
    ids = record(log, 7)
    assert lines(path) == ids[:6]  # two full batches of three; the seventh waits
    log.flush()
    assert lines(path) == ids


def test_the_writer_thread_flushes_after_a_short_interval(tmp_path: Path) -> None:
    path = tmp_path / "decisions.jsonl"
    log = DecisionLog(path, labels={}, flush_s=0.01)
    ids = record(log, 5)
    wait_for(lambda: lines(path) == ids, "the writer thread to write the five entries")
    later = record(log, 2, "later")  # the writer stopped when idle; the next entry starts it again
    wait_for(lambda: lines(path) == ids + later, "the writer thread to write the next two")


def test_concurrent_writers_keep_each_ones_order(tmp_path: Path) -> None:
    path = tmp_path / "decisions.jsonl"
    log = DecisionLog(path, labels={}, flush_s=0.001, flush_bytes=2000)
    threads = [threading.Thread(target=record, args=(log, 50, f"t{n}-")) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    log.flush()
    written = lines(path)
    assert sorted(written) == sorted(f"t{n}-{i}" for n in range(4) for i in range(50))
    for n in range(4):
        assert [d for d in written if d.startswith(f"t{n}-")] == [f"t{n}-{i}" for i in range(50)]


def test_read_entries_sees_what_this_process_recorded(tmp_path: Path) -> None:
    path = tmp_path / "decisions.jsonl"
    log = DecisionLog(path, labels={}, flush_s=NEVER)
    ids = record(log, 2)
    assert [entry["decision_id"] for entry in read_entries(path)] == ids


def test_a_clean_exit_writes_what_is_buffered(tmp_path: Path) -> None:
    path = tmp_path / "decisions.jsonl"
    script = (
        "import sys; from pathlib import Path; from gateway.decision_log import DecisionLog\n"
        f"log = DecisionLog(Path(sys.argv[1]), labels={{}}, flush_s={NEVER})\n"
        "log.record({'tool': {}}, {'action': 'deny'}, trace_id=None, span_id=None, decision_id='at-exit')\n"
    )
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    subprocess.run([sys.executable, "-c", script, str(path)], check=True, env=env, timeout=60)
    assert lines(path) == ["at-exit"]


def test_a_failed_write_is_logged_and_its_entries_kept_for_the_next_try(tmp_path: Path) -> None:
    path = tmp_path / "decisions.jsonl"
    log = DecisionLog(path, labels={}, flush_s=NEVER)
    path.mkdir()  # the file cannot be opened for writing
    with capture_logs() as logs:
        ids = record(log, 2)
        log.flush()
        log.flush()  # a second failure in the same streak is not logged again
    failures = [e for e in logs if e["event"].startswith("could not write the decision log")]
    assert len(failures) == 1 and failures[0]["entries"] == ids and failures[0]["log_level"] == "error"
    path.rmdir()
    with capture_logs() as logs:
        more = record(log, 1, "after")
        log.flush()
    assert lines(path) == ids + more  # kept, in order, in front of the newer entry
    assert [e["event"] for e in logs if e["event"] != "decision"] == ["the decision log is written again"]


def test_entries_beyond_the_pending_cap_are_dropped_with_their_ids_logged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "decisions.jsonl"
    log = DecisionLog(path, labels={}, flush_s=NEVER)
    path.mkdir()
    monkeypatch.setattr(decision_log, "MAX_PENDING_BYTES", 1)  # room for none
    with capture_logs() as logs:
        ids = record(log, 2)
        log.flush()
    dropped = [e for e in logs if e["event"].startswith("decision log entries dropped")]
    assert dropped and dropped[0]["lost"] == ids


def test_a_crash_of_the_writer_thread_is_logged_and_loses_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "decisions.jsonl"
    log = DecisionLog(path, labels={}, flush_s=0.01)

    class Broken:
        @staticmethod
        def sleep(seconds: float) -> None:
            raise RuntimeError("the writer thread breaks")

    monkeypatch.setattr(decision_log, "time", Broken)
    with capture_logs() as logs:
        ids = record(log, 1, "before-crash")
        stopped = wait_for(lambda: [e for e in logs if e["event"] == "the decision log writer stopped"], "its log line")
    assert stopped[0]["pending"] == ids and stopped[0]["log_level"] == "error"
    assert lines(path) == []
    monkeypatch.undo()
    later = record(log, 1, "after-crash")  # a new writer thread takes over, the earlier entry first
    wait_for(lambda: lines(path) == ids + later, "the new writer thread to write both entries")


def test_a_forked_child_does_not_write_its_parents_entries_again(tmp_path: Path) -> None:
    path = tmp_path / "decisions.jsonl"
    log = DecisionLog(path, labels={}, flush_s=NEVER)
    ids = record(log, 1)
    pid = os.fork()
    if pid == 0:  # the child: what it would write at exit
        try:
            decision_log._flush_at_exit()
        finally:
            os._exit(0)
    os.waitpid(pid, 0)
    log.flush()
    assert lines(path) == ids
