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
# is git's own hooks directory.
git_internal(p) if lower(p) == ".git"

git_internal(p) if startswith(lower(p), ".git/")

git_internal(p) if contains(lower(p), "/.git/")

ci_config(p) if {
	some pattern in ci_patterns
	glob.match(lower(pattern), ["/"], lower(p))
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

# --- directory changes in shell commands ---------------------------------------------------------

# The shell analysis follows `cd` for the paths a command names, but a program that works on its
# current directory without naming it (`ls`, `du`, `git log`) states nothing, so a cd that leaves the
# workspace is a reach outside it. The directory is simulated from the cd commands in order: an
# absolute target outside the workspace, `cd` alone or `cd ~user` (a home), `cd -` (unknown), or a
# relative target whose `..` climbs above the workspace root leaves it.
cd_programs := {"cd", "pushd"}

cd_commands := [cmd | some cmd in effects.commands; tiers.program(cmd) in cd_programs]

cd_target(cmd) := t if {
	args := [a | some i, a in cmd.argv; i > 0; not regex.match("^-[LPe@]+$", a)]
	t := args[0]
}

# Without a workspace in the input every absolute path counts as outside (fail closed).
default workspace := "(no workspace in the input)"

workspace := trim_suffix(input.context.workspace, "/") if is_string(input.context.workspace)

leaves_by_itself(cmd) if not cd_target(cmd)

leaves_by_itself(cmd) if cd_target(cmd) == "-"

leaves_by_itself(cmd) if startswith(cd_target(cmd), "~")

leaves_by_itself(cmd) if {
	startswith(cd_target(cmd), "/")
	cd_target(cmd) != workspace
	not startswith(cd_target(cmd), concat("", [workspace, "/"]))
}

# The depth (below the workspace root) each cd moves by, and where an absolute cd resets it.
relative_part(cmd) := cd_target(cmd) if not startswith(cd_target(cmd), "/")

relative_part(cmd) := trim_prefix(trim_prefix(cd_target(cmd), workspace), "/") if startswith(cd_target(cmd), "/")

segment_steps(cmd) := [s |
	some seg in split(relative_part(cmd), "/")
	not seg in {"", "."}
	s := step(seg)
]

step("..") := -1

step(seg) := 1 if seg != ".."

resets(i) if startswith(cd_target(cd_commands[i]), "/")

# Depth after each segment of each cd, in order; any negative depth is above the workspace root.
depths := [d |
	some i, cmd in cd_commands
	some j, _ in segment_steps(cmd)
	start := max({0} | {k | some k, _ in cd_commands; k <= i; resets(k)})
	before := [x | some k, c in cd_commands; k >= start; k < i; some x in segment_steps(c)]
	d := sum(before) + sum(array.slice(segment_steps(cmd), 0, j + 1))
]

findings contains {"tier": 3, "rule": "paths.cd_outside_workspace", "reason": msg} if {
	some cmd in cd_commands
	leaves_by_itself(cmd)
	msg := sprintf("changes directory outside the workspace: %s", [concat(" ", cmd.argv)])
}

findings contains {"tier": 3, "rule": "paths.cd_outside_workspace", "reason": msg} if {
	some d in depths
	d < 0
	msg := sprintf("changes directory above the workspace root: %s", [concat("; ", [concat(" ", c.argv) | some c in cd_commands])])
}

# tree-sitter-bash reads `cd dir && cmd > file` as one list with the redirection on the whole list,
# so the analysis places `file` in the directory before the cd (`cd .git/hooks && echo x > pre-commit`
# would look like a new file at the root). A cd never needs a redirection of its own: when one shows
# up, where the write lands is not known, and the call is treated as opaque.
stream_targets := {"/dev/null", "/dev/stdin", "/dev/stdout", "/dev/stderr", "/dev/tty", "-"}

findings contains {"tier": 3, "rule": "paths.redirect_after_cd", "reason": msg} if {
	some cmd in effects.commands
	tiers.program(cmd) in {"cd", "pushd", "popd"}
	some r in cmd.redirects
	not r.op in {"<<", "<<-", "<<<"}
	not r.target in stream_targets
	msg := sprintf("a redirection to '%s' follows a change of directory; where it lands cannot be told", [r.target])
}

# --- arguments of programs the analysis does not know ------------------------------------------------

# The shell analysis states the paths of the programs it knows. For the others (and git, whose -C,
# worktree and archive options take directories and files) an argument that is an absolute path
# outside the workspace (`make -C /tmp`, `git worktree add /tmp/x`, `--out=/etc/x`) reaches outside it.
# Printing or testing a path (echo, test, which: the read-only programs) does not.
unanalysed_program(cmd) if {
	name := tiers.program(cmd)
	not name in data.gateway.tiers.read_only_programs
	not name in data.gateway.tiers.described_programs
}

path_argument(arg) := arg if startswith(arg, "/")

path_argument(arg) := value if {
	regex.match("^--?[A-Za-z][A-Za-z0-9-]*=/", arg)
	value := substring(arg, indexof(arg, "=") + 1, -1)
}

path_argument(arg) := value if {
	regex.match("^-[A-Za-z]/", arg) # -C/tmp, -o/etc/x
	value := substring(arg, 2, -1)
}

outside_argument(p) if {
	not p in stream_targets
	not startswith(p, "/dev/fd/")
	p != workspace
	not startswith(p, concat("", [workspace, "/"]))
}

findings contains {"tier": 3, "rule": "paths.argument_outside_workspace", "reason": msg} if {
	args := sort({p |
		some cmd in effects.commands
		unanalysed_program(cmd)
		some i, arg in cmd.argv
		i > 0
		contains(arg, "/") # every path_argument has one: a cheap test before its regexes
		p := path_argument(arg)
		outside_argument(p)
	})
	count(args) > 0
	msg := sprintf("passes paths outside the workspace to a program: %s", [concat(", ", args)])
}

# --- links -----------------------------------------------------------------------------------------

# `ln SOURCE... DEST` states only the new link; the shell analysis does not report the sources. A hard
# link to a file outside the workspace (or to a secret) would let a later, innocent-looking read of the
# link return that file's content, so the sources are checked here: an absolute path outside the
# workspace, a `..` or a `~` in a source reaches outside it (the secrets concern checks their names).
link_programs := {"ln", "link"}

link_operands(cmd) := [a |
	some i, a in cmd.argv
	i > 0
	not startswith(a, "-")
	not cmd.argv[i - 1] in {"-t", "--target-directory", "-S", "--suffix"}
]

link_sources contains src if {
	some i, name in data.gateway.tiers.command_program
	name in link_programs
	cmd := effects.commands[i]
	operands := link_operands(cmd)
	count(operands) == 1
	src := operands[0]
}

link_sources contains src if {
	some i, name in data.gateway.tiers.command_program
	name in link_programs
	cmd := effects.commands[i]
	operands := link_operands(cmd)
	count(operands) > 1
	not link_has_target_dir(cmd)
	some src in array.slice(operands, 0, count(operands) - 1)
}

link_sources contains src if {
	some i, name in data.gateway.tiers.command_program
	name in link_programs
	cmd := effects.commands[i]
	link_has_target_dir(cmd)
	some src in link_operands(cmd)
}

link_has_target_dir(cmd) if {
	some a in cmd.argv
	a in {"-t", "--target-directory"}
}

link_has_target_dir(cmd) if {
	some a in cmd.argv
	startswith(a, "--target-directory=")
}

link_outside(src) if {
	startswith(src, "/")
	src != workspace
	not startswith(src, concat("", [workspace, "/"]))
}

link_outside(src) if startswith(src, "~")

link_outside(src) if ".." in split(src, "/")

findings contains {"tier": 3, "rule": "paths.link_outside_workspace", "reason": msg} if {
	out := sort([src | some src in link_sources; link_outside(src)])
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
