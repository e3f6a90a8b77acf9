"""A policy-enforcing MCP tool gateway for multi-agent coding systems."""

__version__ = "0.1.0"
