# The commit protocol: irreversible side effects run only through intent_commit, by a role allowed to
# commit, for an intent a verifier approved.
package gateway.commit

import rego.v1

role := object.get(data.roles, input.principal.role, {})

deny contains {"rule": "commit.direct_call", "reason": msg} if {
	input.tool.commit_class
	msg := sprintf("'%s' is commit-class: it runs only through intent_commit, for an approved intent", [input.tool.name])
}

deny contains {"rule": "commit.not_committer", "reason": msg} if {
	input.tool.name == "intent_commit"
	not role.commit
	msg := sprintf("role '%s' may not commit; only a role with commit: true may", [input.principal.role])
}

# input.intent is null unless the call names an intent: test for an object, never for truthiness.
intent := input.intent if is_object(input.intent)

intent := {"id": "(none)", "state": "missing", "action": "(none)"} if not is_object(input.intent)

deny contains {"rule": "commit.not_approved", "reason": msg} if {
	input.tool.name == "intent_commit"
	not intent.state in {"approved", "executing", "committed", "failed", "compensated"}
	msg := sprintf("intent '%s' is %s; a verifier must approve it first", [intent.id, intent.state])
}

findings contains {"tier": 2, "rule": "commit.execute", "reason": msg} if {
	input.tool.name == "intent_commit"
	intent.state == "approved"
	msg := sprintf("commits intent '%s' (%s) exactly once", [intent.id, intent.action])
}

findings contains {"tier": 3, "rule": "commit.push", "reason": "pushes to another host (network egress)"} if {
	input.tool.name == "intent_commit"
	intent.action == "push"
}

findings contains {"tier": 2, "rule": "commit.ceremony", "reason": "merges every verified task with an approved intent"} if {
	input.tool.name == "merge_ceremony"
}
