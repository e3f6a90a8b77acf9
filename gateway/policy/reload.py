"""Files looked at again when they change: what the policy bundle, OPA's pushes and the roles share.

A ``Watch`` looks at some files no more than once a second and says what it saw (a fingerprint: path,
mtime and size of each). ``Reloading`` keeps a value loaded from those files and loads it again when the
fingerprint changes; a load that fails keeps the last good value in force and ``last_error`` says why.
This module imports only the standard library: the decision workers import it and must start fast.

    live = Reloading(lambda: fingerprint(directory.glob("*.yaml")), lambda seen: load(directory), (ConfigError,))
    live.current()             # the value in force, after a look at the files (at most once a second)
    live.last_error            # why the files as they are now do not load, or None
"""

from __future__ import annotations

import contextlib
import hashlib
import threading
import time
from collections.abc import Callable, Hashable, Iterable
from pathlib import Path
from typing import Any, Generic, Protocol, TypeVar

from gateway.digests import short_digest

RELOAD_CHECK_S = 1.0

Fingerprint = tuple[tuple[str, int, int], ...]
T = TypeVar("T")


def fingerprint(paths: Iterable[Path]) -> Fingerprint:
    """Path, mtime and size of each file: an edit, an added or a removed file changes it."""
    return tuple((str(p), (s := p.stat()).st_mtime_ns, s.st_size) for p in sorted(paths))


def revision_of(seen: Hashable) -> str:
    return hashlib.sha256(repr(seen).encode()).hexdigest()[:16]


class PolicyData(Protocol):
    """What the policy reads as ``data`` besides its modules (``data.roles``), and a revision naming it.

    A RoleSet is one (the gateway's live roles); ``DataDocument`` is a fixed one."""

    def revision(self, force: bool = False) -> str:
        """The revision in force; ``force`` looks at its files now rather than within the second."""
        ...

    def document(self) -> dict[str, Any]: ...


class DataDocument:
    """A data document that changes only when it is replaced (the decision workers get theirs from the gateway).

    >>> data = DataDocument({"roles": {}})
    >>> data.revision() == DataDocument({"roles": {}}).revision()    # named by its content
    True
    >>> data.replace({"roles": {"worker": {}}}, "r2")   # with the revision the gateway gave it
    >>> data.revision(), data.document()
    ('r2', {'roles': {'worker': {}}})
    """

    def __init__(self, document: dict[str, Any], revision: str | None = None) -> None:
        self.replace(document, revision)

    def replace(self, document: dict[str, Any], revision: str | None = None) -> None:
        self._document, self._revision = document, revision or short_digest(document)

    def revision(self, force: bool = False) -> str:
        return self._revision

    def document(self) -> dict[str, Any]:
        return self._document


class WithSettings:
    """Policy data and gateway.yaml's ``policy.settings`` beside it, as ``data.settings`` (thresholds a
    policy reads, e.g. ``merge_deletions`` in policies/commit/commit.rego); the revision names both."""

    def __init__(self, data: PolicyData, settings: dict[str, Any]) -> None:
        self.data = data
        self.settings = settings
        self._settings_revision = short_digest(settings)

    def revision(self, force: bool = False) -> str:
        return short_digest([self.data.revision(force), self._settings_revision])

    def document(self) -> dict[str, Any]:
        return {**self.data.document(), "settings": self.settings}


def policy_data(data: dict[str, Any] | PolicyData) -> PolicyData:
    """A plain document (a command that decides once, a test) as a fixed PolicyData; a PolicyData as is."""
    return DataDocument(data) if isinstance(data, dict) else data


class Watch:
    """What ``look()`` returns, asked again no more than once every ``interval`` seconds (unless ``force``).
    A look that fails (a file removed while it is listed) keeps what was seen before."""

    def __init__(self, look: Callable[[], Hashable], interval: float = RELOAD_CHECK_S) -> None:
        self._look = look
        self.interval = interval
        self.seen = look()
        self._checked = time.monotonic()

    def look(self, force: bool = False) -> Hashable:
        now = time.monotonic()
        if force or now - self._checked >= self.interval:
            self._checked = now
            with contextlib.suppress(OSError):  # a file removed while it is listed: look again next time
                self.seen = self._look()
        return self.seen


class Reloading(Generic[T]):
    """A value loaded from files, loaded again when they change; the last good value stays in force.

    ``load(seen)`` gets the fingerprint taken before it reads (a file changed while it is read is read
    again at the next look) and raises one of ``errors`` when the files do not load; the first load's
    error propagates. ``on_change(error)`` hears of each reload: None when a new value is in force."""

    def __init__(
        self,
        look: Callable[[], Hashable],
        load: Callable[[Hashable], T],
        errors: tuple[type[Exception], ...],
        on_change: Callable[[str | None], None] | None = None,
        interval: float = RELOAD_CHECK_S,
    ) -> None:
        self.watch = Watch(look, interval)
        self._load = load
        self._errors = errors
        self.on_change = on_change
        self.loaded = self.watch.seen
        self.value = load(self.loaded)
        self.last_error: str | None = None
        self._failed: Hashable = None
        self._lock = threading.Lock()  # one reload at a time; other threads go on with the value in force

    def current(self, force: bool = False) -> T:
        seen = self.watch.look(force)
        if seen == self.loaded or seen == self._failed or not self._lock.acquire(blocking=False):
            return self.value
        try:
            try:
                self.value, self.loaded, self.last_error = self._load(seen), seen, None
            except self._errors as exc:
                self._failed, self.last_error = seen, str(exc)
        finally:
            self._lock.release()
        if self.on_change is not None:
            self.on_change(self.last_error)
        return self.value
