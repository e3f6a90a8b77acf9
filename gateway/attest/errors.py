"""Why an attestation does not verify. Each has its own code, recorded in the ledger and printed by ``gateway
attest verify``, which exits 1 for every one ("done, and the answer is no": exit codes mean one thing in
every command, docs/cli.md)."""

from __future__ import annotations

from typing import ClassVar

from gateway.errors import GatewayError

__all__ = ["AttestationError", "AttestationInvalid", "NoAttestation", "NotPublished", "UnknownKey"]


class AttestationError(GatewayError):
    exit_code: ClassVar[int] = 1  # the answer is no; which no is the code


class AttestationInvalid(AttestationError):
    """Forged, altered or malformed: its signature, payload or subject does not hold."""

    code = "attestation_invalid"


class UnknownKey(AttestationInvalid):
    """Signed, but by no key the gateway publishes."""

    code = "attestation_unknown_key"


class NoAttestation(AttestationError):
    """The commit carries no attestation (or is not a commit)."""

    code = "attestation_missing"


class NotPublished(AttestationError):
    """The attestation is signed, but the gateway never published this merge (or withdrew it)."""

    code = "attestation_not_published"
