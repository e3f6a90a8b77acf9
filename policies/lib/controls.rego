# The protected paths: the agent's own controls and what else runs code or steers agents without a judge.
#
# A data document: the list paths.rego judges. Writing, creating, deleting, moving or linking any of them
# is tier 3 for every writer (the fs tools, shell commands, Claude Code's Write/Edit/Bash through the hook):
# through them an agent could switch off the hook that judges it (`.claude/settings.local.json` with
# `{"disableAllHooks": true}`), give itself an unjudged MCP server or permission, or run code on a CI
# machine, in a developer's editor or on the next commit.
#
# Each entry: `path` (lower case; compared with the path in lower case, as a case-insensitive file system
# would, macOS's or Windows': `.CLAUDE/Settings.json` is `.claude/settings.json` there), `kind` (which rule
# and reason, see paths.rego `control_kinds`) and `what` (named in the reason). A path names a file or a
# directory and everything below it, found at any depth (`pkg/.claude/settings.json`: an agent started in
# pkg reads it), or only at the workspace root when it starts with "/". `*` matches within one name.
#
# Teams extend the list in a module of their own (rules add to a set across files):
#
#     package gateway.controls
#     protected contains {"path": ".mytool", "kind": "agent", "what": "our agent's settings"}
#
# Instructions files (CLAUDE.md, AGENTS.md, ...) are listed: they steer agents as much as settings do.
# Every agent that starts here loads them into its context unasked, the gateway's and people's own, which
# the gateway does not judge (a developer's Claude Code, Cursor, Codex), so what one agent writes there
# becomes the next one's orders. A person reads the change first. A team that lets agents keep them removes
# those entries here.
package gateway.lib.controls

import rego.v1

protected contains entry if some entry in entries

# The entries this bundle ships.
entries := [
	# --- agent clients: their settings, permissions, hooks and MCP servers ------------------------------
	{"path": ".claude", "kind": "agent", "what": "Claude Code's settings, permissions, hooks, subagents, commands, skills and output styles"},
	{"path": ".mcp.json", "kind": "agent", "what": "Claude Code's project MCP servers"},
	{"path": ".hermes", "kind": "agent", "what": "Hermes Agent's configuration and MCP servers"},
	{"path": ".cursor", "kind": "agent", "what": "Cursor's MCP servers, hooks, rules and permissions"},
	{"path": ".codex", "kind": "agent", "what": "Codex's configuration: sandbox, approval policy, MCP servers"},
	{"path": ".gemini", "kind": "agent", "what": "Gemini CLI's settings, extensions and commands"},
	{"path": ".continue", "kind": "agent", "what": "Continue's configuration and MCP servers"},
	{"path": ".windsurf", "kind": "agent", "what": "Windsurf's rules and workflows"},
	{"path": ".roo", "kind": "agent", "what": "Roo Code's modes, rules and MCP servers"},
	{"path": ".kiro", "kind": "agent", "what": "Kiro's hooks, steering and MCP servers"},
	{"path": ".amazonq", "kind": "agent", "what": "Amazon Q's rules and MCP servers"},
	{"path": ".opencode", "kind": "agent", "what": "opencode's agents, commands and plugins"},
	{"path": "opencode.json", "kind": "agent", "what": "opencode's permissions and MCP servers"},
	{"path": "opencode.jsonc", "kind": "agent", "what": "opencode's permissions and MCP servers"},
	{"path": ".aider.conf.yml", "kind": "agent", "what": "aider's options (auto-yes, lint and test commands)"},

	# --- instructions every agent session loads unasked ---------------------------------------------------
	{"path": "claude.md", "kind": "instructions", "what": "Claude Code's project instructions"},
	{"path": "claude.local.md", "kind": "instructions", "what": "Claude Code's local instructions"},
	{"path": "agents.md", "kind": "instructions", "what": "instructions for Codex, Cursor, Copilot and others"},
	{"path": "agents.override.md", "kind": "instructions", "what": "Codex's instructions"},
	{"path": "gemini.md", "kind": "instructions", "what": "Gemini CLI's instructions"},
	{"path": ".cursorrules", "kind": "instructions", "what": "Cursor's instructions"},
	{"path": ".windsurfrules", "kind": "instructions", "what": "Windsurf's instructions"},
	{"path": ".clinerules", "kind": "instructions", "what": "Cline's instructions"},
	{"path": ".github/copilot-instructions.md", "kind": "instructions", "what": "GitHub Copilot's instructions"},
	{"path": ".github/instructions", "kind": "instructions", "what": "GitHub Copilot's instructions"},
	{"path": ".github/prompts", "kind": "instructions", "what": "GitHub Copilot's prompts"},
	{"path": ".github/agents", "kind": "instructions", "what": "GitHub Copilot's custom agents"},
	{"path": ".github/chatmodes", "kind": "instructions", "what": "GitHub Copilot's chat modes"},

	# --- editors and environments that run code when the workspace is opened or entered ------------------
	{"path": ".vscode", "kind": "editor", "what": "VS Code's settings, tasks, launch configurations, extensions and MCP servers"},
	{"path": "*.code-workspace", "kind": "editor", "what": "a VS Code workspace's settings and tasks"},
	{"path": ".idea", "kind": "editor", "what": "JetBrains run configurations, external tools and file watchers"},
	{"path": ".zed", "kind": "editor", "what": "Zed's settings and tasks"},
	{"path": ".devcontainer", "kind": "editor", "what": "the dev container's image and the commands it runs"},
	{"path": ".devcontainer.json", "kind": "editor", "what": "the dev container's image and the commands it runs"},
	{"path": ".envrc", "kind": "editor", "what": "direnv's script, run on entering the directory"},
	{"path": ".nvim.lua", "kind": "editor", "what": "Neovim's project script (exrc)"},
	{"path": ".exrc", "kind": "editor", "what": "Vim's project script (exrc)"},

	# --- CI: code that runs on other machines, with their secrets ----------------------------------------
	{"path": ".github/workflows", "kind": "ci", "what": "GitHub Actions workflows"},
	{"path": ".github/actions", "kind": "ci", "what": "GitHub Actions"},
	{"path": ".gitlab-ci.yml", "kind": "ci", "what": "GitLab CI"},
	{"path": ".gitlab", "kind": "ci", "what": "GitLab CI includes and templates"},
	{"path": ".circleci", "kind": "ci", "what": "CircleCI"},
	{"path": ".travis.yml", "kind": "ci", "what": "Travis CI"},
	{"path": "jenkinsfile", "kind": "ci", "what": "Jenkins"},
	{"path": "azure-pipelines.yml", "kind": "ci", "what": "Azure Pipelines"},
	{"path": ".azure-pipelines", "kind": "ci", "what": "Azure Pipelines"},
	{"path": ".buildkite", "kind": "ci", "what": "Buildkite"},
	{"path": ".drone.yml", "kind": "ci", "what": "Drone CI"},
	{"path": "bitbucket-pipelines.yml", "kind": "ci", "what": "Bitbucket Pipelines"},
	{"path": ".woodpecker", "kind": "ci", "what": "Woodpecker CI"},
	{"path": ".woodpecker.yml", "kind": "ci", "what": "Woodpecker CI"},
	{"path": ".forgejo", "kind": "ci", "what": "Forgejo Actions"},
	{"path": ".gitea", "kind": "ci", "what": "Gitea Actions"},
	{"path": ".tekton", "kind": "ci", "what": "Tekton pipelines"},
	{"path": "appveyor.yml", "kind": "ci", "what": "AppVeyor"},
	{"path": ".appveyor.yml", "kind": "ci", "what": "AppVeyor"},

	# --- git hooks: code that runs on the next commit, push or checkout ----------------------------------
	{"path": ".git", "kind": "git", "what": "git's hooks, config and objects"},
	{"path": ".githooks", "kind": "hooks", "what": "shared git hooks"},
	{"path": ".husky", "kind": "hooks", "what": "husky's git hooks"},
	{"path": ".pre-commit-config.yaml", "kind": "hooks", "what": "pre-commit's hooks"},
	{"path": ".pre-commit-hooks.yaml", "kind": "hooks", "what": "pre-commit's hooks"},
	{"path": "lefthook.yml", "kind": "hooks", "what": "lefthook's git hooks"},
	{"path": ".lefthook.yml", "kind": "hooks", "what": "lefthook's git hooks"},
	{"path": "lefthook-local.yml", "kind": "hooks", "what": "lefthook's git hooks"},
	{"path": ".lefthook", "kind": "hooks", "what": "lefthook's git hooks"},
	{"path": ".overcommit.yml", "kind": "hooks", "what": "overcommit's git hooks"},

	# --- the gateway itself --------------------------------------------------------------------------------
	{"path": "/gateway.yaml", "kind": "gateway", "what": "roles, upstream commands, the sandbox's mode"},
]

# --- below these, paths are judged afresh --------------------------------------------------------------

# A worktree Claude Code makes for a session (`claude --worktree`) is a checkout of its own: its files are
# ordinary files, judged by the same list from its root (its own .claude, CLAUDE.md and CI stay protected).
# A team that lets subagents keep their project memory adds `exempt contains ".claude/agent-memory"`.
exempt contains ".claude/worktrees/*"
