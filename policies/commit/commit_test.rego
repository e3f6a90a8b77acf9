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

merge(deleted, tracked) := {
	"id": "i1", "task_id": "T1", "state": "approved", "action": "merge",
	"diff": {
		"added": 1, "changed": 2, "deleted": deleted, "tracked": tracked, "deleted_share": deleted / tracked,
		"lines_added": 10, "lines_deleted": 5,
	},
}

test_a_merge_deleting_most_of_the_repository_asks_a_person_with_the_numbers if {
	d := commit("committer", merge(3950, 6005))
	d.action == "ask"
	d.tier == 3
	"commit.mass_deletion" in d.rules
	some reason in d.reasons
	contains(reason, "deletes 3950 of the 6005 files tracked where task 'T1' forked (66%; 1 added, 2 changed)")
}

test_an_ordinary_merge_runs if {
	d := commit("committer", merge(3, 6005))
	d.action == "allow"
	not "commit.mass_deletion" in d.rules
}

test_many_deletions_in_a_big_repository_ask_whatever_the_share if {
	"commit.mass_deletion" in commit("committer", merge(501, 100000)).rules
	not "commit.mass_deletion" in commit("committer", merge(499, 100000)).rules
}

test_a_small_repository_losing_a_few_files_runs if {
	commit("committer", merge(5, 8)).action == "allow"
}

test_the_thresholds_are_data if {
	d := commit("committer", merge(3, 10)) with data.settings.merge_deletions as {"files": 2, "share": 0.1}
	"commit.mass_deletion" in d.rules
	some reason in d.reasons
	contains(reason, "held above 2 files and 10%, or 500 files")
}

test_a_merge_without_its_shape_is_judged_as_before if {
	commit("committer", {"id": "i1", "task_id": "T1", "state": "approved", "action": "merge", "diff": null}).action == "allow"
}
