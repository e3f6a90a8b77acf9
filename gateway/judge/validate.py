"""Validate: arguments within the size limit and valid against the tool's schema."""

from __future__ import annotations

import json
from typing import Any

from pydantic import ValidationError

from gateway.config import LimitsConfig
from gateway.errors import ArgumentsTooLarge, InvalidArguments
from gateway.judge.call import Call
from gateway.tools.spec import ToolSpec

__all__ = ["Validate"]


class Validate:
    """Arguments within the size limit and valid against the tool's schema; the error names the field."""

    def __init__(self, limits: LimitsConfig) -> None:
        self.limits = limits
        self._validators: dict[str, tuple[int, Any]] = {}

    async def __call__(self, call: Call) -> None:
        assert call.spec is not None
        size = len(json.dumps(call.arguments, ensure_ascii=False).encode())
        if size > self.limits.max_argument_bytes:
            raise ArgumentsTooLarge(
                f"arguments are {size} bytes; the limit is {self.limits.max_argument_bytes}", size=size
            )
        model = call.spec.arguments_model
        if model is not None:
            try:
                model.model_validate(call.arguments)
            except ValidationError as exc:
                raise InvalidArguments(_pydantic_message(exc)) from None
            return
        validator = self._validator(call.spec)
        error = next(iter(sorted(validator.iter_errors(call.arguments), key=lambda e: list(e.path))), None)
        if error is not None:
            where = ".".join(str(p) for p in error.absolute_path) or "(arguments)"
            raise InvalidArguments(f"argument '{where}': {error.message[:300]}")

    def _validator(self, spec: ToolSpec) -> Any:
        key = id(spec.input_schema)
        cached = self._validators.get(spec.name)
        if cached is None or cached[0] != key:
            # only tools without an argument model (upstream ones) need it, and jsonschema with it
            from gateway.tools.upstream_schema import SchemaRefused, upstream_validator

            try:
                cached = (key, upstream_validator(spec.input_schema))
            except SchemaRefused as exc:
                raise InvalidArguments(f"tool {spec.name!r}: its input schema is refused ({exc}); not called") from None
            self._validators[spec.name] = cached
        return cached[1]


def _pydantic_message(exc: ValidationError) -> str:
    first = exc.errors()[0]
    where = ".".join(str(p) for p in first["loc"]) or "(arguments)"
    message = first["msg"]
    if first["type"] == "extra_forbidden":
        message = "unknown argument"
    return f"argument '{where}': {message}"
