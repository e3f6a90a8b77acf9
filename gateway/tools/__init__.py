"""The gateway's tools: its own, by toolset, and upstream MCP servers' (upstream.py, read from the pool at
each lookup: catalog.py). Each toolset is a function that makes its tools from the services they need:

    files      fs_read, fs_list, fs_search, fs_write, fs_edit, fs_delete         tools/files.py
    shell      shell_run                                                          tools/shell.py
    git        git_status, git_diff, git_log                                      tools/git.py
    tasks      task_submit, task_amend, task_list, task_show, task_claim, ...     tasks/tools.py
    intents    intent_propose, intent_approve, intent_commit                      commit/tools.py
    ceremony   merge_ceremony                                                     commit/tools.py
    artifacts  artifact_put, artifact_get, artifact_log, artifact_resolve            artifacts/tools.py

Roles (roles/*.yaml) grant them by name; tests/test_tool_registry.py checks that every tool a role names
exists and that every tool is granted to some role.

    catalog.add(gateway_tools(gateway))
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from gateway.artifacts.store import Artifacts
    from gateway.commit.ceremony import Ceremony
    from gateway.commit.executor import Committer
    from gateway.commit.intents import Intents
    from gateway.config import GatewayConfig
    from gateway.egress import Egress
    from gateway.sandbox import Sandbox
    from gateway.tasks.board import TaskBoard
    from gateway.tools.catalog import Catalog
    from gateway.tools.spec import ToolSpec

__all__ = ["TOOLSETS", "ToolServices", "gateway_tools"]

TOOLSETS = ("files", "shell", "git", "tasks", "intents", "ceremony", "artifacts")


class ToolServices(Protocol):
    """What the toolsets are made from (gateway/runtime.py); the committer and the ceremony on first use."""

    @property
    def config(self) -> GatewayConfig: ...
    @property
    def sandbox(self) -> Sandbox: ...
    @property
    def egress(self) -> Egress: ...
    @property
    def board(self) -> TaskBoard: ...
    @property
    def intents(self) -> Intents: ...
    @property
    def catalog(self) -> Catalog: ...
    @property
    def committer(self) -> Committer: ...
    @property
    def ceremony(self) -> Ceremony: ...
    @property
    def artifacts(self) -> Artifacts: ...


def gateway_tools(services: ToolServices) -> list[ToolSpec]:
    """Every toolset's tools, in the order of TOOLSETS."""
    # imported here: the toolsets import gateway.tools.base, so this package must not import them as it loads
    from gateway.artifacts.tools import artifact_tools
    from gateway.commit.tools import ceremony_tools, intent_tools
    from gateway.tasks.tools import task_tools
    from gateway.tools.files import file_tools
    from gateway.tools.git import git_tools
    from gateway.tools.shell import shell_tools

    config = services.config
    return [
        *file_tools(config.limits),
        *shell_tools(config.limits, config.shell, services.sandbox, services.egress),
        *git_tools(services.sandbox, config.limits),
        *task_tools(services.board),
        *intent_tools(services.intents, lambda: services.committer, services.board, services.catalog),
        *ceremony_tools(lambda: services.ceremony),
        *artifact_tools(services.artifacts, services.board),
    ]
