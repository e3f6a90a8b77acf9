"""Decoders: programs whose output is decoded bytes (base64 -d, gunzip, xxd -r, openssl -d), which hide what
they are. Downloaded or decoded bytes must not reach an interpreter: a pipe from a decoder into sh is opaque.

    FAMILY.decoders["base64"](["-d"])   # True: `base64 -d` prints decoded bytes
"""

from __future__ import annotations

from gateway.effects.shell.family import Decodes, Family, always
from gateway.effects.shell.files import reads
from gateway.effects.shell.text import in_out
from gateway.effects.shell.words import names

__all__ = ["FAMILY"]


def _flags(args: list[str]) -> list[str]:
    """The short-option words (``-d``, ``-dc``), not the long ones."""
    return [a for a in args if a.startswith("-") and not a.startswith("--")]


def _base_n(args: list[str]) -> bool:
    return "--decode" in args or any("d" in a or "D" in a for a in _flags(args))


def _xxd(args: list[str]) -> bool:
    return "-revert" in args or any(a.startswith("-r") for a in _flags(args))


def _compressor(args: list[str]) -> bool:
    return "--decompress" in args or any("d" in a for a in _flags(args))


def _decrypts(args: list[str]) -> bool:
    return any(a in ("-d", "-decrypt", "--decrypt") for a in args)


_ALWAYS = names("gunzip zcat bunzip2 bzcat unxz xzcat unzstd zstdcat uudecode")
_DECODERS: dict[str, Decodes] = {
    **{name: always for name in _ALWAYS},
    **{name: _base_n for name in ("base64", "base32", "basenc", "base58")},
    "xxd": _xxd,
    **{name: _compressor for name in ("gzip", "bzip2", "xz", "zstd", "lz4")},
    **{name: _decrypts for name in ("openssl", "gpg")},
}

FAMILY = Family(
    name="decoders",
    handlers={
        "xxd": in_out("cglnosC"),
        **{name: reads("w", "--wrap") for name in ("base64", "base32", "basenc")},
    },
    decoders=_DECODERS,
    classes={"described_programs": names("base64 base32 basenc xxd")},
)
