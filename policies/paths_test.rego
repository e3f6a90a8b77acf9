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

# internal_hint must hold a piece of every CI pattern, or ci_config would never be asked about a path.
test_internal_hint_covers_every_pattern if {
	every pattern in data.gateway.paths.ci_patterns {
		regex.match(data.gateway.paths.internal_hint, lower(replace(replace(pattern, "**", "x"), "*", "x")))
	}
	regex.match(data.gateway.paths.internal_hint, ".git")
	not regex.match(data.gateway.paths.internal_hint, "src/app.py\ndocs/gitignore.md")
}

test_git_internal_matches_whole_parts if {
	every p in [".git", ".git/config", "src/.git", "a/.GIT/hooks/x", ".Git"] {
		data.gateway.paths.git_internal(p)
	}
	every p in [".gitignore", "src/.gitattributes", "x.git", ".github/x", "my.git/config"] {
		not data.gateway.paths.git_internal(p)
	}
}
