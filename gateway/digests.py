"""Canonical JSON and its digest: one spelling of a value, and one hash of it, wherever the gateway needs either
(ledger rows and their arguments, artifacts, the decision cache's keys, policy data revisions, intent ids).

    >>> canonical_json({"b": 1, "a": [True, "é"]})
    '{"a":[true,"é"],"b":1}'
    >>> digest({"a": 1})
    'sha256:015abd7f5cc57a2dd94b7590f04ad8084273905ee33ec5cebeae62276a97f862'
    >>> short_digest({"a": 1})
    '015abd7f5cc57a2d'
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

__all__ = ["canonical_json", "digest", "short_digest"]


def canonical_json(value: Any) -> str:
    """JSON with sorted keys and no whitespace: the same value always gives the same text."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def digest(value: Any) -> str:
    """``sha256:`` and the SHA-256 of the value's canonical JSON."""
    # surrogatepass: text that is not valid Unicode (a lone surrogate a request carried) has a digest too;
    # valid text encodes exactly as without it
    return "sha256:" + hashlib.sha256(canonical_json(value).encode("utf-8", "surrogatepass")).hexdigest()


def short_digest(value: Any) -> str:
    """A short name for a value's content (its digest's first 16 hex digits): the same in every process."""
    return digest(value).removeprefix("sha256:")[:16]
