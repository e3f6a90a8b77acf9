"""Attestations of merges: signed, stored, attached to their commit, and checked.

The merge queue calls ``sign`` once a merge commit passed its verification and before the base branch moves:
one store transaction records the DSSE envelope (``attestations``, state ``pending``) and a ledger row of kind
``attestation`` carrying it, then the envelope is written as a git note on the merge commit under
``NOTES_REF``. Only then does the queue publish; ``published`` marks it so. A crash in between is settled by
``recover`` (the queue runs it, under its lease, on start and before every merge): a pending attestation
whose commit is on its base branch is published (its note written again if it is missing), any other is
withdrawn and its note removed, so a note never vouches for a merge that was not published.

    attestations.sign(intent=..., task=..., committer=..., base=..., ref=..., merge_commit=...)
    attestations.published(merge_commit)
    report = attestations.verify("HEAD")     # the statement, or an AttestationError saying why not
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict
from typing import Any

import structlog

from gateway.attest.dsse import jwks, open_envelope, seal
from gateway.attest.errors import AttestationError, AttestationInvalid, NoAttestation, NotPublished
from gateway.attest.statement import PREDICATE_TYPE, STATEMENT_TYPE, merge_predicate, merge_statement
from gateway.digests import canonical_json, digest
from gateway.identity.keys import KeyRing
from gateway.ledger.chain import Ledger, utc_now
from gateway.repo import GitError, Repo
from gateway.store import Store, Transaction
from gateway.store.repositories import attestations
from gateway.tools.pins import Pins
from gateway.types import JSONObject, Principal

__all__ = ["NOTES_REF", "Attestations"]

log = structlog.get_logger("gateway.attest")

NOTES_REF = "refs/notes/gateway-attestations"


class Attestations:
    def __init__(
        self,
        db: Store,
        ledger: Ledger,
        repo: Repo,
        ring: KeyRing,
        pins: Pins | None = None,
        policy_revision: Callable[[], str] | None = None,
    ) -> None:
        self.db = db
        self.ledger = ledger
        self.repo = repo
        self.ring = ring
        self.pins = pins
        self.policy_revision = policy_revision or (lambda: "unknown")

    # --- signing (the merge queue) ------------------------------------------------------------------

    def sign(
        self, *, intent: JSONObject, task: JSONObject, committer: Principal, base: str, ref: str, merge_commit: str
    ) -> JSONObject:
        """Sign and record the merge's attestation (pending until ``published``), and attach it as a note."""
        tree = self.repo.run("rev-parse", "--verify", f"{merge_commit}^{{tree}}").strip()
        kid, key = self.signing_key()
        pins = self.pins.list() if self.pins is not None else []
        lock = self.pins.lockfile if self.pins is not None else None
        lockfile_digest = digest(lock.read_text(encoding="utf-8")) if lock is not None and lock.is_file() else None
        revision = self.policy_revision()
        with self.db.transaction() as tx:
            predicate = merge_predicate(
                tx,
                intent=intent,
                task=task,
                committer=committer,
                base=base,
                ref=ref,
                policy_revision=revision,
                pins=pins,
                lockfile_digest=lockfile_digest,
            )
            envelope = seal(merge_statement(merge_commit, tree, predicate), kid, key)
            text = canonical_json(envelope)
            now = utc_now()
            attestations.record(
                tx,
                attestations.Attestation(
                    merge_commit, tree, ref, intent["id"], task["id"], kid, text, "pending", now, now
                ),
            )
            self._record(
                tx,
                "signed",
                merge_commit,
                trace_id=task["trace_id"],
                principal=committer,
                intent_id=intent["id"],
                kid=kid,
                tree=tree,
                envelope=envelope,
            )
        self._note(merge_commit, text)
        return {"commit": merge_commit, "tree": tree, "kid": kid, "envelope_digest": digest(text)}

    def published(self, commit: str) -> None:
        self._settle(commit, "published")

    def withdraw(self, commit: str, why: str) -> None:
        """The merge was not published: its attestation is withdrawn and its note removed."""
        self.repo.run("notes", f"--ref={NOTES_REF}", "remove", "--ignore-missing", commit, check=False)
        self._settle(commit, "withdrawn", why=why)

    def recover(self) -> list[str]:
        """Settle attestations a crash left pending: published when the base branch has their commit, else
        withdrawn. Called with the merge queue's lease held."""
        settled = []
        for row in attestations.pending(self.db):
            commit, ref = row.commit_id, row.ref
            if _is_ancestor(self.repo, commit, ref):
                self._note(commit, row.envelope)  # the crash may have come before the note was written
                self.published(commit)
                settled.append(f"published the attestation of {commit[:12]} (its merge is on {ref})")
            else:
                self.withdraw(commit, f"the merge was never published on {ref}")
                settled.append(f"withdrew the attestation of {commit[:12]} (its merge was never published)")
        return settled

    def signing_key(self) -> tuple[str, Any]:
        """The attestation signing key; the first is made on first use."""
        if not self.ring.kids():
            self.ring.create()
        return self.ring.signing_key()

    def rotate(self) -> str:
        """A new signing key; the older ones stay published, so what they signed still verifies."""
        return self.ring.create()

    def jwks(self) -> JSONObject:
        if not self.ring.kids():
            self.ring.create()
        return jwks(self.ring)

    # --- reading and verifying ----------------------------------------------------------------------

    def get(self, commit: str) -> JSONObject | None:
        row = attestations.attestation(self.db, commit)
        return asdict(row) if row is not None else None

    def note(self, commit: str) -> str | None:
        text = self.repo.run("notes", f"--ref={NOTES_REF}", "show", commit, check=False)
        return text.strip() or None

    def resolve(self, name: str) -> str:
        if name.startswith("-"):
            raise NoAttestation(f"{name[:80]!r} is not a commit")
        try:
            return self.repo.run("rev-parse", "--verify", "--end-of-options", f"{name}^{{commit}}").strip()
        except GitError:
            raise NoAttestation(f"{name[:80]!r} is not a commit in {self.repo.root}") from None

    def verify(self, name: str, published_keys: JSONObject | None = None, envelope: str | None = None) -> JSONObject:
        """Check the attestation of commit ``name`` (its git note, or ``envelope``) against the gateway's
        published keys (or ``published_keys``, a JWKS); the verified statement, or an AttestationError."""
        commit = self.resolve(name)
        text = envelope if envelope is not None else self.note(commit)
        if text is None:
            raise NoAttestation(f"commit {commit[:12]} carries no gateway attestation (no note under {NOTES_REF})")
        statement, kid = open_envelope(text, published_keys if published_keys is not None else self.jwks())
        tree = self.repo.run("rev-parse", "--verify", f"{commit}^{{tree}}").strip()
        check_statement(statement, commit, tree)
        row = self.get(commit)
        if row is None:
            raise NotPublished(f"the gateway never merged {commit[:12]}: the attestation is not for a merge it made")
        if row["state"] != "published":
            raise NotPublished(
                f"the gateway did not publish the merge {commit[:12]} (its attestation is {row['state']})"
            )
        return {"commit": commit, "tree": tree, "kid": kid, "statement": statement}

    def record_check(self, name: str, result: JSONObject | AttestationError) -> None:
        """A verification, passed or failed, is a ledger row (``gateway attest verify``)."""
        if isinstance(result, AttestationError):
            detail = {"error": result.as_dict()}
            self.ledger.append(
                {
                    "kind": "attestation",
                    "tool": "attest.verify",
                    "outcome": "error",
                    "detail": {"action": "verify", "commit": name[:80], **detail},
                }
            )
        else:
            self.ledger.append(
                {
                    "kind": "attestation",
                    "tool": "attest.verify",
                    "outcome": "ok",
                    "detail": {"action": "verify", "commit": result["commit"], "kid": result["kid"]},
                }
            )

    # --- helpers ------------------------------------------------------------------------------------

    def _note(self, commit: str, text: str) -> None:
        self.repo.run("notes", f"--ref={NOTES_REF}", "add", "-f", "-F", "-", commit, input=text + "\n")

    def _settle(self, commit: str, state: str, **detail: Any) -> None:
        with self.db.transaction() as tx:
            row = attestations.attestation_in(tx, commit)
            if row is None or row.state == state:
                return
            attestations.set_state(tx, commit, state, utc_now())
            self._record(tx, state, commit, intent_id=row.intent_id, **detail)

    def _record(
        self,
        tx: Transaction,
        action: str,
        commit: str,
        *,
        trace_id: str | None = None,
        principal: Principal | None = None,
        intent_id: str | None = None,
        **detail: Any,
    ) -> None:
        self.ledger.append_in(
            tx,
            {
                "kind": "attestation",
                "tool": f"attest.{action}",
                "trace_id": trace_id,
                "principal": principal.model_dump() if principal else None,
                "intent_id": intent_id,
                "outcome": "ok",
                "detail": {"action": action, "commit": commit, **detail},
            },
        )


def _is_ancestor(repo: Repo, commit: str, ref: str) -> bool:
    import subprocess

    with repo.invocation("merge-base", "--is-ancestor", commit, ref) as (argv, env):
        return subprocess.run(argv, env=env, capture_output=True, timeout=60).returncode == 0


def check_statement(statement: JSONObject, commit: str, tree: str) -> None:
    """The statement is the gateway's merge statement about exactly this commit and tree."""
    if statement.get("_type") != STATEMENT_TYPE or statement.get("predicateType") != PREDICATE_TYPE:
        raise AttestationInvalid("the signed payload is not a gateway merge statement")
    digests: dict[str, str] = {}
    for subject in statement.get("subject") or []:
        if isinstance(subject, dict) and isinstance(subject.get("digest"), dict):
            digests.update(subject["digest"])
    if digests.get("gitCommit") != commit:
        raise AttestationInvalid(
            f"the attestation is about commit {str(digests.get('gitCommit'))[:12]}, not {commit[:12]}"
        )
    if digests.get("gitTree") != tree:
        raise AttestationInvalid(
            f"the attestation's tree {str(digests.get('gitTree'))[:12]} is not the commit's {tree[:12]}"
        )
