# Paths: where a call reaches. Outside the workspace, into git's internals or CI config: tier 3.
# For roles that work on tasks (requires_claim), every write needs a live claim on the task and must
# stay inside the task's allowed_paths.
package gateway.paths

import rego.v1

import data.gateway.scope

effects := input.effects

touched := {p | some key in ["reads", "writes", "creates", "deletes", "recursive_deletes"]; some p in effects[key]}

changed := {p | some key in ["writes", "creates", "deletes", "recursive_deletes"]; some p in effects[key]}

outside(p) if startswith(p, "/")

findings contains {"tier": 3, "rule": "paths.outside_workspace", "reason": msg} if {
	out := sort([p | some p in touched; outside(p)])
	count(out) > 0
	msg := sprintf("reaches outside the workspace: %s", [concat(", ", out)])
}

# Files that run code on someone else's machine or on the next git operation.
ci_patterns := [
	".github/workflows/**", ".github/actions/**", ".gitlab-ci.yml", ".gitlab/**", ".circleci/**",
	".travis.yml", "Jenkinsfile", "azure-pipelines.yml", ".buildkite/**", ".drone.yml",
	".pre-commit-config.yaml", ".husky/**", ".githooks/**",
]

git_internal(p) if p == ".git"

git_internal(p) if startswith(p, ".git/")

git_internal(p) if contains(p, "/.git/")

ci_config(p) if {
	some pattern in ci_patterns
	glob.match(pattern, ["/"], p)
}

findings contains {"tier": 3, "rule": "paths.git_internals", "reason": msg} if {
	hits := sort([p | some p in changed; git_internal(p)])
	count(hits) > 0
	msg := sprintf("changes git's internals (hooks, config): %s", [concat(", ", hits)])
}

findings contains {"tier": 3, "rule": "paths.ci_config", "reason": msg} if {
	hits := sort([p | some p in changed; ci_config(p)])
	count(hits) > 0
	msg := sprintf("changes CI configuration or hooks: %s", [concat(", ", hits)])
}

# --- task scope -----------------------------------------------------------------------------------

requires_claim if data.roles[input.principal.role].requires_claim

# input.task is null when the caller holds no task: test for an object, never for truthiness.
has_task if is_object(input.task)

task_id := object.get(input.task, "id", "?") if has_task

acts if count(changed) > 0

acts if count(effects.commands) > 0

live_claim if {
	claim := input.task.claim
	claim.owner == input.principal.agent
	time.parse_rfc3339_ns(claim.expires_at) > time.parse_rfc3339_ns(input.context.time)
}

deny contains {"rule": "paths.no_claim", "reason": msg} if {
	requires_claim
	acts
	not has_task
	msg := sprintf("role '%s' must hold a claim on a task before it changes anything (task_claim)", [input.principal.role])
}

deny contains {"rule": "paths.claim_not_held", "reason": msg} if {
	requires_claim
	acts
	has_task
	not live_claim
	msg := sprintf("the claim on task '%s' is expired or held by another agent; claim it again", [task_id])
}

in_scope(p) if scope.matches_any(object.get(input.task, "allowed_paths", []), p)

deny contains {"rule": "paths.out_of_scope", "reason": msg} if {
	requires_claim
	has_task
	outside_scope := sort([p | some p in changed; not outside(p); not in_scope(p)])
	count(outside_scope) > 0
	allowed := concat(", ", object.get(input.task, "allowed_paths", []))
	msg := sprintf("task '%s' allows only %s; this call changes %s", [task_id, allowed, concat(", ", outside_scope)])
}
