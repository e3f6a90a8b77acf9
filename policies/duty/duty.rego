# Separation of duty: the agent that worked a task does not grade, approve or merge it. input.task
# carries who worked it (every agent that claimed it), input.intent who proposed and approved an intent.
# Teams that want otherwise change this file.
package gateway.concerns.duty

import rego.v1

graders := {"verify_run", "intent_approve", "intent_commit"}

worked if {
	is_object(input.task)
	input.principal.agent in object.get(input.task, "workers", [])
}

# METADATA
# title: Worker grades own work
# description: >-
#   separation of duty: … worked task '…' and may not … it
# custom:
#   rule: duty.worker_grades_own_work
deny contains {"rule": "duty.worker_grades_own_work", "reason": msg} if {
	input.tool.name in graders
	worked
	msg := sprintf("separation of duty: %s worked task '%s' and may not %s it", [input.principal.agent, input.task.id, action[input.tool.name]])
}

action := {"verify_run": "verify", "intent_approve": "approve a merge of", "intent_commit": "commit"}
