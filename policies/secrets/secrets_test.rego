package gateway_test.secrets

import rego.v1

import data.gateway.decision
import data.gateway.concerns.secrets
import data.gateway_test.testing

reads(path) := d if {
	d := decision with input as testing.call("planner", "fs_read", {"reads": [path]})
		with data.roles as testing.roles
}

test_env_file_asks if {
	d := reads(".env")
	d.action == "ask"
	"secrets.access" in d.rules
}

test_nested_env_and_keys_ask if {
	reads("config/.env.production").tier == 3
	reads("certs/server.pem").tier == 3
	reads("deploy/id_ed25519").tier == 3
}

# Credential directories count at the workspace root too (`**/` alone would need a directory above on OPA).
test_credential_directories_at_the_root_ask if {
	every path in [".kube/config", ".docker/config.json", ".config/gcloud/credentials.db", ".azure/x", "a/.kube/config"] {
		"secrets.access" in reads(path).rules
	}
}

# Names are lowered alike on every engine (U+0130 is "i"), and a name that is no valid glob is no error.
test_unicode_and_malformed_globs_decide if {
	"secrets.access" in reads("\u0130D_RSA").rules
	every path in ["a[", "[z-a]", "[!]", "[a-]", "x{", "\\", ".env["] {
		reads(path).action in {"allow", "ask"}
	}
	"secrets.access" in reads("[z-a].key").rules
}

test_ssh_dir_outside_asks if {
	d := reads("/root/.ssh/id_rsa")
	"secrets.access" in d.rules
	"paths.outside_workspace" in d.rules
}

test_env_template_is_harmless if {
	reads(".env.example").action == "allow"
}

test_ordinary_file_is_not_a_secret if {
	reads("src/environment.py").action == "allow"
}

# `*` in a name pattern matches dots too (glob.match with "/" as the delimiter), and case is ignored.
test_name_patterns_match_across_dots_and_case if {
	every path in ["backup/id_rsa.old", "certs/my.server.key", "config/secrets.prod.yml", ".ENV", "Server.PEM", ".env.local.bak"] {
		"secrets.access" in reads(path).rules
	}
}

test_public_keys_are_not_secrets if {
	reads("deploy/id_ed25519.pub").action == "allow"
}

# A link's source is a read: a link to a secret is a copy of it under an innocent name.
test_link_to_a_secret_asks if {
	link := testing.command(["ln", ".env", "notes.txt"], {"reads": [".env"], "writes": ["notes.txt"]})
	doc := testing.call("planner", "fs_read", {"commands": [link], "reads": [".env"], "creates": ["notes.txt"]})
	d := decision with input as doc with data.roles as testing.roles
	"secrets.access" in d.rules
}

# A secret given to a program the analysis does not follow (`./tool .env`) may be read.
test_secret_paths_given_to_unknown_programs_ask if {
	tool := testing.command(["./upload", "config/.env.prod"], {"paths": ["config/.env.prod"]})
	doc := testing.call("planner", "fs_read", {"commands": [tool]})
	d := decision with input as doc with data.roles as testing.roles
	"secrets.access" in d.rules
}

# A glob the shell analysis reports as a path is checked as a pattern against typical secret names.
test_globs_that_could_name_a_secret_ask if {
	every path in [".e?v", ".en*", ".[e]nv", "certs/*.key", "id_*", "*.p12"] {
		"secrets.access" in reads(path).rules
	}
	every path in ["*", "src/*", "src/*.py", "?", "*env", "a[", "x{a,b}"] {
		reads(path).action == "allow"
	}
}

test_secret_names_in_arguments_ask if {
	every argv in [["find", ".", "-name", ".env"], ["grep", "-r", "--include=.env", "x", "."], ["git", "add", ".env"]] {
		doc := testing.call("planner", "fs_read", {"commands": [testing.cmd(argv)]})
		d := decision with input as doc with data.roles as testing.roles
		"secrets.named" in d.rules
	}
}

# secret_hint must hold a piece of every pattern: an instance of each (wildcards as "x") and each
# example matches it, or secret() would never be asked about a word that is a secret.
test_secret_hint_covers_every_pattern if {
	every pattern in array.concat(secrets.name_patterns, secrets.path_patterns) {
		secrets.might_hold_secret({replace(replace(pattern, "**", "x"), "*", "x")})
	}
	every example in secrets.secret_examples {
		secrets.might_hold_secret({example})
		secrets.might_hold_secret({upper(example)})
	}
	every ch in secrets.glob_chars {
		secrets.might_hold_secret({concat("", ["a", ch, "b"])})
	}
	not secrets.might_hold_secret({"-q", "tests/test_x.py", "--stat", "src", "TODO"})
}
