"""Rows read into the repositories' frozen dataclasses, by column name (the SELECT names the fields)."""

from __future__ import annotations

from dataclasses import fields
from functools import cache
from typing import Any, TypeVar

from gateway.store.interface import Row

__all__ = ["columns", "typed"]

T = TypeVar("T")


@cache
def columns(cls: type[Any]) -> str:
    """The dataclass's fields as a SELECT list."""
    return ", ".join(f.name for f in fields(cls))


def typed(cls: type[T], row: Row) -> T:
    names = row.keys()  # a row iterates over its values
    return cls(**{name: row[name] for name in names})
