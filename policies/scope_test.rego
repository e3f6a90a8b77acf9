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
