package gateway_test.paths

import rego.v1

import data.gateway.decision
import data.gateway_test.testing

worker(effects, task) := d if {
	d := decision with input as testing.with_task(testing.call("worker", "fs_write", effects), task)
		with data.roles as testing.roles
}

test_write_in_scope_is_allowed if {
	worker({"creates": ["src/new.py"]}, testing.live_task).action == "allow"
}

test_write_out_of_scope_is_denied if {
	d := worker({"creates": ["docs/a.md"]}, testing.live_task)
	d.action == "deny"
	"paths.out_of_scope" in d.rules
}

test_write_without_claim_is_denied if {
	d := worker({"creates": ["src/new.py"]}, null)
	d.action == "deny"
	"paths.no_claim" in d.rules
}

test_write_after_claim_expired_is_denied if {
	expired := object.union(testing.live_task, {"claim": {"owner": "w1", "expires_at": "2026-11-22T09:59:59Z", "attempt": 1}})
	d := worker({"creates": ["src/new.py"]}, expired)
	d.action == "deny"
	"paths.claim_not_held" in d.rules
}

test_write_under_another_agents_claim_is_denied if {
	theirs := object.union(testing.live_task, {"claim": {"owner": "w2", "expires_at": "2026-11-22T11:00:00Z", "attempt": 1}})
	"paths.claim_not_held" in worker({"creates": ["src/new.py"]}, theirs).rules
}

test_reads_need_no_claim if {
	worker({"reads": ["docs/a.md"]}, null).action == "allow"
}

test_outside_workspace_asks if {
	d := worker({"reads": ["/etc/passwd"]}, testing.live_task)
	d.tier == 3
	"paths.outside_workspace" in d.rules
}

test_git_hooks_ask if {
	task := object.union(testing.live_task, {"allowed_paths": ["**"]})
	d := worker({"creates": [".git/hooks/pre-commit"]}, task)
	d.tier == 3
	"paths.git_internals" in d.rules
}

# A .git file in a subdirectory points git at another repository (`gitdir: /elsewhere`).
test_a_git_file_in_a_subdirectory_asks if {
	task := object.union(testing.live_task, {"allowed_paths": ["**"]})
	"paths.git_internals" in worker({"creates": ["src/.git"]}, task).rules
	not "paths.git_internals" in worker({"creates": ["src/.gitignore"]}, task).rules
}

test_ci_config_asks if {
	task := object.union(testing.live_task, {"allowed_paths": ["**"]})
	d := worker({"writes": [".github/workflows/ci.yml"]}, task)
	"paths.ci_config" in d.rules
}

shell(effects) := d if {
	task := object.union(testing.live_task, {"allowed_paths": ["**"]})
	d := decision with input as testing.with_task(testing.call("worker", "shell_run", effects), task)
		with data.roles as testing.roles
}

# On a case-insensitive file system .GIT/hooks is git's hooks directory.
test_git_internals_and_ci_config_ignore_case if {
	task := object.union(testing.live_task, {"allowed_paths": ["**"]})
	"paths.git_internals" in worker({"creates": [".GIT/hooks/pre-commit"]}, task).rules
	"paths.ci_config" in worker({"creates": [".GitHub/Workflows/x.yml"]}, task).rules
}

# Where each command runs is the analysis' `cwd`: outside the workspace, or not known (null), is tier 3.
test_a_command_running_outside_the_workspace_asks if {
	every cwd in ["/", "/home/u", "/etc", null] {
		d := shell({"commands": [testing.command(["ls"], {"cwd": cwd})]})
		d.tier == 3
		"paths.cd_outside_workspace" in d.rules
	}
	# a command without a cwd at all (not stated): fail closed
	d := shell({"commands": [object.remove(testing.cmd(["ls"]), ["cwd"])]})
	"paths.cd_outside_workspace" in d.rules
}

test_cd_out_of_the_workspace_asks if {
	d := shell({"commands": [testing.command(["cd", "/"], {"paths": ["/"]})]})
	d.tier == 3
	"paths.cd_outside_workspace" in d.rules
}

test_cd_inside_the_workspace_is_fine if {
	shell({"commands": [testing.command(["cd", "src"], {"paths": ["src"]}), testing.command(["ls"], {"cwd": "src"})]}).tier == 1
	shell({"commands": [testing.command(["cd", ".."], {"cwd": "src", "paths": ["."]}), testing.cmd(["ls"])]}).tier == 1
}

# The policy does not simulate cd: argv that looks like it leaves is not judged, the cwd is.
test_cd_is_not_simulated if {
	shell({"commands": [testing.cmd(["cd", "../.."]), testing.cmd(["ls"])]}).tier == 1
}

# Paths given to programs the analysis does not follow: one outside the workspace is tier 3.
test_unknown_program_given_a_path_outside_asks if {
	every c in [
		[["make", "-C", "/tmp"], ["/tmp"]], [["pytest", "--basetemp=/tmp/x"], ["/tmp/x"]],
		[["tool", "-o/etc/x"], ["/etc/x"]], [["./tool", "../../../etc/x"], ["/etc/x"]],
	] {
		d := shell({"commands": [testing.command(c[0], {"paths": c[1]})]})
		d.tier == 3
		"paths.argument_outside_workspace" in d.rules
	}
	shell({"commands": [testing.command(["make", "-C", "src"], {"paths": ["src"]})]}).tier == 2
	shell({"commands": [testing.cmd(["echo", "/etc/passwd"])]}).tier == 1
}

# A path given to a program with access unknown may be written: git internals and CI config ask.
test_unknown_access_to_git_internals_asks if {
	d := shell({"commands": [testing.command(["./tool", ".git/hooks/pre-commit"], {"paths": [".git/hooks/pre-commit"]})]})
	"paths.git_internals" in d.rules
	"paths.ci_config" in shell({"commands": [testing.command(["./gen", ".github/workflows/x.yml"], {"paths": [".github/workflows/x.yml"]})]}).rules
}

# A link's sources are its reads (the analysis resolves a symlink's source against the link's directory).
test_links_to_outside_ask if {
	every c in [[["ln", "/etc/passwd", "pw"], "/etc/passwd"], [["ln", "-s", "../x", "y"], "/x"], [["link", "/etc/shadow", "s"], "/etc/shadow"]] {
		d := shell({"commands": [testing.command(c[0], {"reads": [c[1]]})], "reads": [c[1]], "creates": ["pw"]})
		"paths.link_outside_workspace" in d.rules
	}
	shell({"commands": [testing.command(["ln", "-s", "src/app.py", "app.py"], {"reads": ["src/app.py"]})], "reads": ["src/app.py"], "creates": ["app.py"]}).tier == 1
}

test_git_internals_match_whole_parts if {
	task := object.union(testing.live_task, {"allowed_paths": ["**"]})
	every p in [".git", ".git/config", "src/.git", "a/.GIT/hooks/x", ".Git"] {
		"paths.git_internals" in worker({"creates": [p]}, task).rules
	}
	every p in [".gitignore", "src/.gitattributes", "x.git", ".github/x", "my.git/config"] {
		worker({"creates": [p]}, task).tier == 1
	}
}

# --- protected paths (controls.rego) -------------------------------------------------------------------

everything := object.union(testing.live_task, {"allowed_paths": ["**"]})

# A path inside each entry: `*` stands for any name.
inside(entry) := concat("/", [replace(trim_prefix(entry.path, "/"), "*", "x"), "f"])

# Every shipped entry, for every kind of change: tier 3, under its kind's rule, the path named in the reason.
test_every_protected_path_asks_for_every_change if {
	every entry in data.gateway.lib.controls.protected {
		rule := data.gateway.concerns.paths.control_kinds[entry.kind].rule
		every key in ["writes", "creates", "deletes", "recursive_deletes"] {
			d := worker({key: [inside(entry)]}, everything)
			d.tier == 3
			rule in d.rules
			some reason in d.reasons
			contains(reason, inside(entry))
			contains(reason, entry.what)
		}
	}
}

# The file or directory itself, at any depth unless anchored at the root ("/gateway.yaml"), in any case.
test_protected_paths_at_any_depth_in_any_case if {
	every entry in data.gateway.lib.controls.protected {
		path := replace(trim_prefix(entry.path, "/"), "*", "x")
		worker({"creates": [path]}, everything).tier == 3
		worker({"creates": [upper(path)]}, everything).tier == 3
	}
	every p in ["pkg/.claude/settings.json", "a/b/.MCP.json", "docs/CLAUDE.md", "svc/.vscode/tasks.json", "x/.github/workflows/y.yml"] {
		worker({"writes": [p]}, everything).tier == 3
	}
	worker({"creates": ["sub/gateway.yaml"]}, everything).tier == 1
	worker({"creates": [".CLAUDE/Settings.Local.JSON"]}, everything).rules == ["paths.agent_controls"]
}

test_ordinary_paths_are_not_protected if {
	every p in [
		"src/app.py", ".gitignore", "src/claude.md.bak", "docs/claude.mdx", ".github/dependabot.yml",
		".github/ISSUE_TEMPLATE/bug.md", "my.claude/x", "claude/settings.json", "vscode/x", "notes/agents.md.txt",
	] {
		worker({"creates": [p]}, everything).tier == 1
	}
}

# A directory on the way to an entry reaches it: `cp -r x .github` can make .github/workflows.
test_directories_on_the_way_ask if {
	every p in [".github", "pkg/.github", ".github/workflows"] {
		"paths.ci_config" in worker({"writes": [p]}, everything).rules
	}
	worker({"creates": [".github/x"]}, everything).tier == 1
}

# Removing the whole workspace removes the hooks that judge the agent; writing into it does not name them.
test_removing_the_workspace_names_the_controls if {
	"paths.agent_controls" in worker({"recursive_deletes": ["."]}, everything).rules
	"paths.agent_controls" in worker({"deletes": ["."]}, everything).rules
	not "paths.agent_controls" in worker({"writes": ["."]}, everything).rules
}

# A Claude Code worktree (.claude/worktrees/NAME) is a checkout of its own: its files are judged from its root.
test_a_claude_worktree_is_judged_from_its_root if {
	worker({"creates": [".claude/worktrees/w1/src/app.py"]}, everything).tier == 1
	worker({"creates": [".claude/worktrees/w1/.claude/settings.local.json"]}, everything).tier == 3
	worker({"creates": [".claude/worktrees/w1/.github/workflows/ci.yml"]}, everything).tier == 3
	worker({"creates": [".claude/worktrees/w1"]}, everything).tier == 3
	worker({"creates": [".claude/worktreesx/a"]}, everything).tier == 3
}

# Paths given to programs the analysis does not follow may be written.
test_unknown_access_to_a_protected_path_asks if {
	d := shell({"commands": [testing.command(["./gen", ".claude/settings.json"], {"paths": [".claude/settings.json"]})]})
	"paths.agent_controls" in d.rules
}

# `ln -s .claude c` makes the controls writable under another name (a later `c/x` is not seen as .claude/x).
test_linking_a_protected_path_asks if {
	d := shell({
		"commands": [testing.command(["ln", "-s", ".claude", "c"], {"reads": [".claude"], "writes": ["c"]})],
		"reads": [".claude"], "creates": ["c"],
	})
	"paths.agent_controls" in d.rules
	shell({
		"commands": [testing.command(["ln", "-s", "src", "s"], {"reads": ["src"], "writes": ["s"]})],
		"reads": ["src"], "creates": ["s"],
	}).tier == 1
}

# Program text the analysis does not follow, read for the names it holds.
test_program_text_naming_a_protected_path_asks if {
	code := "open('.claude/settings.local.json', 'w').write('{}')"
	d := shell({"commands": [testing.command(["python", "-c", code], {"program": "python", "inline_code": [code]})]})
	"paths.agent_controls" in d.rules
	ok := "open('.gitignore').read()"
	not "paths.git_internals" in shell({"commands": [testing.command(["python", "-c", ok], {"program": "python", "inline_code": [ok]})]}).rules
}

# Teams extend the list in a module of their own; a kind the bundle does not know is the agent's controls.
test_a_team_entry_is_protected if {
	mine := data.gateway.lib.controls.protected | {{"path": ".mytool", "kind": "ours", "what": "our agent's settings"}}
	d := worker({"creates": ["a/.mytool/x"]}, everything) with data.gateway.lib.controls.protected as mine
	d.rules == ["paths.agent_controls"]
	contains(d.reasons[0], "our agent's settings")
}

# A team's entry may hold glob or regex syntax: it is matched as written, and the other entries still are.
test_a_team_entry_with_glob_syntax_is_matched_as_written if {
	mine := data.gateway.lib.controls.protected | {{"path": ".my[tool],x(1)", "kind": "agent", "what": "ours"}}
	d := worker({"creates": ["a/.my[tool],x(1)/conf"]}, everything) with data.gateway.lib.controls.protected as mine
	d.rules == ["paths.agent_controls"]
	e := worker({"creates": [".myt"]}, everything) with data.gateway.lib.controls.protected as mine
	e.tier == 1
	f := worker({"creates": [".CLAUDE/settings.json"]}, everything) with data.gateway.lib.controls.protected as mine
	f.rules == ["paths.agent_controls"]
}

# The regular expression and the glob that screen every path must match whatever an entry matches.
test_the_screening_glob_covers_every_entry if {
	every entry in data.gateway.lib.controls.protected {
		glob.match(data.gateway.concerns.paths.protected_glob, ["/"], lower(replace(trim_prefix(entry.path, "/"), "*", "x")))
		glob.match(data.gateway.concerns.paths.protected_glob, ["/"], lower(inside(entry)))
		regex.match(data.gateway.concerns.paths.control_hint, lower(concat("/", ["pkg", inside(entry)])))
		regex.match(data.gateway.concerns.paths.control_hint, lower(split(trim_prefix(entry.path, "/"), "/")[0]))
	}
	not glob.match(data.gateway.concerns.paths.protected_glob, ["/"], "src/app.py")
	not regex.match(data.gateway.concerns.paths.control_hint, "src/app.py\ndocs/claude.mdx\n.gitignore")
}

# core.hooksPath pointing into the workspace makes that directory git's hooks (the input names it).
test_the_configured_hooks_path_is_protected if {
	doc := testing.with_task(testing.call("worker", "fs_write", {"creates": ["scripts/hooks/pre-commit"]}), everything)
	hooked := object.union(doc, {"context": object.union(doc.context, {"git_hooks": "scripts/hooks"})})
	d := decision with input as hooked with data.roles as testing.roles
	"paths.git_hooks" in d.rules
	some reason in d.reasons
	contains(reason, "core.hooksPath")
	plain := decision with input as doc with data.roles as testing.roles
	plain.tier == 1
	elsewhere := object.union(hooked, {"effects": object.union(hooked.effects, {"creates": ["src/scripts/hooks/x"]})})
	other := decision with input as elsewhere with data.roles as testing.roles
	other.tier == 1
}

# A team exempts a directory below which paths are judged afresh (subagents' project memory, say).
test_a_team_exemption if {
	memory := ".claude/agent-memory/reviewer/MEMORY.md"
	worker({"creates": [memory]}, everything).tier == 3
	exempt := data.gateway.lib.controls.exempt | {".claude/agent-memory"}
	d := worker({"creates": [memory]}, everything) with data.gateway.lib.controls.exempt as exempt
	d.tier == 1
	e := worker({"creates": [".claude/settings.json"]}, everything) with data.gateway.lib.controls.exempt as exempt
	e.tier == 3
}
