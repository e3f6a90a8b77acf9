package gateway_test.commit

import rego.v1

import data.gateway.decision
import data.gateway_test.testing

commit(role, intent) := d if {
	d := decision with input as object.union(testing.call(role, "intent_commit", {}), {"intent": intent})
		with data.roles as object.union(testing.roles, {"worker": object.union(testing.roles.worker, {"tools": ["intent_commit"]})})
}

test_committer_commits_approved_intent if {
	d := commit("committer", {"id": "i1", "state": "approved", "action": "merge"})
	d.action == "allow"
	"commit.execute" in d.rules
}

test_unapproved_intent_is_denied if {
	d := commit("committer", {"id": "i1", "state": "proposed", "action": "merge"})
	d.action == "deny"
	"commit.not_approved" in d.rules
}

test_missing_intent_is_denied if {
	commit("committer", null).action == "deny"
}

test_non_committer_is_denied if {
	d := commit("worker", {"id": "i1", "state": "approved", "action": "merge"})
	"commit.not_committer" in d.rules
}

test_push_asks if {
	d := commit("committer", {"id": "i1", "state": "approved", "action": "push"})
	d.action == "ask"
}

test_commit_class_tool_called_directly_is_denied if {
	doc := testing.call("committer", "repo__merge", {})
	direct := object.union(doc, {"tool": object.union(doc.tool, {"commit_class": true})})
	d := decision with input as direct with data.roles as testing.roles
	d.action == "deny"
	"commit.direct_call" in d.rules
}
