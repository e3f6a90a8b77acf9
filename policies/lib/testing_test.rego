# Fixtures shared by the unit tests: roles and an input builder.
package gateway_test.testing

import rego.v1

roles := {
	"planner": {"tools": ["fs_read", "task_submit"], "max_tier": 1, "commit": false, "requires_claim": false},
	"worker": {"tools": ["fs_*", "shell_run", "git_*"], "max_tier": 2, "commit": false, "requires_claim": true},
	"verifier": {"tools": ["fs_read", "verify_run", "intent_approve"], "max_tier": 1, "commit": false},
	"committer": {"tools": ["intent_commit", "repo__merge"], "max_tier": 2, "commit": true},
}

no_effects := {
	"reads": [], "writes": [], "creates": [], "deletes": [], "recursive_deletes": [], "commands": [],
	"network": [], "privileged": false, "packages": [], "opaque": [],
}

live_task := {
	"id": "T1",
	"allowed_paths": ["src/**", "tests/test_app.py"],
	"claim": {"owner": "w1", "expires_at": "2026-11-22T11:00:00Z", "attempt": 1},
}

call(role, tool, effects) := {
	"version": 2,
	"principal": {"agent": "w1", "role": role, "task": null, "jti": "j", "exp": 0},
	"tool": {"name": tool, "provider": "builtin", "annotations": null, "commit_class": false, "read_only": false, "analysed": true},
	"arguments": {},
	"effects": object.union(no_effects, effects),
	"task": null,
	"intent": null,
	"context": {"workspace": "/repo", "trace_id": "t", "time": "2026-11-22T10:00:00Z"},
}

with_task(doc, task) := object.union(doc, {"task": task})

# A simple command as the shell analysis states it (input version 2): argv[0] is taken as the
# normalised program name, it runs at the workspace root, and it states no other facts.
base_command := {
	"argv": [], "redirects": [], "via": "direct", "program": "", "subcommand": null, "subcommand_as_written": null, "operation": null,
	"cwd": ".", "inline_code": [], "reads": [], "writes": [], "deletes": [], "paths": [], "executes": [],
	"env": {}, "access": null, "recursive": false, "world_writable": false,
}

cmd(argv) := object.union(base_command, {"argv": argv, "program": argv[0]})

# A command with more facts: command(["git", "-C", "src", "log"], {"subcommand": "log", "access": "read"}).
command(argv, facts) := object.union(cmd(argv), facts)
