# Paths: where a call reaches. Outside the workspace, or into a protected path (controls.rego: the agent's
# own controls, instructions, editors, CI, git hooks, the gateway's config): tier 3.
# For roles that work on tasks (requires_claim), every write needs a live claim on the task and must
# stay inside the task's allowed_paths.
package gateway.concerns.paths

import rego.v1

import data.gateway.lib.portable
import data.gateway.lib.programs
import data.gateway.scope
import data.gateway.concerns.tiers

effects := input.effects

touched := {p | some key in ["reads", "writes", "creates", "deletes", "recursive_deletes"]; some p in effects[key]}

changed := {p | some key in ["writes", "creates", "deletes", "recursive_deletes"]; some p in effects[key]}

# Paths given to programs the analysis does not follow: they may be written.
unknown_access := {p | some cmd in data.gateway.concerns.tiers.commands; some p in object.get(cmd, "paths", [])}

outside(p) if startswith(p, "/")

# METADATA
# title: Outside workspace
# description: >-
#   reaches outside the workspace: …
# custom:
#   rule: paths.outside_workspace
#   tier: 3
findings contains {"tier": 3, "rule": "paths.outside_workspace", "reason": msg} if {
	out := sort([p | some p in touched; outside(p)])
	count(out) > 0
	msg := sprintf("reaches outside the workspace: %s", [concat(", ", out)])
}

# --- protected paths: the agent's own controls, instructions, editors, CI, git hooks (controls.rego) ---

# Each kind of protected path: the rule that names it and why a person decides. A kind a team's entry
# names that is not here is judged as the agent's controls.
control_kinds := {
	"agent": {"rule": "paths.agent_controls", "why": "configures the agent's own controls (what an agent may run without asking, its hooks, its MCP servers)"},
	"instructions": {"rule": "paths.agent_instructions", "why": "changes instructions every agent session here loads unasked (the gateway's agents and people's own)"},
	"editor": {"rule": "paths.editor_config", "why": "configures an editor or environment that runs code when the workspace is opened or entered"},
	"ci": {"rule": "paths.ci_config", "why": "changes CI configuration, which runs code on other machines with their secrets"},
	"hooks": {"rule": "paths.git_hooks", "why": "changes git hooks, which run code on the next commit, push or checkout"},
	"git": {"rule": "paths.git_internals", "why": "changes git's internals (hooks, config)"},
	"gateway": {"rule": "paths.gateway_config", "why": "changes the gateway's own configuration, which decides what every later call may do"},
}

kind_of(entry) := entry.kind if control_kinds[entry.kind]

kind_of(entry) := "agent" if not control_kinds[entry.kind]

# The shipped and the team's entries, and the repository's core.hooksPath when it points into the workspace.
protected := data.gateway.lib.controls.protected | configured_hooks

default configured_hooks := set()

configured_hooks := {{"path": concat("", ["/", hooks]), "kind": "hooks", "what": "the hooks core.hooksPath names"}} if {
	hooks := object.get(input, ["context", "git_hooks"], null)
	is_string(hooks)
	hooks != ""
}

anchored(entry) if startswith(entry.path, "/")

# An entry names a file or directory and everything below it: `{p,p/**}` matched where the entry can
# start (the root for an anchored entry, every name for the others). Paths are compared in lower case
# (portable.lowered: the same on every engine).
own_glob(entry) := own_globs[entry.path]

# Worked out once per decision: a path is matched against every entry at each of its tails.
own_globs := {entry.path: concat("", ["{", g, ",", g, "/**}"]) | some entry in protected; g := entry_glob(entry)}

# The screens below join every entry into one glob and one regular expression, which only works for plain
# entries: no glob or regex syntax but `*`. A team's entry with other characters turns the screens off
# (every path is matched against every entry), and each entry is matched as written (portable.glob_escape).
plain_entries if not regex.match(`[\\\[\]{}?,()+|^$]`, concat("\n", [entry.path | some entry in protected]))

entry_glob(entry) := portable.lowered(trim_prefix(entry.path, "/")) if plain_entries

entry_glob(entry) := portable.glob_escape(portable.lowered(trim_prefix(entry.path, "/"))) if not plain_entries

# Every entry as one glob of alternatives at any depth: one match per path tells apart the paths that touch
# none (almost all of them, and a call may name thousands) before each entry is matched on its own. Built
# by joining (plain entries hold no comma or brace), not entry by entry: it is worked out for every decision.
anywhere := portable.lowered(concat(",", [entry.path | some entry in protected; not startswith(entry.path, "/")]))

at_root := portable.lowered(concat(",", [substring(entry.path, 1, -1) | some entry in protected; startswith(entry.path, "/")]))

protected_glob := concat("", [
	"{", anywhere, ",", replace(anywhere, ",", "/**,"), "/**,**/", replace(anywhere, ",", ",**/"), ",**/",
	replace(anywhere, ",", "/**,**/"), "/**,", at_root, ",", replace(at_root, ",", "/**,"), "/**}",
]) if plain_entries

# The first name of every entry, as one regular expression over whole names: a path that reaches an entry, or
# lies on the way to one, holds one of them. Asked once of all the call's paths joined, then of each path,
# before anything costlier (a call may name thousands of paths, almost always none of them protected).
first_names := regex.replace(concat(",", [anywhere, at_root]), `/[^,]*`, "")

control_hint := concat("", [
	`(^|[/\n])(`, replace(replace(replace(first_names, ".", `\.`), "*", `[^/\n]*`), ",", "|"), `)([/\n]|$)`,
]) if plain_entries

# Below an exempt directory (a checkout of its own) a path is judged from that directory on.
exempt_glob := concat("", ["{", concat(",", [concat("/", [portable.glob_escape(portable.lowered(x)), "**"]) | some x in data.gateway.lib.controls.exempt]), "}"])

# A path and its tails after each "/": where an entry may start.
tails(p) := [concat("/", array.slice(parts, i, count(parts))) | parts := split(p, "/"); some i in numbers.range(0, count(parts) - 1)]

entry_at(entry, tail) if {
	# portable: lib/controls.rego's entries, escaped by portable.glob_escape (no `**/`, no classes)
	glob.match(own_glob(entry), ["/"], tail)
	# portable: the same, for the exempt entries
	not glob.match(exempt_glob, ["/"], tail)
}

protects(entry, p) if {
	anchored(entry)
	entry_at(entry, p)
}

protects(entry, p) if {
	not anchored(entry)
	some tail in tails(p)
	entry_at(entry, tail)
}

# A directory on the way to an entry (`.github` for `.github/workflows`, at any depth): copying into it,
# moving it or deleting it reaches the entry. Screened against the joined lists: most paths are on no way.
somewhere_on_the_way(p) if {
	some tail in tails(p)
	contains(concat("", [",", anywhere, ","]), concat("", [",", tail, "/"]))
}

somewhere_on_the_way(p) if contains(concat("", [",", at_root, ","]), concat("", [",", p, "/"]))

somewhere_on_the_way(p) if not plain_entries

on_the_way(entry, p) if {
	not anchored(entry)
	some tail in tails(p)
	startswith(portable.lowered(entry.path), concat("", [tail, "/"]))
}

on_the_way(entry, p) if {
	anchored(entry)
	startswith(portable.lowered(entry.path), concat("", ["/", p, "/"]))
}

candidates := changed | unknown_access

# What a call changes, inside the workspace (outside it is tier 3 already), in lower case: the paths it
# writes, creates or deletes, and the paths given to programs the analysis does not follow.
changed_inside := {[p, portable.lowered(p)] | some p in candidates; not outside(p)}

removed := {portable.lowered(p) | some key in ["deletes", "recursive_deletes"]; some p in effects[key]}

# A link's source made under another name (`ln -s .claude c`): writes through `c/` reach the entry.
linked := {[p, portable.lowered(p)] |
	some cmd in data.gateway.concerns.tiers.commands
	tiers.program(cmd) in link_programs
	some p in cmd.reads
	not outside(p)
}

# Every protected path the call reaches, as [what the call names, the entry].
reached := changed_inside | linked

might_reach_controls if regex.match(control_hint, concat("\n", [lp | some [_, lp] in reached]))

might_reach_controls if not plain_entries

hinted := {[p, lp] | might_reach_controls; some [p, lp] in reached; hint(lp)}

hint(lp) if regex.match(control_hint, lp)

hint(lp) if not plain_entries

# portable: one glob of alternatives built from the same escaped entries
screened(lp) if glob.match(protected_glob, ["/"], lp)

screened(lp) if not plain_entries

control_hits contains [p, entry] if {
	some [p, lp] in hinted
	screened(lp)
	some entry in protected
	protects(entry, lp)
}

control_hits contains [p, entry] if {
	some [p, lp] in hinted
	lp != "."
	somewhere_on_the_way(lp)
	some entry in protected
	on_the_way(entry, lp)
}

# A path the analysis reports as a pattern (`cp -r x/* .github/` writes `.github/*`) reaches an entry it
# could match: the entry's own name, or a name inside it. The pattern is read as a regular expression that
# matches at least what it could (portable.shell_glob_regex): glob.match fails on `[z-a]`, in one engine or
# the other, and reads `?` and `[...]` differently on non-ASCII text.
patterns := {[p, lp] | some [p, lp] in reached; regex.match(`[*?\[]`, lp)}

control_hits contains [p, entry] if {
	some [p, lp] in patterns
	some tail in tails(lp)
	pattern := portable.shell_glob_regex(tail)
	some [entry, example] in entry_examples
	regex.match(pattern, example)
}

# Each entry's own name (a `*` in it as "x"), and a name inside it.
entry_examples := [[entry, example] |
	some entry in protected
	name := portable.lowered(replace(trim_prefix(entry.path, "/"), "*", "x"))
	some example in [name, concat("/", [name, "x"])]
]

# Deleting or moving away the whole workspace takes every control with it (the hooks that judge the agent).
control_hits contains [".", {"path": ".", "kind": "agent", "what": "the workspace, with every control in it"}] if "." in removed

# Program text given to an interpreter (`python -c "open('.claude/settings.local.json', 'w')"`) that names
# a protected path: the analysis does not follow the text, the policy reads it for the names.
literal_names := [portable.regex_escape(portable.lowered(trim_prefix(entry.path, "/"))) | some entry in protected; not contains(entry.path, "*")]

names_in_code := concat("", [`(^|[^a-z0-9_-])(`, concat("|", literal_names), `)($|[^a-z0-9_-])`])

control_hits contains [sprintf("program text given to '%s'", [cmd.program]), entry] if {
	some cmd in data.gateway.concerns.tiers.commands
	count(cmd.inline_code) > 0
	code := portable.lowered(concat("\n", cmd.inline_code))
	regex.match(names_in_code, code)
	some entry in protected
	not contains(entry.path, "*")
	regex.match(concat("", [`(^|[^a-z0-9_-])`, portable.regex_escape(portable.lowered(trim_prefix(entry.path, "/"))), `($|[^a-z0-9_-])`]), code)
}

# METADATA
# title: Protected paths
# description: >-
#   A call that writes, deletes or names in program text a protected path (lib/controls.rego's data), one
#   finding per kind of control, named by control_kinds.
# custom:
#   rules: [paths.agent_controls, paths.agent_instructions, paths.editor_config, paths.ci_config, paths.git_hooks, paths.git_internals, paths.gateway_config]
#   tier: 3
findings contains {"tier": 3, "rule": rule, "reason": msg} if {
	some kind in {kind_of(entry) | some [_, entry] in control_hits}
	rule := control_kinds[kind].rule
	named := sort({sprintf("%s (%s)", [p, entry.what]) | some [p, entry] in control_hits; kind_of(entry) == kind})
	msg := sprintf("%s: %s", [control_kinds[kind].why, concat(", ", named)])
}

# --- where shell commands run, and the paths they are given -----------------------------------------

# The shell analysis follows `cd`, `pushd`, `git -C` and `env -C` and states where each command runs
# (`cwd`: workspace-relative, absolute outside it, null when a cd could not be followed). A program
# that works on its current directory without naming it (`ls`, `du`, `git log`) states nothing else,
# so a command that runs outside the workspace, or where the analysis lost track, reaches outside it.
cd_programs := programs.cd_programs

# A cwd the analysis did not state (null or missing) is not known: fail closed.
cwd_outside(cmd) if not is_string(object.get(cmd, "cwd", null))

cwd_outside(cmd) if {
	is_string(cmd.cwd)
	outside(cmd.cwd)
}

# METADATA
# title: Cd outside workspace
# description: >-
#   runs outside the workspace (after a change of directory), or where the analysis lost track: …
# custom:
#   rule: paths.cd_outside_workspace
#   tier: 3
findings contains {"tier": 3, "rule": "paths.cd_outside_workspace", "reason": msg} if {
	runs := sort({c | some cmd in data.gateway.concerns.tiers.commands; cwd_outside(cmd); c := concat(" ", cmd.argv)})
	count(runs) > 0
	msg := sprintf("runs outside the workspace (after a change of directory), or where the analysis lost track: %s", [concat("; ", runs)])
}

# METADATA
# title: Cd outside workspace
# description: >-
#   `cd /` as the last command runs nothing there, but it is where the call leaves its shell.
# custom:
#   rule: paths.cd_outside_workspace
#   tier: 3
findings contains {"tier": 3, "rule": "paths.cd_outside_workspace", "reason": msg} if {
	some cmd in data.gateway.concerns.tiers.commands
	tiers.program(cmd) in cd_programs
	some p in cmd.paths
	outside(p)
	msg := sprintf("changes directory outside the workspace: %s", [concat(" ", cmd.argv)])
}

# METADATA
# title: Argument outside workspace
# description: >-
#   Path-like words given to a program the analysis does not follow (`make -C /tmp`, `./tool ../../x`,
#   `pytest --basetemp=/tmp/x`, `-o/etc/x`, `DESTDIR=/x`), resolved against the command's cwd: what it
#   may touch, with the access not known. One outside the workspace reaches outside it. Printing or
#   testing a path (echo, test, which) states no paths.
# custom:
#   rule: paths.argument_outside_workspace
#   tier: 3
findings contains {"tier": 3, "rule": "paths.argument_outside_workspace", "reason": msg} if {
	args := sort({p | some cmd in data.gateway.concerns.tiers.commands; not tiers.program(cmd) in cd_programs; some p in cmd.paths; outside(p)})
	count(args) > 0
	msg := sprintf("passes paths outside the workspace to a program: %s", [concat(", ", args)])
}

# A link's sources are reads (resolved as the kernel resolves a symlink: relative to the link's
# directory). A link to a file outside the workspace makes its content readable under an inside name.
link_programs := programs.link_programs

# METADATA
# title: Link outside workspace
# description: >-
#   links to paths outside the workspace: …
# custom:
#   rule: paths.link_outside_workspace
#   tier: 3
findings contains {"tier": 3, "rule": "paths.link_outside_workspace", "reason": msg} if {
	out := sort({p |
		some cmd in data.gateway.concerns.tiers.commands
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

# METADATA
# title: No claim
# description: >-
#   role '…' must hold a claim on a task before it changes anything (task_claim)
# custom:
#   rule: paths.no_claim
deny contains {"rule": "paths.no_claim", "reason": msg} if {
	requires_claim
	acts
	not has_task
	msg := sprintf("role '%s' must hold a claim on a task before it changes anything (task_claim)", [input.principal.role])
}

# METADATA
# title: Claim not held
# description: >-
#   the claim on task '…' is expired or held by another agent; claim it again
# custom:
#   rule: paths.claim_not_held
deny contains {"rule": "paths.claim_not_held", "reason": msg} if {
	requires_claim
	acts
	has_task
	not live_claim
	msg := sprintf("the claim on task '%s' is expired or held by another agent; claim it again", [task_id])
}

# The task's globs as regular expressions, once per call (scope.rego: `**/` is zero or more directories).
allowed_regexes := scope.regexes(object.get(input.task, "allowed_paths", [])) if has_task

acceptance_regexes := scope.regexes(object.get(input.task, "acceptance", [])) if has_task

in_scope(p) if scope.matches_one_of(allowed_regexes, p)

# METADATA
# title: Out of scope
# description: >-
#   task '…' allows only …; this call changes …
# custom:
#   rule: paths.out_of_scope
deny contains {"rule": "paths.out_of_scope", "reason": msg} if {
	requires_claim
	has_task
	outside_scope := sort([p | some p in changed; not outside(p); not in_scope(p)])
	count(outside_scope) > 0
	allowed := concat(", ", object.get(input.task, "allowed_paths", []))
	msg := sprintf("task '%s' allows only %s; this call changes %s", [task_id, allowed, concat(", ", outside_scope)])
}

# METADATA
# title: Acceptance
# description: >-
#   The files that grade a task (its manifest's acceptance) are not the worker's to change: it could
#   weaken the check instead of doing the work.
# custom:
#   rule: paths.acceptance
deny contains {"rule": "paths.acceptance", "reason": msg} if {
	requires_claim
	has_task
	graded := sort([p | some p in changed; not outside(p); scope.matches_one_of(acceptance_regexes, p)])
	count(graded) > 0
	msg := sprintf("task '%s' is graded by %s: a worker may not change its acceptance files", [task_id, concat(", ", graded)])
}
