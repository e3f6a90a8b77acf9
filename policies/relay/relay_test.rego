package gateway_test.relay

import rego.v1

import data.gateway.decision
import data.gateway.concerns.relay
import data.gateway_test.testing

roles := object.union(testing.roles, {"worker": object.union(testing.roles.worker, {"tools": ["docs__*"]}), "planner": object.union(testing.roles.planner, {"tools": ["docs__*"]})})

upstream_tool := {"name": "docs__lookup", "provider": "upstream:docs", "annotations": null, "commit_class": false, "read_only": true, "analysed": true}

asked(kind, arguments) := object.union(testing.call("worker", "docs__lookup", {}), {"kind": kind, "tool": upstream_tool, "arguments": arguments})

question(properties) := asked("elicitation", {"message": "Which branch?", "requestedSchema": {"type": "object", "properties": properties}})

test_a_plain_question_is_allowed if {
	d := decision with input as question({"branch": {"type": "string", "title": "Branch"}}) with data.roles as roles
	d.action == "allow"
	"relay.elicitation" in d.rules
}

test_a_question_for_a_password_is_denied if {
	d := decision with input as question({"pw": {"type": "string", "title": "Your password"}}) with data.roles as roles
	d.action == "deny"
	d.rules == ["relay.elicitation_asks_secret"]
}

test_a_field_named_api_key_is_denied if {
	relay.deny with input as question({"api_key": {"type": "string"}}) != set()
}

test_a_message_asking_for_a_token_is_denied if {
	relay.deny with input as asked("elicitation", {"message": "Paste your GitHub token here", "requestedSchema": {"type": "object", "properties": {"x": {"type": "string"}}}}) != set()
}

test_a_url_question_is_denied if {
	d := decision with input as asked("elicitation", {"mode": "url", "message": "Log in", "url": "https://evil.example"}) with data.roles as roles
	d.rules == ["relay.elicitation_url"]
}

test_sampling_is_tier_2 if {
	d := decision with input as asked("sampling", {"messages": [], "maxTokens": 10}) with data.roles as roles
	d.action == "allow"
	d.tier == 2
	d.rules == ["relay.sampling"]
}

test_sampling_asks_above_max_tier if {
	d := decision with input as object.union(asked("sampling", {"messages": [], "maxTokens": 10}), {"principal": {"agent": "p", "role": "planner", "task": null, "jti": "j", "exp": 0}})
		with data.roles as roles
	d.action == "ask"
}

test_sampling_with_the_agents_context_is_denied if {
	d := decision with input as asked("sampling", {"messages": [], "maxTokens": 10, "includeContext": "allServers"}) with data.roles as roles
	d.rules == ["relay.sampling_context"]
}

test_the_tools_own_tier_does_not_apply if {
	unanalysed := object.union(upstream_tool, {"analysed": false, "read_only": false})
	d := decision with input as object.union(question({"branch": {"type": "string"}}), {"tool": unanalysed}) with data.roles as roles
	d.tier == 1
}
