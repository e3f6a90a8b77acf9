"""Signing keys: Ed25519 key pairs in the state dir, named by key id (kid), owner-only permissions.

The newest key signs; every key still in the directory verifies, so rotating keeps tokens signed with
an older kid valid until that key is removed.

    ring = KeyRing(config.keys_dir)
    ring.create()              # a new key becomes the signing key; returns its kid
    ring.signing_key()         # (kid, private key)
    ring.public_key(kid)       # for verification; None when the kid is unknown
    ring.remove(kid)
"""

from __future__ import annotations

import os
import re
import secrets
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from gateway.errors import ConfigError

if TYPE_CHECKING:  # cryptography is imported where a key is made or read: a command that signs nothing skips it
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

KID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


class KeyRing:
    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._public: dict[str, Ed25519PublicKey] = {}

    def create(self) -> str:
        self.directory.mkdir(parents=True, exist_ok=True)
        os.chmod(self.directory, 0o700)
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

        kid = datetime.now(UTC).strftime("%Y%m%d%H%M%S") + "-" + secrets.token_hex(4)
        pem = Ed25519PrivateKey.generate().private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
        path = self.directory / f"{kid}.pem"
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as handle:
            handle.write(pem)
        (self.directory / "active").write_text(kid + "\n")
        os.chmod(self.directory / "active", 0o600)
        return kid

    def kids(self) -> list[str]:
        return sorted(p.stem for p in self.directory.glob("*.pem"))

    def active_kid(self) -> str:
        try:
            kid = (self.directory / "active").read_text().strip()
        except FileNotFoundError:
            raise ConfigError(f"no signing key in {self.directory}: run 'gateway init'") from None
        if kid not in self.kids():
            raise ConfigError(f"the active signing key {kid!r} is missing from {self.directory}")
        return kid

    def signing_key(self) -> tuple[str, Ed25519PrivateKey]:
        kid = self.active_kid()
        return kid, self._load_private(kid)

    def public_key(self, kid: str) -> Ed25519PublicKey | None:
        if not KID.match(kid) or not (self.directory / f"{kid}.pem").exists():
            self._public.pop(kid, None)  # removed, perhaps by another process: no longer verifies
            return None
        key = self._public.get(kid)
        if key is None:
            try:
                key = self._load_private(kid).public_key()
            except FileNotFoundError:
                return None
            self._public[kid] = key
        return key

    def remove(self, kid: str) -> None:
        if kid == self.active_kid():
            raise ConfigError(f"{kid} is the signing key; rotate first, then remove it")
        if not KID.match(kid) or not (self.directory / f"{kid}.pem").exists():
            raise ConfigError(f"no key {kid!r}")
        (self.directory / f"{kid}.pem").unlink()
        self._public.pop(kid, None)

    def has_secret(self, name: str) -> bool:
        return (self.directory / f"{name}.secret").exists()

    def secret(self, name: str) -> bytes:
        """A 32-byte symmetric secret for the gateway's own MACs, created on first use (owner-only)."""
        path = self.directory / f"{name}.secret"
        if not path.exists():
            self.directory.mkdir(parents=True, exist_ok=True)
            try:
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            except FileExistsError:
                return path.read_bytes()
            with os.fdopen(fd, "wb") as handle:
                handle.write(secrets.token_bytes(32))
        return path.read_bytes()

    def _load_private(self, kid: str) -> Ed25519PrivateKey:
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

        key = serialization.load_pem_private_key((self.directory / f"{kid}.pem").read_bytes(), password=None)
        if not isinstance(key, Ed25519PrivateKey):
            raise ConfigError(f"key {kid} is not an Ed25519 key")
        return key
