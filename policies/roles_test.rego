package gateway_test.roles

import rego.v1

import data.gateway.decision
import data.gateway_test.testing

test_granted_tool_is_allowed if {
	d := decision with input as testing.call("planner", "fs_read", {"reads": ["README.md"]})
		with data.roles as testing.roles
	d.action == "allow"
}

test_ungranted_tool_is_denied if {
	d := decision with input as testing.call("planner", "fs_write", {"creates": ["a.txt"]})
		with data.roles as testing.roles
	d.action == "deny"
	"roles.tool_not_granted" in d.rules
}

test_unknown_role_is_denied if {
	d := decision with input as testing.call("root", "fs_read", {})
		with data.roles as testing.roles
	d.action == "deny"
	"roles.unknown_role" in d.rules
}

test_glob_grants_match_whole_names if {
	d := decision with input as testing.call("verifier", "fs_read_everything", {})
		with data.roles as testing.roles
	d.action == "deny"
}
