"""Why an attestation does not verify. Each has its own code (recorded in the ledger) and CLI exit code."""

from __future__ import annotations

from typing import ClassVar

from gateway.errors import GatewayError

__all__ = ["AttestationError", "AttestationInvalid", "NoAttestation", "NotPublished", "UnknownKey"]


class AttestationError(GatewayError):
    exit_code: ClassVar[int] = 1


class AttestationInvalid(AttestationError):
    """Forged, altered or malformed: its signature, payload or subject does not hold."""

    code = "attestation_invalid"
    exit_code = 3


class UnknownKey(AttestationInvalid):
    """Signed, but by no key the gateway publishes."""

    code = "attestation_unknown_key"
    exit_code = 4


class NoAttestation(AttestationError):
    """The commit carries no attestation (or is not a commit)."""

    code = "attestation_missing"
    exit_code = 5


class NotPublished(AttestationError):
    """The attestation is signed, but the gateway never published this merge (or withdrew it)."""

    code = "attestation_not_published"
    exit_code = 6
