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
