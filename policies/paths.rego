# Paths: where a call reaches. Outside the workspace, into git's internals or CI config: tier 3.
# For roles that work on tasks (requires_claim), every write needs a live claim on the task and must
# stay inside the task's allowed_paths.
package gateway.paths

import rego.v1

import data.gateway.scope
import data.gateway.tiers

effects := input.effects

touched := {p | some key in ["reads", "writes", "creates", "deletes", "recursive_deletes"]; some p in effects[key]}

changed := {p | some key in ["writes", "creates", "deletes", "recursive_deletes"]; some p in effects[key]}

# Paths given to programs the analysis does not follow: they may be written.
unknown_access := {p | some cmd in data.gateway.tiers.commands; some p in object.get(cmd, "paths", [])}

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

# Compared in lower case: on a case-insensitive file system (macOS, Windows) `.GIT/hooks/pre-commit`
# is git's own hooks directory. `.git` as the last part: a .git file in a subdirectory points git at
# another repository (`gitdir: /elsewhere`).
git_internal(p) if regex.match(`(^|/)\.git(/|$)`, lower(p))

# One glob of alternatives ("{a,b,...}"; no pattern holds a comma or a brace): one match per path.
ci_glob := lower(concat("", ["{", concat(",", ci_patterns), "}"]))

ci_config(p) if glob.match(ci_glob, ["/"], lower(p))

# What every git-internal or CI path's text holds, in lower case: one match over all of a call's paths
# (joined) tells apart the calls that touch none, before each path is matched on its own (a call may
# write thousands of files). paths_test.rego checks every CI pattern has its piece here.
internal_hint := `\.git|\.circleci|\.travis|jenkinsfile|azure-pipelines|\.buildkite|\.drone|\.pre-commit|\.husky`

candidates := changed | unknown_access

might_be_internal if regex.match(internal_hint, lower(concat("\n", candidates)))

findings contains {"tier": 3, "rule": "paths.git_internals", "reason": msg} if {
	might_be_internal
	hits := sort([p | some p in candidates; git_internal(p)])
	count(hits) > 0
	msg := sprintf("changes git's internals (hooks, config): %s", [concat(", ", hits)])
}

# The gateway's own configuration (`gateway init` writes gateway.yaml at the workspace root): a change to
# it (roles, upstream commands, the sandbox's mode) changes what every later call may do. The sandbox keeps
# it read-only; the policy says so before anything runs.
findings contains {"tier": 3, "rule": "paths.gateway_config", "reason": msg} if {
	hits := sort([p | some p in candidates; lower(p) == "gateway.yaml"])
	count(hits) > 0
	msg := sprintf("changes the gateway's own configuration: %s", [concat(", ", hits)])
}

findings contains {"tier": 3, "rule": "paths.ci_config", "reason": msg} if {
	might_be_internal
	hits := sort([p | some p in candidates; ci_config(p)])
	count(hits) > 0
	msg := sprintf("changes CI configuration or hooks: %s", [concat(", ", hits)])
}

# --- where shell commands run, and the paths they are given -----------------------------------------

# The shell analysis follows `cd`, `pushd`, `git -C` and `env -C` and states where each command runs
# (`cwd`: workspace-relative, absolute outside it, null when a cd could not be followed). A program
# that works on its current directory without naming it (`ls`, `du`, `git log`) states nothing else,
# so a command that runs outside the workspace, or where the analysis lost track, reaches outside it.
cd_programs := {"cd", "pushd"}

# A cwd the analysis did not state (null or missing) is not known: fail closed.
cwd_outside(cmd) if not is_string(object.get(cmd, "cwd", null))

cwd_outside(cmd) if {
	is_string(cmd.cwd)
	outside(cmd.cwd)
}

findings contains {"tier": 3, "rule": "paths.cd_outside_workspace", "reason": msg} if {
	runs := sort({c | some cmd in data.gateway.tiers.commands; cwd_outside(cmd); c := concat(" ", cmd.argv)})
	count(runs) > 0
	msg := sprintf("runs outside the workspace (after a change of directory), or where the analysis lost track: %s", [concat("; ", runs)])
}

# `cd /` as the last command runs nothing there, but it is where the call leaves its shell.
findings contains {"tier": 3, "rule": "paths.cd_outside_workspace", "reason": msg} if {
	some cmd in data.gateway.tiers.commands
	tiers.program(cmd) in cd_programs
	some p in cmd.paths
	outside(p)
	msg := sprintf("changes directory outside the workspace: %s", [concat(" ", cmd.argv)])
}

# Path-like words given to a program the analysis does not follow (`make -C /tmp`, `./tool ../../x`,
# `pytest --basetemp=/tmp/x`, `-o/etc/x`, `DESTDIR=/x`), resolved against the command's cwd: what it
# may touch, with the access not known. One outside the workspace reaches outside it. Printing or
# testing a path (echo, test, which) states no paths.
findings contains {"tier": 3, "rule": "paths.argument_outside_workspace", "reason": msg} if {
	args := sort({p | some cmd in data.gateway.tiers.commands; not tiers.program(cmd) in cd_programs; some p in cmd.paths; outside(p)})
	count(args) > 0
	msg := sprintf("passes paths outside the workspace to a program: %s", [concat(", ", args)])
}

# A link's sources are reads (resolved as the kernel resolves a symlink: relative to the link's
# directory). A link to a file outside the workspace makes its content readable under an inside name.
link_programs := {"ln", "link"}

findings contains {"tier": 3, "rule": "paths.link_outside_workspace", "reason": msg} if {
	out := sort({p |
		some cmd in data.gateway.tiers.commands
		tiers.program(cmd) in link_programs
		some p in cmd.reads
		outside(p)
	})
	count(out) > 0
	msg := sprintf("links to paths outside the workspace: %s", [concat(", ", out)])
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

# The files that grade a task (its manifest's acceptance) are not the worker's to change: it could
# weaken the check instead of doing the work.
deny contains {"rule": "paths.acceptance", "reason": msg} if {
	requires_claim
	has_task
	graded := sort([p | some p in changed; not outside(p); scope.matches_any(object.get(input.task, "acceptance", []), p)])
	count(graded) > 0
	msg := sprintf("task '%s' is graded by %s: a worker may not change its acceptance files", [task_id, concat(", ", graded)])
}
