# Scope: which changed files a task's allowed_paths cover. Used live (paths.rego, for every write) and
# after the fact (the gateway asks data.gateway.scope.violations about a task branch's real diff).
#
# A task's globs mean what they mean to the gateway (gateway/tasks/drift.py `matches`), on every engine:
# `**` as a whole segment is zero or more directories (`src/**/*.py` covers `src/a.py`), `*` and `?` stay
# within one name, everything else is literal. They are matched as regular expressions
# (portable.task_glob_regex), never with glob.match, whose `**/` needs at least one directory in OPA.
package gateway.scope

import rego.v1

import data.gateway.lib.portable

# Whether a path matches one of a task's globs.
matches_any(patterns, path) if matches_one_of(regexes(patterns), path)

# The globs as regular expressions: worked out once for the many paths of a call (matches_one_of).
regexes(patterns) := [portable.task_glob_regex(p) | some p in patterns; is_string(p)]

matches_one_of(regexes, path) if {
	some r in regexes
	regex.match(r, path)
}

# input: {"allowed_paths": [...], "files": [...]}
default violations := []

allowed := regexes(input.allowed_paths)

violations := sort([f | some f in input.files; not matches_one_of(allowed, f)])
