package gateway_test.portable

import rego.v1

import data.gateway.lib.portable

# These run on regorus and on the real OPA (tests/test_policy_opa.py): the helpers answer alike on both.

test_lowered_reads_u0130_as_i if {
	portable.lowered("\u0130D_RSA") == "id_rsa"
	portable.lowered(".ENV") == ".env"
}

task_glob_matches(pattern, path) if regex.match(portable.task_glob_regex(pattern), path)

# `**` as a whole segment is zero or more directories, at the end everything below; all else but `*` and `?`
# is literal.
test_task_globs_read_double_star_as_any_number_of_directories if {
	every case in [
		["src/**/*.py", "src/a.py"], ["src/**/*.py", "src/x/y/a.py"], ["**/.env", ".env"], ["**/.env", "a/b/.env"],
		["src/**", "src/a"], ["src/**", "src/a/b"], ["**", "a/b"], ["a/**/b/**/c", "a/b/c"], ["docs/?otes.md", "docs/notes.md"],
		["src/[ab].py", "src/[ab].py"], ["{src,docs}/x", "{src,docs}/x"], ["src\\*.py", "src\\x.py"], ["ünï/**", "ünï/a"],
		["src/a**", "src/abc"], ["a b/*", "a b/c d"], ["**/x", "line\nbreak/x"],
	] {
		task_glob_matches(case[0], case[1])
	}
	every case in [
		["src/**/*.py", "srcx/a.py"], ["src/**", "src"], ["src/*", "src/a/b"], ["src/[ab].py", "src/a.py"],
		["{src,docs}/x", "src/x"], ["docs/?otes.md", "docs/otes.md"], ["src/a**", "src/a/b"], ["*.md", "a/b.md"],
	] {
		not task_glob_matches(case[0], case[1])
	}
}

# A shell glob is read as matching at least what it could: a bracket expression is any one character, never
# an error, whatever the text.
test_shell_globs_as_regular_expressions if {
	every case in [[".e?v", ".env"], ["*.key", "x.key"], ["[z-a].key", "x.key"], ["[!]x", "ax"], ["[]a].key", "x.key"]] {
		regex.match(portable.shell_glob_regex(case[0]), case[1])
	}
	every case in [["a[", "ab"], ["x{a,b}", "xa"], ["*.key", "a/x.key"], [".env?", ".env"], ["\\*", "x"]] {
		not regex.match(portable.shell_glob_regex(case[0]), case[1])
	}
}

test_escapes_match_the_text_as_written if {
	text := `a.b*c?[d]{e,f}(g)+|^$\h`
	regex.match(concat("", ["^", portable.regex_escape(text), "$"]), text)
	not regex.match(concat("", ["^", portable.regex_escape("a.b"), "$"]), "axb")
	glob.match(portable.glob_escape(".my[tool],x{y}?"), ["/"], ".my[tool],x{y}?")
	glob.match(portable.glob_escape("*.code-workspace"), ["/"], "team.code-workspace")
	not glob.match(portable.glob_escape("a?"), ["/"], "ab")
}
