# Secrets: keys, credentials and environment files are tier 3 to read or write.
package gateway.secrets

import rego.v1

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

secret(p) if {
	name := basename(p)
	not name in harmless
	some pattern in name_patterns
	glob.match(pattern, [], name)
}

secret(p) if {
	some pattern in path_patterns
	glob.match(pattern, ["/"], p)
}

findings contains {"tier": 3, "rule": "secrets.access", "reason": msg} if {
	hits := sort([p | some p in touched; secret(p)])
	count(hits) > 0
	msg := sprintf("touches secrets or credentials: %s", [concat(", ", hits)])
}

# Secrets never go to another host in the arguments of a networked call.
deny := set()
