package gateway_test.tiers

import rego.v1

import data.gateway.decision
import data.gateway_test.testing

decide(effects) := d if {
	d := decision with input as testing.with_task(testing.call("worker", "shell_run", effects), testing.live_task)
		with data.roles as testing.roles
}

# One command with facts: decide_command(["git", "log"], {"access": "read"}).
decide_command(argv, facts) := decide({"commands": [testing.command(argv, facts)]})

test_read_only_command_is_tier_1 if {
	d := decide({"commands": [testing.cmd(["ls", "-la"])], "reads": ["."]})
	d.tier == 1
	d.action == "allow"
}

test_git_status_is_tier_1 if {
	d := decide_command(["git", "status"], {"subcommand": "status", "access": "read"})
	d.tier == 1
	"tiers.git_read" in d.rules
}

test_git_commit_is_tier_2 if {
	d := decide_command(["git", "-C", "src", "commit", "-m", "x"], {"subcommand": "commit", "access": "write", "cwd": "src"})
	d.tier == 2
	"tiers.git_local_write" in d.rules
}

# The policy takes git's access from the analysis: it never looks at argv to find the subcommand.
test_git_access_decides_the_tier if {
	decide_command(["git", "branch", "-D", "x"], {"subcommand": "branch", "access": "write"}).tier == 2
	decide_command(["git", "update-ref", "refs/heads/main", "HEAD"], {"subcommand": "update-ref", "access": "write"}).tier == 2
	decide_command(["git", "branch", "-a"], {"subcommand": "branch", "access": "read"}).tier == 1
	d := decide_command(["git", "fetch"], {"subcommand": "fetch", "access": "remote"})
	d.tier == 3
	"tiers.network" in d.rules
}

# Destroying what a rollback restores from (the gateway's refs, the reflog, unreachable objects) asks a person.
test_git_destroying_history_is_tier_3 if {
	d := decide_command(["git", "gc", "--prune=now"], {"subcommand": "gc", "access": "destroy"})
	d.tier == 3
	"tiers.git_destroys_history" in d.rules
}

# A git command whose access the analysis did not state is a local write, not a read.
test_git_without_access_is_a_local_write if {
	d := decide_command(["git", "frobnicate"], {"subcommand": "frobnicate"})
	d.tier == 2
	"tiers.git_local_write" in d.rules
	"tiers.git_local_write" in decide({"commands": [testing.cmd(["git"])]}).rules
}

test_git_reasons_name_the_subcommand_and_operation if {
	d := decide_command(["git", "stash", "drop"], {"subcommand": "stash", "operation": "drop", "access": "write"})
	"runs 'git stash drop', which changes the local repository" in d.reasons
}

test_unknown_program_is_tier_2 if {
	d := decide({"commands": [testing.cmd(["pytest", "-q"])]})
	d.tier == 2
	d.action == "allow"
}

# The program is the normalised name the analysis states, not argv[0].
test_program_is_the_normalised_name if {
	decide({"commands": [testing.command(["/usr/bin/cat", "x"], {"program": "cat"})]}).tier == 1
	decide({"commands": [testing.command(["cat", "x"], {"program": "python"})]}).tier == 2
}

test_modify_is_tier_2 if {
	decide({"writes": ["src/app.py"]}).tier == 2
}

test_create_is_tier_1 if {
	decide({"creates": ["src/new.py"]}).tier == 1
}

test_recursive_delete_asks if {
	d := decide({"recursive_deletes": ["src/old"], "commands": [testing.command(["rm", "-rf", "src/old"], {"recursive": true})]})
	d.tier == 3
	d.action == "ask"
	"tiers.mass_delete" in d.rules
}

test_network_asks if {
	d := decide({"network": [{"host": "example.com", "via": "curl"}], "commands": [testing.cmd(["curl", "https://example.com"])]})
	d.tier == 3
	"tiers.network" in d.rules
}

test_listeners_are_network_effects if {
	d := decide({"network": [{"host": "listen:8000", "via": "python"}], "commands": [testing.command(["python3", "-m", "http.server"], {"program": "python", "subcommand": "http.server"})]})
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
}

# chmod/chown/chgrp: recursive or world-writable is tier 3 (the analysis states both), else tier 2.
test_mode_changes if {
	d := decide_command(["chmod", "-R", "755", "src"], {"recursive": true})
	d.tier == 3
	"tiers.dangerous_command" in d.rules
	decide_command(["chmod", "o+w", "src/a.py"], {"world_writable": true}).tier == 3
	decide_command(["chown", "-R", "root", "."], {"recursive": true}).tier == 3
	decide_command(["chmod", "644", "src/a.py"], {}).tier == 2
	decide_command(["mkdir", "-m", "777", "d"], {"world_writable": true}).tier == 3
	# an argv that looks recursive is not judged: only the facts are
	decide_command(["chmod", "-R", "777", "src"], {}).tier == 2
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

# A bare redirection (`> f`) runs no program: its tier is its effects'.
test_bare_redirection_is_its_effects if {
	redirection := object.union(testing.base_command, {"redirects": [{"op": ">", "target": "f", "fd": null}], "writes": ["f"]})
	decide({"commands": [redirection], "creates": ["f"]}).tier == 1
}

# Program text given to an interpreter (recorded as inline_code wherever the option sat, or fed by a
# heredoc) is tier 3 when it reaches for processes, the network, deletion or evaluation; other
# one-liners are unknown programs (tier 2), like a script file or a module.
test_risky_inline_code_asks if {
	every c in [
		["python", ["import os; os.system('id')"]], ["python", ["import urllib.request"]],
		["perl", ["unlink glob '*'"]], ["node", ["require('child_process').exec('id')"]],
		["ruby", ["system 'id'"]], ["php", ["shell_exec('id');"]], ["deno", ["await fetch('http://x')"]],
		["python", ["open('/etc/hosts').read()"]], ["python", ["exec(__import__('base64').b64decode('eA=='))"]],
		["vim", [":!id"]], ["pwsh", ["Get-Date"]], ["python", ["print(open('.env').read())"]],
		["node", ["require('fs').writeFileSync('.git/hooks/pre-commit', 'x')"]], ["osascript", ["beep"]],
		["python", ["print(1)", "import subprocess"]],
	] {
		d := decide_command([c[0], "..."], {"inline_code": c[1]})
		d.tier == 3
		"tiers.inline_code" in d.rules
	}
}

# Word ends and whitespace are written out: the same on every engine, Unicode whitespace included.
test_inline_code_words_and_whitespace if {
	every code in ["require(\u00a0'net')", "require(\u3000'dgram')", "require(\u000b'http')", "x = \u00e9httpd", "open('.env\u00e9')"] {
		"tiers.inline_code" in decide_command(["node", "..."], {"inline_code": [code]}).rules
	}
	every code in ["x = httpdx", "x = _httpd", "open('.environ')"] {
		not "tiers.inline_code" in decide_command(["node", "..."], {"inline_code": [code]}).rules
	}
}

test_plain_inline_code_is_an_unknown_program if {
	every c in [
		["python", ["print(1)"]], ["python", ["import pathlib; pathlib.Path('src/x').write_text('x')"]],
		["perl", ["s/41/42/"]], ["node", ["console.log(1)"]], ["python", []], ["ruby", ["puts 1"]],
	] {
		d := decide_command([c[0], "..."], {"inline_code": c[1]})
		d.tier == 2
		"tiers.unknown_command" in d.rules
	}
}

# The text is what the analysis recorded: code words in argv that it did not record are not judged.
test_inline_code_comes_from_the_facts if {
	decide_command(["python3", "-c", "import os; os.system('id')"], {"program": "python"}).tier == 2
	decide_command(["python3", "-W", "ignore", "-c", "x"], {"program": "python", "inline_code": ["import os; os.system('x')"]}).tier == 3
}

test_package_manager_config_asks if {
	"tiers.global_config" in decide_command(["npm", "config", "set", "registry", "http://x"], {"subcommand": "config", "operation": "set"}).rules
	"tiers.global_config" in decide_command(["pip", "config", "set", "global.index-url", "x"], {"subcommand": "config", "operation": "set"}).rules
	"tiers.global_config" in decide_command(["npm", "login"], {"subcommand": "login"}).rules
	decide_command(["npm", "config", "get", "registry"], {"subcommand": "config", "operation": "get"}).tier == 2
	decide_command(["make", "config", "set"], {}).tier == 2
}

# A version-1 document states argv, redirects and via only: its commands are read with the facts that
# version implied (program from argv[0], run in the workspace), and no more.
v1(effects) := object.union(testing.with_task(testing.call("worker", "shell_run", effects), testing.live_task), {"version": 1})

old(argv) := {"argv": argv, "redirects": [], "via": "direct"}

test_version_1_documents_are_still_read if {
	d := decision with input as v1({"commands": [old(["/bin/ls", "-la"])]}) with data.roles as testing.roles
	d.tier == 1
	"tiers.read_only_command" in d.rules
	git := decision with input as v1({"commands": [old(["git", "status"])]}) with data.roles as testing.roles
	git.tier == 2
	"tiers.git_local_write" in git.rules
	rm := decision with input as v1({"commands": [old(["rm", "-rf", "src/x"])], "recursive_deletes": ["src/x"]}) with data.roles as testing.roles
	rm.rules == ["tiers.mass_delete"]
}

# Publishing is judged on the command the program runs (the analysis resolves aliases and abbreviations):
# `npm pub` is publish, and the reason shows how it was written.
test_publishing_asks_under_every_spelling if {
	every c in [
		["npm", "pub", "publish"], ["pnpm", "publish", "publish"], ["yarn", "npm", "publish"], ["gem", "pu", "push"],
		["cargo", "b", "publish"], ["twine", "upload", "upload"], ["docker", "image", "push"], ["uv", "publish", "publish"],
	] {
		d := decide_command([c[0], c[1]], {"subcommand": c[2], "subcommand_as_written": c[1]})
		d.tier == 3
		"tiers.publish" in d.rules
		some reason in d.reasons
		contains(reason, sprintf("written '%s'", [c[1]]))
	}
	"tiers.publish" in decide_command(["npm", "publish"], {"subcommand": "publish"}).rules # no written form stated
	not "tiers.publish" in decide_command(["npm", "pack"], {"subcommand": "pack", "subcommand_as_written": "pa"}).rules
}
