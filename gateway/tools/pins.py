"""Pins of upstream definitions: what each upstream's tools, resources, templates, prompts and instructions were
when a person (or the first connection) trusted them, so that a changed one is noticed and held back.

A definition is pinned whole, as the upstream sent it: its canonical JSON (RFC 8785, the JSON Canonicalization
Scheme: keys sorted by UTF-16 code units, no whitespace, numbers as ECMAScript prints them) hashed with SHA-256.
Every field counts (name, title, description, inputSchema, outputSchema, annotations, _meta, icons, whatever
else it holds), so a flipped ``destructiveHint`` or a new schema property is a change. Its *fingerprint* is the
same digest of the definition without its key (a tool's or prompt's name, a resource's URI, a template's URI
template), so a definition that reappears under another name is told apart as ``renamed`` rather than ``new``.

Where pins come from, per upstream (the store holds them, so every gateway process and replica agrees):
- the operator's lockfile (``gateway-upstreams.lock`` beside gateway.yaml): authoritative for every upstream it
  lists; imported whenever its entry for an upstream differs from the one imported last;
- otherwise trust on first use: the first listing of an upstream that has no pins is pinned as it is;
- a person's approval of a change (``gateway upstreams approve``, /ui/upstreams), recorded in the ledger.

A listed definition whose digest is not its pin's is quarantined (``changed``, ``new`` or ``renamed``): hidden
from agents and refused when called, until a person approves it. While an upstream's instructions are not
pinned, all of its definitions are.

    pins = Pins(db, ledger, lockfile)
    pins.reconcile("echo", definitions)      # first use pins them; changes are recorded and quarantined
    pins.status("echo", definition)          # PinStatus(status="pinned", ...)
    pins.approve(by="alice", name="echo__echo")
"""

from __future__ import annotations

import builtins
import difflib
import hashlib
import json
import math
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

import rfc8785

from gateway.approvals import MAX_COMMENT
from gateway.errors import ConfigError
from gateway.ledger.chain import Ledger, utc_now
from gateway.store import Store, Transaction
from gateway.store.repositories import pins as stored
from gateway.store.repositories.pins import PinIndex
from gateway.types import JSONObject

__all__ = [
    "KINDS",
    "Definition",
    "PinStatus",
    "Pins",
    "canonical",
    "definition_digest",
]

Kind = Literal["tool", "resource", "resource_template", "prompt", "server"]
KINDS: tuple[Kind, ...] = ("tool", "resource", "resource_template", "prompt", "server")
# the field that names a definition of each kind (what a rename changes); a server has one definition
KEY_FIELD: dict[str, str | None] = {
    "tool": "name",
    "prompt": "name",
    "resource": "uri",
    "resource_template": "uriTemplate",
    "server": None,
}
INSTRUCTIONS = "instructions"  # the name of an upstream's one "server" definition: its instructions
Status = Literal["pinned", "changed", "new", "renamed"]
LOCK_VERSION = 1
SAFE_INTEGER = 2**53 - 1


def canonical(value: Any) -> bytes:
    """RFC 8785 canonical JSON. An integer beyond I-JSON's exact range is read as the double a JavaScript
    parser would make of it (RFC 8785 canonicalises what such a parser sees); NaN and infinities, which JSON
    cannot carry, are refused (``ValueError``)."""
    try:
        return rfc8785.dumps(_ijson(value))
    except rfc8785.CanonicalizationError as exc:
        raise ValueError(f"not canonical JSON: {exc}") from None


def _ijson(value: Any) -> Any:
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int):
        if abs(value) <= SAFE_INTEGER:
            return value
        try:
            return float(value)
        except OverflowError:
            raise ValueError(f"the integer {str(value)[:20]}... is too large for JSON") from None
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError("NaN and infinities are not JSON")
        return value
    if isinstance(value, dict):
        return {str(k): _ijson(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_ijson(v) for v in value]
    raise ValueError(f"a {type(value).__name__} is not JSON")


def definition_digest(value: Any) -> str:
    return "sha256:" + hashlib.sha256(canonical(value)).hexdigest()


@dataclass(frozen=True)
class Definition:
    """One definition an upstream listed, as it sent it, with the digests it is pinned by."""

    kind: str
    name: str  # its key: a tool's or prompt's name, a resource's URI, a template's URI template
    exposed: str  # the name agents, role files and the ledger know it by
    body: JSONObject
    digest: str
    fingerprint: str  # the digest of the definition without its key: the same across a rename
    size: int  # bytes of its canonical JSON

    @classmethod
    def of(cls, kind: str, body: JSONObject, exposed: str) -> Definition:
        field = KEY_FIELD[kind]
        name = str(body.get(field, "")) if field else INSTRUCTIONS
        text = canonical(body)
        unnamed = {k: v for k, v in body.items() if k != field} if field else body
        return cls(
            kind,
            name,
            exposed,
            body,
            "sha256:" + hashlib.sha256(text).hexdigest(),
            definition_digest(unnamed),
            len(text),
        )

    @property
    def key(self) -> tuple[str, str]:
        return self.kind, self.name


@dataclass(frozen=True)
class PinStatus:
    """A listed definition against its upstream's pins: what ``input.tool.pin`` says."""

    status: Status
    digest: str
    pinned: str | None  # the pinned digest under its name, if any
    renamed_from: str | None = None  # the pinned name with the same fingerprint
    instructions: Status = "pinned"  # the upstream's instructions: while not pinned, everything is held

    @property
    def quarantined(self) -> bool:
        return self.status != "pinned" or self.instructions != "pinned"

    def reason(self, exposed: str, upstream: str) -> str:
        """Why a quarantined definition is held, and what a person does about it."""
        if self.status == "changed":
            what = f"{exposed!r} changed since it was pinned (digest {self.digest[:19]}..., pinned {self.pinned})"
        elif self.status == "renamed":
            what = f"{exposed!r} is a pinned definition under a new name (it was {self.renamed_from!r})"
        elif self.status == "new":
            what = f"{exposed!r} is new: upstream {upstream!r} did not list it when it was pinned"
        else:
            what = f"the instructions of upstream {upstream!r} changed since they were pinned"
        return (
            f"{what}; it is quarantined until a person approves it "
            f"('gateway upstreams diff {upstream}', then 'gateway upstreams approve', or /ui/upstreams)"
        )

    def as_input(self) -> JSONObject:
        return {
            "status": self.status,
            "digest": self.digest,
            "pinned": self.pinned,
            "renamed_from": self.renamed_from,
            "instructions": self.instructions,
        }


def judge(definition: Definition, pins: PinIndex, instructions: Status = "pinned") -> PinStatus:
    """One definition against its upstream's pins (``instructions``: the status of the upstream's own)."""
    pinned = pins.get(definition.key)
    if pinned is not None:
        status: Status = "pinned" if pinned[0] == definition.digest else "changed"
        return PinStatus(status, definition.digest, pinned[0], instructions=instructions)
    if definition.kind != "server":
        for (kind, name), (_, fingerprint) in pins.items():
            if kind == definition.kind and fingerprint == definition.fingerprint:
                return PinStatus("renamed", definition.digest, None, name, instructions)
    return PinStatus("new", definition.digest, None, instructions=instructions)


class Pins:
    """The store's pins and pending changes, the lockfile, and a person's approvals."""

    def __init__(self, db: Store, ledger: Ledger, lockfile: Path | None = None) -> None:
        self.db = db
        self.ledger = ledger
        self.lockfile = lockfile

    # --- what is pinned --------------------------------------------------------------------------

    def index(self, upstream: str) -> PinIndex:
        return stored.index(self.db, upstream)

    def statuses(self, upstream: str, definitions: Iterable[Definition]) -> dict[tuple[str, str], PinStatus]:
        """Every listed definition against the upstream's pins, read now (another process may have approved)."""
        listed = list(definitions)
        pins = self.index(upstream)
        server = next((d for d in listed if d.kind == "server"), None)
        instructions = judge(server, pins).status if server is not None else "pinned"
        return {d.key: judge(d, pins, "pinned" if d.kind == "server" else instructions) for d in listed}

    def status(self, upstream: str, definition: Definition, server: Definition | None) -> PinStatus:
        """One definition's status (a call's): its own pin and the instructions' read alone, the whole index
        only when it is not pinned (to tell a rename from a new one)."""
        pins = stored.index_for(self.db, upstream, definition.kind, definition.name)
        instructions = judge(server, pins).status if server is not None else "pinned"
        found = judge(definition, pins, "pinned" if definition.kind == "server" else instructions)
        if found.status != "new":
            return found
        return self.statuses(upstream, [definition, *([server] if server is not None else [])])[definition.key]

    def list(self, upstream: str | None = None) -> list[JSONObject]:
        return [_decoded(asdict(pin)) for pin in stored.pins(self.db, upstream)]

    def changes(self, upstream: str | None = None) -> builtins.list[JSONObject]:
        """Pending changes, newest first, each with the pinned definition it would replace (or None) and the
        unified diff between the two (``diff``)."""
        changes = [_decoded(asdict(change)) for change in stored.changes(self.db, upstream)]
        for change in changes:
            change["diff"] = diff_text(change["pinned_definition"], change["definition"], change["name"])
        return changes

    # --- what a connection found -----------------------------------------------------------------

    def reconcile(self, upstream: str, definitions: builtins.list[Definition]) -> dict[tuple[str, str], PinStatus]:
        """Pin a first listing (no pins, no lockfile entry); otherwise record each definition that is not
        pinned as a pending change (once per digest, with a ledger row), drop pending changes it no longer
        lists, and answer every status."""
        now = utc_now()
        with self.db.transaction() as tx:
            if not stored.has_pins(tx, upstream) and stored.lock_digest(tx, upstream) is None:
                for d in definitions:
                    _pin(tx, upstream, d, "first-use", "gateway", now)
                self._record(
                    tx,
                    "pinned",
                    "ok",
                    upstream=upstream,
                    source="first-use",
                    definitions=len(definitions),
                    digests={f"{d.kind}:{d.name}"[:200]: d.digest for d in definitions[:200]},
                )
                return {d.key: PinStatus("pinned", d.digest, d.digest) for d in definitions}
        statuses = self.statuses(upstream, definitions)
        with self.db.transaction() as tx:
            # what is pending is what it lists now: a change it took back, or a definition it no longer lists,
            # is not left for a person to approve (approving it would hold back what it lists instead)
            listed = {(d.kind, d.name, d.digest) for d in definitions if statuses[d.key].status != "pinned"}
            for kind, name, digest in stored.pending(tx, upstream):
                if (kind, name, digest) not in listed:
                    stored.drop_change(tx, upstream, kind, name, digest)
            for d in definitions:
                status = statuses[d.key]
                if status.status == "pinned":
                    continue
                if stored.change_known(tx, upstream, d.kind, d.name, d.digest):
                    stored.see_change(tx, upstream, d.kind, d.name, d.digest, now)
                    continue
                change = stored.Change(
                    upstream,
                    d.kind,
                    d.name,
                    d.digest,
                    d.exposed,
                    status.status,
                    d.fingerprint,
                    json.dumps(d.body, ensure_ascii=False),
                    status.renamed_from,
                    now,
                    now,
                )
                stored.add_change(tx, change)
                self._record(
                    tx,
                    "quarantined",
                    "denied",
                    tool=d.exposed,
                    upstream=upstream,
                    definition_kind=d.kind,
                    name=d.name,
                    status=status.status,
                    digest=d.digest,
                    pinned=status.pinned,
                    renamed_from=status.renamed_from,
                )
        return statuses

    # --- a person's approval ---------------------------------------------------------------------

    def approve(
        self,
        by: str,
        name: str | None = None,
        upstream: str | None = None,
        digest: str | None = None,
        every: bool = False,
        comment: str = "",
    ) -> builtins.list[JSONObject]:
        """Pin pending changes: the one named (an exposed name, or the upstream's own name with ``upstream``),
        or ``every`` one (of ``upstream``, or of all). ``digest`` binds the approval to the definition the
        person saw: a change seen since under another digest is not approved. Each is a ledger row."""
        if not every and not name:
            raise ConfigError("name the change to approve (gateway upstreams diff lists them), or pass --all")
        if len(comment) > MAX_COMMENT:
            raise ConfigError(f"the comment is {len(comment)} characters long; at most {MAX_COMMENT}")
        approved: list[JSONObject] = []
        with self.db.transaction() as tx:
            rows = stored.matching_changes(tx, upstream, name, digest)
            if not rows:
                raise ConfigError(
                    f"no pending change matches {name or 'that'}" + (f" in upstream {upstream!r}" if upstream else "")
                )
            chosen: dict[tuple[str, str, str], stored.Change] = {}
            for row in rows:  # per definition, the candidate seen last (with --digest: that one)
                chosen.setdefault((row.upstream, row.kind, row.name), row)
            if not every and len(chosen) > 1:
                where_found = ", ".join(sorted(f"{u}/{k}/{n}" for u, k, n in chosen))
                raise ConfigError(f"{name!r} names several pending changes ({where_found}): pass --upstream")
            if not every and not digest and len(rows) > 1:
                digests = ", ".join(r.digest for r in rows)
                raise ConfigError(f"{name!r} was seen with several definitions ({digests}): pass --digest")
            now = utc_now()
            for (up, kind, key), row in chosen.items():
                previous = stored.pinned_digest(tx, up, kind, key)
                stored.unpin(tx, up, kind, key)
                # a renamed one's old pin stays: the upstream may list both names (a copy, not a rename)
                _pin(tx, up, _stored(row), "approved", by, now)
                stored.drop_change(tx, up, kind, key, row.digest)
                detail = {
                    "upstream": up,
                    "definition_kind": kind,
                    "name": key,
                    "status": row.status,
                    "digest": row.digest,
                    "previous": previous,
                    "renamed_from": row.renamed_from,
                    "by": by,
                }
                self._record(tx, "approved", "ok", tool=row.exposed, comment=comment.strip() or None, **detail)
                approved.append({**detail, "exposed": row.exposed})
        return approved

    # --- the lockfile ----------------------------------------------------------------------------

    def read_lock(self) -> JSONObject:
        """The lockfile's upstreams, each entry checked (a digest must be its definition's); {} without one."""
        if self.lockfile is None or not self.lockfile.exists():
            return {}
        try:
            raw = json.loads(self.lockfile.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            raise ConfigError(f"{self.lockfile} is not readable JSON: {exc}") from None
        if (
            not isinstance(raw, dict)
            or raw.get("version") != LOCK_VERSION
            or not isinstance(raw.get("upstreams"), dict)
        ):
            raise ConfigError(f"{self.lockfile} must hold {{'version': {LOCK_VERSION}, 'upstreams': {{...}}}}")
        for upstream, kinds in raw["upstreams"].items():
            for kind, name, entry in _entries(self.lockfile, upstream, kinds):
                where = f"{self.lockfile}: {upstream}/{kind}/{name}"
                if not isinstance(entry.get("digest"), str):
                    raise ConfigError(f"{where} has no digest")
                body = entry.get("definition")
                if body is None:
                    continue
                try:
                    expected = Definition.of(kind, body, name) if isinstance(body, dict) else None
                except ValueError:
                    expected = None
                if expected is None or expected.digest != entry["digest"] or expected.name != name:
                    raise ConfigError(f"{where}: its digest is not that of its definition (edited by hand?)")
        return raw["upstreams"]

    def import_lock(self) -> builtins.list[str]:
        """Make the store's pins of each upstream the lockfile lists exactly the lockfile's, where the entry
        differs from the one imported last; answers the upstreams imported."""
        lock = self.read_lock()
        imported = []
        with self.db.transaction() as tx:
            for upstream, kinds in sorted(lock.items()):
                entry_digest = definition_digest(kinds)
                if stored.lock_digest(tx, upstream) == entry_digest:
                    continue
                now = utc_now()
                stored.unpin_upstream(tx, upstream)
                for kind, name, entry in _entries(self.lockfile, upstream, kinds):
                    body = entry.get("definition") or {}
                    exposed = str(entry.get("exposed") or name)
                    fingerprint = str(entry.get("fingerprint") or entry["digest"])
                    _pin(
                        tx,
                        upstream,
                        Definition(kind, name, exposed, body, entry["digest"], fingerprint, 0),
                        "lockfile",
                        "lockfile",
                        now,
                    )
                    stored.drop_change(tx, upstream, kind, name, entry["digest"])
                stored.set_lock_digest(tx, upstream, entry_digest, now)
                self._record(
                    tx, "locked", "ok", upstream=upstream, lockfile=str(self.lockfile), lock_digest=entry_digest
                )
                imported.append(upstream)
        return imported

    def write_lock(self, upstreams: Iterable[str] | None = None) -> Path:
        """Write the store's pins into the lockfile (of ``upstreams``, or of every pinned upstream), keeping
        the entries of the others; the store then counts the file as imported."""
        if self.lockfile is None:
            raise ConfigError("there is no gateway.yaml beside which to write gateway-upstreams.lock")
        lock = self.read_lock()
        pins = self.list()
        names = set(upstreams) if upstreams is not None else {p["upstream"] for p in pins}
        for upstream in names:
            kinds: JSONObject = {}
            for pin in (p for p in pins if p["upstream"] == upstream):
                entry = {"digest": pin["digest"], "fingerprint": pin["fingerprint"], "exposed": pin["exposed"]}
                if pin["definition"]:
                    entry["definition"] = pin["definition"]
                kinds.setdefault(pin["kind"], {})[pin["name"]] = entry
            lock[upstream] = kinds
        self.lockfile.write_text(lock_text(lock), encoding="utf-8")
        now = utc_now()
        with self.db.transaction() as tx:
            for upstream in names:
                stored.set_lock_digest(tx, upstream, definition_digest(lock[upstream]), now)
        return self.lockfile

    def ensure_lockfile(self) -> bool:
        """An empty lockfile where none is yet (it lists no upstream, so first use still pins): once it
        exists, the sandbox mounts it read-only and the file tools refuse it, so no agent can write the pins
        a later start would import. Answers whether it made one."""
        if self.lockfile is None or self.lockfile.exists():
            return False
        try:
            with self.lockfile.open("x", encoding="utf-8") as handle:
                handle.write(lock_text({}))
        except FileExistsError:
            return False
        return True

    def _record(self, tx: Transaction, action: str, outcome: str, tool: str | None = None, **detail: Any) -> None:
        self.ledger.append_in(
            tx,
            {"kind": "upstream", "tool": tool, "outcome": outcome, "detail": {"action": action, **detail}},
        )


def lock_text(upstreams: JSONObject) -> str:
    """The lockfile: sorted, indented JSON (a reviewer reads its diff); digests are over RFC 8785 JSON."""
    document = {
        "version": LOCK_VERSION,
        "canonicalization": "RFC 8785 (JCS); digest: sha256 of the definition, fingerprint: the same without its "
        "name (tool, prompt), uri (resource) or uriTemplate (resource template)",
        "upstreams": upstreams,
    }
    return json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def diff_text(before: JSONObject | None, after: JSONObject, name: str) -> str:
    """A unified diff of two definitions as sorted, indented JSON (what a person reads)."""
    old = json.dumps(before, indent=2, sort_keys=True, ensure_ascii=False).splitlines() if before else []
    new = json.dumps(after, indent=2, sort_keys=True, ensure_ascii=False).splitlines()
    return "\n".join(difflib.unified_diff(old, new, f"pinned {name}", f"listed {name}", lineterm=""))


def _entries(lockfile: Path | None, upstream: str, kinds: Any) -> Iterable[tuple[str, str, JSONObject]]:
    if not isinstance(kinds, dict):
        raise ConfigError(f"{lockfile}: upstreams.{upstream} must be a mapping of kinds")
    for kind, names in kinds.items():
        if kind not in KINDS or not isinstance(names, dict):
            raise ConfigError(f"{lockfile}: upstreams.{upstream}.{kind} is not one of {', '.join(KINDS)}")
        for name, entry in names.items():
            if not isinstance(entry, dict):
                raise ConfigError(f"{lockfile}: upstreams.{upstream}.{kind}.{name} must be a mapping")
            yield kind, name, entry


def _pin(tx: Transaction, upstream: str, d: Definition, source: str, by: str, now: str) -> None:
    body = json.dumps(d.body, ensure_ascii=False)
    stored.pin(tx, stored.Pin(upstream, d.kind, d.name, d.exposed, d.digest, d.fingerprint, body, source, by, now))


def _stored(row: stored.Change) -> Definition:
    """A pending change's definition as it was recorded."""
    return Definition(row.kind, row.name, row.exposed, json.loads(row.definition), row.digest, row.fingerprint, 0)


def _decoded(data: dict[str, Any]) -> JSONObject:
    for key in ("definition", "pinned_definition"):
        if isinstance(data.get(key), str):
            data[key] = json.loads(data[key])
    return data
