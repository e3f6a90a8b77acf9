package gateway_test.scope

import rego.v1

import data.gateway.scope

test_violations_lists_files_outside_the_globs if {
	v := scope.violations with input as {"allowed_paths": ["src/**", "README.md"], "files": ["src/a/b.py", "README.md", "docs/x.md", "srcx/y"]}
	v == ["docs/x.md", "srcx/y"]
}

test_single_star_stays_in_one_directory if {
	scope.violations with input as {"allowed_paths": ["src/*.py"], "files": ["src/deep/a.py"]} == ["src/deep/a.py"]
}

test_no_files_no_violations if {
	scope.violations with input as {"allowed_paths": ["src/**"], "files": []} == []
}

# `**/` is zero or more directories on every engine, as the gateway reads it (gateway/tasks/drift.py).
test_double_star_covers_no_directory_too if {
	v := scope.violations with input as {"allowed_paths": ["src/**/*.py", "**/*.md"], "files": ["src/a.py", "README.md", "src/x/b.py", "docs/c.txt"]}
	v == ["docs/c.txt"]
}

# Brackets and braces are literal in a task's globs.
test_brackets_and_braces_are_literal if {
	v := scope.violations with input as {"allowed_paths": ["src/[ab].py", "{x,y}/**"], "files": ["src/[ab].py", "src/a.py", "x/1", "{x,y}/1"]}
	v == ["src/a.py", "x/1"]
}
