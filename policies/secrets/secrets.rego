# Secrets: keys, credentials and environment files are tier 3 to read or write.
package gateway.concerns.secrets

import rego.v1

import data.gateway.lib.portable

effects := input.effects

touched := {p | some key in ["reads", "writes", "creates", "deletes", "recursive_deletes"]; some p in effects[key]}

# Matched against the file name.
name_patterns := [
	".env", ".env.*", "*.pem", "*.key", "*.p12", "*.pfx", "*.jks", "*.keystore", "*.kdbx", "id_rsa*",
	"id_dsa*", "id_ecdsa*", "id_ed25519*", ".netrc", ".pgpass", ".npmrc", ".pypirc", "credentials",
	"credentials.json", "credentials.yml", "credentials.yaml", "secrets.*", "*.secret", "*.secrets",
	"service-account*.json", ".htpasswd", "shadow", "gshadow", "master.key",
]

# Files that look like secrets by name but are templates people commit on purpose.
harmless := [".env.example", ".env.sample", ".env.template", ".env.dist"]

# Matched against the whole path. Each directory pattern is written twice, at the root and below it: `**/`
# matches no directory in regorus but at least one in OPA.
path_patterns := [
	"**/.ssh/**", ".ssh/**", "**/.aws/**", ".aws/**", "**/.gnupg/**", ".gnupg/**", "**/.kube/config",
	".kube/config", "**/.docker/config.json", ".docker/config.json", "**/.config/gcloud/**", ".config/gcloud/**",
	"**/.azure/**", ".azure/**", "/etc/sudoers*", "/proc/*/environ",
]

basename(p) := name if {
	parts := split(p, "/")
	name := parts[count(parts) - 1]
}

# Names are compared in lower case (on a case-insensitive file system `.ENV` is `.env`; portable.lowered), and with "/"
# as the only glob delimiter: a name holds no "/", so `*` matches any run of characters, dots
# included (`id_rsa*` matches `id_rsa.old`, `*.key` matches `my.server.key`). With glob.match's default
# delimiter "." it would not.
harmless_name(name) if name in harmless

harmless_name(name) if endswith(name, ".pub") # a public key is meant to be shared

# Each list as one glob of alternatives ("{a,b,...}"; no pattern holds a comma or a brace): the same matches
# as trying the patterns one by one, but one glob to compile and match per path instead of one per pattern,
# which was most of the decision's time (every call checks every path and every command argument).
name_glob := concat("", ["{", concat(",", name_patterns), "}"])

path_glob := concat("", ["{", concat(",", path_patterns), "}"])

secret(p) if {
	name := portable.lowered(basename(p))
	not harmless_name(name)
	# portable: this module's own patterns (each `**/` one also written for the root; no classes)
	glob.match(name_glob, ["/"], name)
}

# portable: this module's own patterns (each `**/` one also written for the root; no classes)
secret(p) if glob.match(path_glob, ["/"], portable.lowered(p))

# A path the shell analysis reports as a glob (`cat .e?v`, `cat *.key`) is checked as a pattern: if it
# could match a typical secret's name, it counts as one.
secret_examples := [
	".env", ".env.local", "x.pem", "x.key", "x.p12", "x.pfx", "x.jks", "x.keystore", "x.kdbx", "id_rsa", "id_dsa",
	"id_ecdsa", "id_ed25519", ".netrc", ".pgpass", ".npmrc", ".pypirc", "credentials", "credentials.json",
	"secrets.yml", "x.secret", "service-account.json", ".htpasswd", "shadow", "master.key",
]

glob_chars := {"*", "?", "["}

# A pattern of wildcards alone (`*`, `src/*`, `[ab]*`) names nothing in particular and is left alone, and
# as in bash a leading dot must be written. The pattern is read as a regular expression that matches at
# least what it could (portable.shell_glob_regex), never as a glob: glob.match reads a name like `a[`,
# `[z-a]` or `.env?` differently in each engine, or fails on it.
secret(p) if {
	name := portable.lowered(basename(p))
	some ch in glob_chars
	contains(name, ch)
	regex.match(`[^*?\[\]!]`, regex.replace(name, portable.bracket_expression, ""))
	pattern := portable.shell_glob_regex(name)
	some example in secret_examples
	startswith(example, ".") == startswith(name, ".")
	regex.match(pattern, example)
}

# What every secret's text holds, in lower case: a literal piece of each name pattern, of each path
# pattern, and the glob characters (a pattern that could match a secret). One match over all the words
# of a call (joined) tells most calls apart, which name no secret, before any word is globbed on its own:
# a word secret() holds for always contains one of these, so a call none of them is in has no secret.
# Every pattern added above needs its piece here (secrets_test.rego checks it does).
secret_hint := concat("|", [
	`\.env|\.pem|\.key|\.p12|\.pfx|\.jks|\.kdbx|id_|\.netrc|\.pgpass|\.npmrc|\.pypirc|credentials|secret`,
	`service-account|htpasswd|shadow`,
	`\.ssh|\.aws|\.gnupg|\.kube|\.docker|gcloud|\.azure|sudoers|environ`,
	`[*?\[]`,
])

might_hold_secret(words) if regex.match(secret_hint, portable.lowered(concat("\n", words)))

# METADATA
# title: Access
# description: >-
#   A link's source is a read (a link to a secret is a copy of it under an innocent name); the paths given
#   to a program the analysis does not follow (`./tool .env`) may be read or written.
# custom:
#   rule: secrets.access
#   tier: 3
findings contains {"tier": 3, "rule": "secrets.access", "reason": msg} if {
	candidates := touched | data.gateway.concerns.paths.unknown_access
	might_hold_secret(candidates)
	hits := sort([p | some p in candidates; secret(p)])
	count(hits) > 0
	msg := sprintf("touches secrets or credentials: %s", [concat(", ", hits)])
}

# A secret's name as a command's argument (`find . -name .env -exec cat {} +`, `grep -r --include=.env x .`,
# `git add .env`): the paths the analysis reports are directories or patterns, but the name says what
# is after. The value of `--opt=value` counts too.
secret_argument(arg) if secret(arg)

secret_argument(arg) if {
	contains(arg, "=")
	secret(substring(arg, indexof(arg, "=") + 1, -1))
}

# Every command's arguments (not the program), once.
argument_words := {arg |
	some cmd in effects.commands
	some i, arg in cmd.argv
	i > 0
}

# METADATA
# title: Named
# description: >-
#   names secrets or credentials in its arguments: …
# custom:
#   rule: secrets.named
#   tier: 3
findings contains {"tier": 3, "rule": "secrets.named", "reason": msg} if {
	might_hold_secret(argument_words)
	named := sort({arg | some arg in argument_words; secret_argument(arg)})
	count(named) > 0
	msg := sprintf("names secrets or credentials in its arguments: %s", [concat(", ", named)])
}
