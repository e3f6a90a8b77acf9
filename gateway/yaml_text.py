"""YAML text read safely, by libyaml when PyYAML was built with it: the same values as ``yaml.safe_load`` (the
Python constructor and resolver; only the scanner and parser are C), about fifteen times faster. Every gateway
process reads gateway.yaml and the role files at start, and the test suite does so for every test.

    >>> safe_load("a: [1, yes]")
    {'a': [1, True]}
"""

from __future__ import annotations

from typing import Any

import yaml

__all__ = ["SAFE_LOADER", "safe_load"]

SAFE_LOADER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def safe_load(text: str) -> Any:
    """The value of one YAML document; ``yaml.YAMLError`` when it is not one."""
    return yaml.load(text, Loader=SAFE_LOADER)  # a safe loader
