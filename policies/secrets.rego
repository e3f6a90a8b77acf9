# Secrets: keys, credentials and environment files are tier 3 to read or write.
package gateway.secrets

import rego.v1

import data.gateway.paths

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

# Matched against the whole path.
path_patterns := [
	"**/.ssh/**", ".ssh/**", "**/.aws/**", ".aws/**", "**/.gnupg/**", ".gnupg/**", "**/.kube/config",
	"**/.docker/config.json", "**/.config/gcloud/**", "**/.azure/**", "/etc/sudoers*", "/proc/*/environ",
]

basename(p) := name if {
	parts := split(p, "/")
	name := parts[count(parts) - 1]
}

# Names are compared in lower case (on a case-insensitive file system `.ENV` is `.env`), and with "/"
# as the only glob delimiter: a name holds no "/", so `*` matches any run of characters, dots
# included (`id_rsa*` matches `id_rsa.old`, `*.key` matches `my.server.key`). With glob.match's default
# delimiter "." it would not.
harmless_name(name) if name in harmless

harmless_name(name) if endswith(name, ".pub") # a public key is meant to be shared

secret(p) if {
	name := lower(basename(p))
	not harmless_name(name)
	some pattern in name_patterns
	glob.match(pattern, ["/"], name)
}

secret(p) if {
	some pattern in path_patterns
	glob.match(pattern, ["/"], lower(p))
}

# A link to a secret makes a copy of it under an innocent name (see paths.link_sources).
findings contains {"tier": 3, "rule": "secrets.access", "reason": msg} if {
	hits := sort([p | some p in touched | paths.link_sources; secret(p)])
	count(hits) > 0
	msg := sprintf("touches secrets or credentials: %s", [concat(", ", hits)])
}

# Secrets never go to another host in the arguments of a networked call.
deny := set()
