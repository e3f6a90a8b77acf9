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
