package gateway_test.decision

import rego.v1

import data.gateway.decision
import data.gateway_test.testing

test_denial_wins_over_everything if {
	d := decision with input as testing.call("planner", "fs_write", {"recursive_deletes": ["src"]})
		with data.roles as testing.roles
	d.action == "deny"
}

test_reasons_are_those_of_the_top_tier if {
	d := decision with input as testing.with_task(
		testing.call("worker", "shell_run", {"reads": ["src/a.py"], "network": [{"host": "evil.example", "via": "curl"}]}),
		testing.live_task,
	)
		with data.roles as testing.roles
	d.tier == 3
	d.rules == ["tiers.network"]
	count(d.reasons) == 1
}

test_tier_within_max_tier_is_allowed if {
	d := decision with input as testing.with_task(testing.call("worker", "fs_edit", {"writes": ["src/app.py"]}), testing.live_task)
		with data.roles as testing.roles
	d.action == "allow"
	d.tier == 2
}

test_tier_above_max_tier_asks if {
	d := decision with input as testing.call("planner", "fs_read", {"reads": ["/etc/hosts"]})
		with data.roles as testing.roles
	d.action == "ask"
}

# rules and reasons in one order: the reason beside a rule is that rule's (issue 27: a global install's rule
# beside the sudo reason)
test_each_reason_sits_beside_its_rule if {
	d := decision with input as testing.with_task(
		testing.call("worker", "shell_run", {
			"privileged": true,
			"packages": [{"manager": "npm", "scope": "global", "names": ["left-pad"]}],
		}),
		testing.live_task,
	)
		with data.roles as testing.roles
	d.rules == ["tiers.global_install", "tiers.privilege"]
	contains(d.reasons[0], "left-pad")
	d.reasons[1] == "asks for elevated privileges (sudo, su, doas)"
}
