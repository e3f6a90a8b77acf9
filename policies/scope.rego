# Scope: which changed files a task's allowed_paths cover. Used live (paths.rego, for every write) and
# after the fact (the gateway asks data.gateway.scope.violations about a task branch's real diff).
package gateway.scope

import rego.v1

matches_any(patterns, path) if {
	some pattern in patterns
	glob.match(pattern, ["/"], path)
}

# input: {"allowed_paths": [...], "files": [...]}
default violations := []

violations := sort([f | some f in input.files; not matches_any(input.allowed_paths, f)])
