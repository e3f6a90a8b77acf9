"""DSSE envelopes (https://github.com/secure-systems-lab/dsse, v1.0) signed with the gateway's Ed25519 keys, and
those keys published as a JWKS (RFC 8037: kty OKP, crv Ed25519), so anyone can verify what the gateway signed.

A signature covers the PAE (pre-authentication encoding) of the payload type and the payload bytes, never a
re-serialisation of JSON: the envelope verifies byte for byte, with any standard DSSE library.

    envelope = seal(statement, kid, private_key)          # {"payloadType", "payload", "signatures": [...]}
    statement = open_envelope(envelope_text, jwks(ring))   # the statement, or AttestationInvalid saying why
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import TYPE_CHECKING, Any

from gateway.attest.errors import AttestationInvalid, UnknownKey
from gateway.digests import canonical_json
from gateway.identity.keys import KeyRing
from gateway.types import JSONObject

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

__all__ = ["PAYLOAD_TYPE", "jwks", "open_envelope", "pae", "seal"]

PAYLOAD_TYPE = "application/vnd.in-toto+json"
MAX_ENVELOPE_BYTES = 1024 * 1024  # an attestation is a few KiB; a note larger than this is not read


def pae(payload_type: str, payload: bytes) -> bytes:
    """DSSE's pre-authentication encoding: what a signature covers.

    >>> pae("t", b"ab")
    b'DSSEv1 1 t 2 ab'
    """
    kind = payload_type.encode()
    return b"DSSEv1 %d %s %d %s" % (len(kind), kind, len(payload), payload)


def seal(statement: JSONObject, kid: str, key: Ed25519PrivateKey) -> JSONObject:
    """The statement as a DSSE envelope signed by ``key`` (named ``kid``)."""
    payload = canonical_json(statement).encode()
    signature = key.sign(pae(PAYLOAD_TYPE, payload))
    return {
        "payloadType": PAYLOAD_TYPE,
        "payload": base64.b64encode(payload).decode(),
        "signatures": [{"keyid": kid, "sig": base64.b64encode(signature).decode()}],
    }


def jwks(ring: KeyRing) -> JSONObject:
    """Every key of the ring as a JWK Set: the signing key and every older one, so old attestations verify."""
    from cryptography.hazmat.primitives import serialization

    keys = []
    for kid in ring.kids():
        public = ring.public_key(kid)
        if public is None:
            continue
        raw = public.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
        x = base64.urlsafe_b64encode(raw).rstrip(b"=").decode()
        keys.append({"kty": "OKP", "crv": "Ed25519", "x": x, "kid": kid, "use": "sig", "alg": "EdDSA"})
    return {"keys": keys}


def open_envelope(text: str | bytes, published: JSONObject) -> tuple[JSONObject, str]:
    """The statement an envelope carries and the kid that signed it, once a signature by one of the
    ``published`` keys (a JWKS) verifies over its exact payload bytes; else AttestationInvalid (or UnknownKey)."""
    from cryptography.exceptions import InvalidSignature

    if len(text) > MAX_ENVELOPE_BYTES:
        raise AttestationInvalid(f"the envelope is larger than {MAX_ENVELOPE_BYTES} bytes")
    try:
        envelope = json.loads(text)
    except (ValueError, UnicodeDecodeError) as exc:
        raise AttestationInvalid(f"the envelope is not JSON: {exc}") from None
    if not isinstance(envelope, dict) or envelope.get("payloadType") != PAYLOAD_TYPE:
        raise AttestationInvalid(f"not a DSSE envelope of payloadType {PAYLOAD_TYPE}")
    payload = _b64(envelope.get("payload"), "payload")
    signatures = envelope.get("signatures")
    if not isinstance(signatures, list) or not signatures:
        raise AttestationInvalid("the envelope has no signatures")
    keys = _public_keys(published)
    unknown: list[str] = []
    for signature in signatures:
        kid = signature.get("keyid") if isinstance(signature, dict) else None
        key = keys.get(kid) if isinstance(kid, str) else None
        if key is None or not isinstance(kid, str):
            unknown.append(str(kid)[:80])
            continue
        try:
            key.verify(_b64(signature.get("sig"), "signature"), pae(PAYLOAD_TYPE, payload))
        except InvalidSignature:
            raise AttestationInvalid(f"the signature by key {kid} does not verify: the envelope was altered") from None
        try:
            statement = json.loads(payload)
        except ValueError:
            raise AttestationInvalid("the signed payload is not JSON") from None
        if not isinstance(statement, dict):
            raise AttestationInvalid("the signed payload is not an in-toto statement")
        return statement, kid
    raise UnknownKey(f"no signature by a key the gateway publishes (signed by {', '.join(unknown)})")


def _b64(value: Any, what: str) -> bytes:
    if not isinstance(value, str):
        raise AttestationInvalid(f"the envelope's {what} is missing")
    try:
        raw = base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise AttestationInvalid(f"the envelope's {what} is not base64") from None
    if base64.b64encode(raw).decode() != value:  # base64's unused low bits: another spelling of the same bytes
        raise AttestationInvalid(f"the envelope's {what} is not canonical base64")
    return raw


def _public_keys(published: JSONObject) -> dict[str, Any]:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    keys: dict[str, Any] = {}
    for jwk in published.get("keys") or []:
        if not isinstance(jwk, dict) or (jwk.get("kty"), jwk.get("crv")) != ("OKP", "Ed25519"):
            continue
        try:
            raw = base64.urlsafe_b64decode(str(jwk.get("x")) + "==")
            keys[str(jwk.get("kid"))] = Ed25519PublicKey.from_public_bytes(raw)
        except (ValueError, binascii.Error):
            continue
    return keys
