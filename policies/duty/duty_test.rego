package gateway_test.duty

import rego.v1

import data.gateway.decision
import data.gateway_test.testing

worked_by_w1 := object.union(testing.live_task, {"workers": ["w0", "w1"], "submitted_by": "planner"})

approved := {"id": "i1", "task_id": "T1", "state": "approved", "action": "merge", "proposed_by": "planner", "approved_by": "v1"}

# ``tool`` called by ``agent`` in ``role`` on task T1, which w0 and w1 worked
graded(agent, role, tool) := d if {
	doc := testing.with_task(testing.call(role, tool, {}), worked_by_w1)
	as_agent := object.union(doc, {"principal": object.union(doc.principal, {"agent": agent}), "intent": approved})
	d := decision with input as as_agent with data.roles as testing.roles
}

refused_for_duty(d) if {
	d.action == "deny"
	d.rules == ["duty.worker_grades_own_work"]
}

test_worker_cannot_verify_its_own_task if {
	d := graded("w1", "verifier", "verify_run")
	refused_for_duty(d)
	d.reasons == ["separation of duty: w1 worked task 'T1' and may not verify it"]
}

test_an_earlier_attempts_worker_cannot_verify_either if {
	refused_for_duty(graded("w0", "verifier", "verify_run"))
}

test_worker_cannot_approve_a_merge_of_its_own_task if {
	d := graded("w1", "verifier", "intent_approve")
	refused_for_duty(d)
	d.reasons == ["separation of duty: w1 worked task 'T1' and may not approve a merge of it"]
}

test_worker_cannot_commit_its_own_task if {
	d := graded("w1", "committer", "intent_commit")
	refused_for_duty(d)
	d.reasons == ["separation of duty: w1 worked task 'T1' and may not commit it"]
}

test_others_verify_approve_and_commit if {
	graded("v1", "verifier", "verify_run").action == "allow"
	graded("v1", "verifier", "intent_approve").action == "allow"
	d := graded("c1", "committer", "intent_commit")
	d.action == "allow"
	"commit.execute" in d.rules
}

test_the_worker_still_reads_its_task if {
	graded("w1", "verifier", "fs_read").action == "allow"
}

test_no_task_no_duty_rule if {
	d := decision with input as testing.call("verifier", "verify_run", {}) with data.roles as testing.roles
	not "duty.worker_grades_own_work" in d.rules
}
