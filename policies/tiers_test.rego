package gateway_test.tiers

import rego.v1

import data.gateway.decision
import data.gateway_test.testing

decide(effects) := d if {
	d := decision with input as testing.with_task(testing.call("worker", "shell_run", effects), testing.live_task)
		with data.roles as testing.roles
}

test_read_only_command_is_tier_1 if {
	d := decide({"commands": [testing.cmd(["ls", "-la"])], "reads": ["."]})
	d.tier == 1
	d.action == "allow"
}

test_git_status_is_tier_1 if {
	decide({"commands": [testing.cmd(["git", "status"])]}).tier == 1
}

test_git_commit_is_tier_2 if {
	d := decide({"commands": [testing.cmd(["git", "-C", "src", "commit", "-m", "x"])]})
	d.tier == 2
	"tiers.git_local_write" in d.rules
}

test_unknown_program_is_tier_2 if {
	d := decide({"commands": [testing.cmd(["pytest", "-q"])]})
	d.tier == 2
	d.action == "allow"
}

test_modify_is_tier_2 if {
	decide({"writes": ["src/app.py"]}).tier == 2
}

test_create_is_tier_1 if {
	decide({"creates": ["src/new.py"]}).tier == 1
}

test_recursive_delete_asks if {
	d := decide({"recursive_deletes": ["src/old"], "commands": [testing.cmd(["rm", "-rf", "src/old"])]})
	d.tier == 3
	d.action == "ask"
	"tiers.mass_delete" in d.rules
}

test_network_asks if {
	d := decide({"network": [{"host": "example.com", "via": "curl"}], "commands": [testing.cmd(["curl", "https://example.com"])]})
	d.tier == 3
	"tiers.network" in d.rules
}

test_privilege_asks if {
	decide({"privileged": true, "commands": [testing.cmd(["sudo", "ls"])]}).tier == 3
}

test_opaque_asks if {
	d := decide({"opaque": ["dynamic command name: $a"]})
	d.tier == 3
	"tiers.opaque" in d.rules
}

test_global_install_asks_local_install_safeguards if {
	decide({"packages": [{"manager": "npm", "names": ["left-pad"], "scope": "global"}]}).tier == 3
	decide({"packages": [{"manager": "npm", "names": ["left-pad"], "scope": "local"}]}).tier == 2
}

test_dangerous_programs_ask if {
	decide({"commands": [testing.cmd(["dd", "if=/dev/zero", "of=disk.img"])]}).tier == 3
	decide({"commands": [testing.cmd(["chmod", "-R", "777", "src"])]}).tier == 3
}

test_undeclared_upstream_tool_asks if {
	doc := testing.call("committer", "repo__merge", {})
	upstream := object.union(doc, {"tool": object.union(doc.tool, {"provider": "upstream:repo", "analysed": false})})
	d := decision with input as upstream with data.roles as testing.roles
	"tiers.upstream_unanalysed" in d.rules
	d.tier == 3
}

# Programs whose file effects the shell analysis states take their tier from those effects.
test_described_programs_take_the_tier_of_their_effects if {
	decide({"commands": [testing.cmd(["mkdir", "-p", "src/new"])], "creates": ["src/new"]}).tier == 1
	decide({"commands": [testing.cmd(["cp", "src/a.py", "src/b.py"])], "reads": ["src/a.py"], "creates": ["src/b.py"]}).tier == 1
	decide({"commands": [testing.cmd(["sort", "src/a.py"])], "reads": ["src/a.py"]}).tier == 1
	decide({"commands": [testing.cmd(["mv", "src/a.py", "src/b.py"])], "deletes": ["src/a.py"], "creates": ["src/b.py"]}).tier == 2
}

# `git -C dir status`: the value of -C is not the subcommand.
test_git_global_option_values_are_skipped if {
	d := decide({"commands": [testing.cmd(["git", "-C", "src", "status"])]})
	d.tier == 1
	"tiers.git_read" in d.rules
	"tiers.git_local_write" in decide({"commands": [testing.cmd(["git", "-c", "user.name=x", "commit", "-m", "y"])]}).rules
}

# branch, tag, config, remote and reflog read when listing and write when given something to change.
test_git_listing_subcommands_that_write_are_tier_2 if {
	every argv in [
		["git", "branch", "feature"], ["git", "branch", "-D", "feature"], ["git", "tag", "v1"],
		["git", "tag", "-d", "v1"], ["git", "config", "user.name", "A"], ["git", "config", "--unset", "user.name"],
		["git", "remote", "add", "up", "https://example.com/r.git"], ["git", "reflog", "expire", "--all"],
	] {
		d := decide({"commands": [testing.cmd(argv)]})
		d.tier == 2
		"tiers.git_local_write" in d.rules
	}
	every argv in [
		["git", "branch", "-a"], ["git", "branch", "--list", "f*"], ["git", "tag", "-l"], ["git", "config", "--get", "user.name"],
		["git", "remote", "-v"], ["git", "stash", "list"], ["git", "reflog"],
	] {
		decide({"commands": [testing.cmd(argv)]}).tier == 1
	}
}

test_git_remote_show_contacts_the_remote if {
	d := decide({"commands": [testing.cmd(["git", "remote", "show", "origin"])]})
	d.tier == 3
	"tiers.network" in d.rules
	decide({"commands": [testing.cmd(["git", "remote", "show", "-n", "origin"])]}).tier == 1
}

# Program text on the command line is tier 3 when it reaches for processes, the network, deletion or
# evaluation; other one-liners are unknown programs (tier 2), like a script file or a module.
test_risky_inline_code_asks if {
	every argv in [
		["python3", "-c", "import os; os.system('id')"], ["python3.11", "-Bc", "import urllib.request"],
		["perl", "-e", "unlink glob '*'"], ["node", "-e", "require('child_process').exec('id')"],
		["ruby", "-e", "system 'id'"], ["php", "-r", "shell_exec('id');"], ["deno", "eval", "await fetch('http://x')"],
		["python", "-c", "open('/etc/hosts').read()"], ["python", "-c", "exec(__import__('base64').b64decode('eA=='))"],
		["vim", "-c", ":!id", "f"], ["pwsh", "-c", "Get-Date"], ["python3", "-c", "print(open('.env').read())"],
		["node", "-e", "require('fs').writeFileSync('.git/hooks/pre-commit', 'x')"],
	] {
		d := decide({"commands": [testing.cmd(argv)]})
		d.tier == 3
		"tiers.inline_code" in d.rules
	}
}

test_plain_inline_code_is_an_unknown_program if {
	every argv in [
		["python3", "-c", "print(1)"], ["python3", "-c", "import pathlib; pathlib.Path('src/x').write_text('x')"],
		["perl", "-pi", "-e", "s/41/42/", "src/app.py"], ["node", "-e", "console.log(1)"],
		["python", "-m", "pytest", "-c", "setup.cfg"], ["python", "tools/gen.py", "-c", "import os; os.system('x')"],
	] {
		d := decide({"commands": [testing.cmd(argv)]})
		d.tier == 2
		"tiers.unknown_command" in d.rules
	}
}

test_package_manager_config_and_servers_ask if {
	"tiers.global_config" in decide({"commands": [testing.cmd(["npm", "config", "set", "registry", "http://x"])]}).rules
	"tiers.global_config" in decide({"commands": [testing.cmd(["pip", "config", "set", "global.index-url", "x"])]}).rules
	"tiers.network" in decide({"commands": [testing.cmd(["python3", "-m", "http.server", "8000"])]}).rules
	decide({"commands": [testing.cmd(["npm", "config", "get", "registry"])]}).tier == 2
}

test_interpreter_hint_lets_every_interpreter_through if {
	names := [
		"python", "python3", "python3.12", "pypy3", "node", "nodejs", "lua", "luajit", "lua5.4", "vim", "vi",
		"nvim", "gvim", "view", "ex", "vimdiff", "perl", "perl5.36", "ruby", "ruby3.2", "php", "php8.2", "bun",
		"deno", "Rscript", "julia", "osascript", "pwsh",
	]
	every name in names {
		data.gateway.tiers.interpreter(name)
		regex.match(data.gateway.tiers.interpreter_hint, name)
	}
	not regex.match(data.gateway.tiers.interpreter_hint, "pytest")
}
