# Portable helpers: text operations that decide the same in every Rego engine.
#
# The embedded engine (regorus) and Open Policy Agent differ in a few builtins (docs/opa.md, "Portable
# Rego"): glob.match reads `**/` as zero or more directories in regorus and one or more in OPA, fails on
# different malformed patterns, and matches `?` and bracket expressions differently on non-ASCII text;
# lower() turns U+0130 into "i" in OPA and into "i" plus a combining dot in regorus; regex `\b`, `\s`, `\w`
# and `\d` are Unicode-aware in regorus and ASCII in OPA. The shipped policies therefore give glob.match only
# patterns they wrote themselves (no `**/` that must match nothing, no bracket expressions, no `?`), turn
# every glob that comes from a call or from data into a regular expression here, lower text with `lowered`,
# and write regex classes out (`[ \t]`, not `\s`). tests/test_golden_decisions.py holds them to it on
# thousands of inputs against the real OPA.
package gateway.lib.portable

import rego.v1

# Text in lower case, as a case-insensitive reader takes it: U+0130 (capital I with dot above) is "i" on
# both engines. Every other difference of lower() turns a non-ASCII character into another non-ASCII one,
# which no pattern of these policies tells apart.
lowered(s) := lower(replace(s, "\u0130", "i"))

# `s` as a regular expression that matches exactly `s`.
regex_escape(s) := regex.replace(s, `[\\.+*?()|\[\]{}^$]`, `\${0}`)

# `s` as a glob (glob.match, "/" as the delimiter) that matches exactly `s`, except that `*` stays a wildcard
# within one name (a run of them is one): what a protected path of data.gateway.lib.controls may hold.
glob_escape(s) := regex.replace(regex.replace(s, `[\\\[\]{}?,]`, `\${0}`), `\*+`, "*")

# A shell glob the analysis reports as a path (`cat .e?v`, `cp x/* .github/`) as an anchored regular
# expression matching at least what the glob could: `*` any run of characters within a name, `?` and a
# bracket expression (`[abc]`, `[!a-z]`, `[]x]`) one character other than "/", all else as written (an
# unclosed `[` too, as in bash). Never an error, whatever the text.
shell_glob_regex(g) := concat("", ["^", name_regex(regex.replace(g, bracket_expression, "?")), "$"])

# A bracket expression of a shell glob: `[abc]`, `[!a-z]`, `[]x]` (a "]" first is a member).
bracket_expression := `\[!?\]?[^\]]*\]`

# A task's allowed path or acceptance glob as an anchored regular expression, read as the gateway reads
# it (gateway/tasks/drift.py `matches`): `**` as a whole segment is any number of directories, none
# included (`src/**/*.py` covers `src/a.py`, `**/x` covers `x`), and at the end everything below; `*` is
# any run of characters within one name (`**` inside a name too) and `?` one character; everything else,
# `[`, `{` and `\` included, is literal.
task_glob_regex(pattern) := concat("", ["(?s)^", concat("", pieces), "$"]) if {
	segments := split(pattern, "/")
	last := count(segments) - 1
	pieces := [segment_regex(segments[i], i == last) | some i in numbers.range(0, last)]
}

segment_regex(segment, last) := "(?:.*/)?" if {
	segment == "**"
	not last
}

segment_regex(segment, last) := ".*" if {
	segment == "**"
	last
}

segment_regex(segment, last) := name_regex(segment) if {
	segment != "**"
	last
}

segment_regex(segment, last) := concat("", [name_regex(segment), "/"]) if {
	segment != "**"
	not last
}

name_regex(name) := replace(replace(regex.replace(name, `[\\.+()|\[\]{}^$]`, `\${0}`), "*", "[^/]*"), "?", "[^/]")
