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

cd_then_ls(argv) := shell({"commands": [testing.cmd(argv), testing.cmd(["ls"])]})

# On a case-insensitive file system .GIT/hooks is git's hooks directory.
test_git_internals_and_ci_config_ignore_case if {
	task := object.union(testing.live_task, {"allowed_paths": ["**"]})
	"paths.git_internals" in worker({"creates": [".GIT/hooks/pre-commit"]}, task).rules
	"paths.ci_config" in worker({"creates": [".GitHub/Workflows/x.yml"]}, task).rules
}

test_cd_out_of_the_workspace_asks if {
	every argv in [["cd", "/"], ["cd"], ["cd", "-"], ["cd", "~other"], ["cd", ".."], ["cd", "src/../.."], ["pushd", "/etc"]] {
		d := cd_then_ls(argv)
		d.tier == 3
		"paths.cd_outside_workspace" in d.rules
	}
	d := shell({"commands": [testing.cmd(["cd", "src"]), testing.cmd(["cd", "../.."]), testing.cmd(["ls"])]})
	"paths.cd_outside_workspace" in d.rules
}

test_cd_inside_the_workspace_is_fine if {
	cd_then_ls(["cd", "src"]).tier == 1
	cd_then_ls(["cd", "/repo/src"]).tier == 1
	shell({"commands": [testing.cmd(["cd", "src"]), testing.cmd(["cd", ".."]), testing.cmd(["ls"])]}).tier == 1
	shell({"commands": [testing.cmd(["cd", "/repo/src"]), testing.cmd(["cd", ".."])]}).tier == 1
}

# tree-sitter-bash puts the redirection of `cd D && cmd > f` on the cd too: where f lands is unknown.
test_redirect_after_cd_asks if {
	redirected := {"argv": ["cd", ".git/hooks"], "redirects": [{"op": ">", "target": "pre-commit"}], "via": "direct"}
	d := shell({"commands": [redirected, testing.cmd(["echo", "x"])], "creates": ["pre-commit"]})
	d.tier == 3
	"paths.redirect_after_cd" in d.rules
	quiet := {"argv": ["cd", "src"], "redirects": [{"op": ">", "target": "/dev/null", "fd": 2}], "via": "direct"}
	shell({"commands": [quiet]}).tier == 1
}

test_unknown_program_given_a_path_outside_asks if {
	every argv in [["make", "-C", "/tmp"], ["pytest", "--basetemp=/tmp/x"], ["git", "worktree", "add", "/tmp/x"], ["tool", "-o/etc/x"]] {
		d := shell({"commands": [testing.cmd(argv)]})
		d.tier == 3
		"paths.argument_outside_workspace" in d.rules
	}
	shell({"commands": [testing.cmd(["echo", "/etc/passwd"])]}).tier == 1
	shell({"commands": [testing.cmd(["make", "-C", "/repo/src"])]}).tier == 2
	shell({"commands": [testing.cmd(["/usr/bin/make", "2>/dev/null"])]}).tier == 2
}

# A hard link to a file outside the workspace makes its content readable under an inside name.
test_links_to_outside_ask if {
	every argv in [["ln", "/etc/passwd", "pw"], ["ln", "-s", "../x", "y"], ["link", "/etc/shadow", "s"], ["ln", "-t", "d", "/etc/a"]] {
		d := shell({"commands": [testing.cmd(argv)], "creates": ["pw"]})
		"paths.link_outside_workspace" in d.rules
	}
	shell({"commands": [testing.cmd(["ln", "-s", "src/app.py", "app.py"])], "creates": ["app.py"]}).tier == 1
}
