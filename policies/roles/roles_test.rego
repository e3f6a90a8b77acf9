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

test_a_call_to_an_unknown_tool_is_denied_by_a_rule if {
	# what an unresolved tool looks like: no provider (null), nothing analysed
	doc := testing.call("planner", "nosuch", {})
	unknown := object.union(doc, {"tool": object.union(doc.tool, {"provider": null, "analysed": false})})
	d := decision with input as unknown with data.roles as testing.roles
	d.action == "deny"
	d.rules == ["roles.unknown_tool"]
}

test_a_call_without_a_tool_is_denied_by_a_rule if {
	d := decision with input as object.remove(testing.call("planner", "fs_read", {"reads": ["README.md"]}), ["tool"])
		with data.roles as testing.roles
	d.action == "deny"
	d.rules == ["roles.unknown_tool"]
}

upstream_call(pin) := object.union(
	testing.call("committer", "repo__merge", {}),
	{"tool": {"provider": "upstream:repo", "read_only": true, "pin": pin}},
)

test_a_pinned_upstream_definition_is_judged_as_usual if {
	d := decision with input as upstream_call({"status": "pinned", "digest": "sha256:a", "instructions": "pinned"})
		with data.roles as testing.roles
	d.action == "allow"
	not "roles.unpinned_definition" in d.rules
}

test_an_unpinned_upstream_definition_is_denied if {
	some status in ["changed", "new", "renamed"]
	d := decision with input as upstream_call({"status": status, "digest": "sha256:b", "instructions": "pinned"})
		with data.roles as testing.roles
	d.action == "deny"
	"roles.unpinned_definition" in d.rules
}

test_changed_instructions_deny_every_definition_of_the_upstream if {
	d := decision with input as upstream_call({"status": "pinned", "digest": "sha256:a", "instructions": "changed"})
		with data.roles as testing.roles
	d.action == "deny"
	"roles.unpinned_definition" in d.rules
}
