# Information flow: what the session has read raises the stakes of what it does next.
#
# input.flow (gateway/labels.py, docs/flow.md) carries the session's labels and what raised them:
#   integrity        "trusted" | "untrusted"    untrusted: a network fetch, an upstream not declared trusted,
#                                               a file the session downloaded or decoded, WebFetch/WebSearch
#   confidentiality  "public" | "confidential"  confidential: secrets the secrets policy recognised, files
#                                               outside the workspace
#   untrusted, confidential: the sources, each {"label", "what", "tool", "call_id"}
#
# After untrusted content, a sink (egress, publishing, a push, a commit-class call, a change to a protected
# control path, a message to other agents) is tier 3: a person decides, reading which source came first.
# After a confidential read, egress to a host not approved for that data (data.settings.flow.confidential_hosts,
# gateway.yaml policy.settings) is denied. A session without labels (input.flow null, or both labels low) is
# judged exactly as before.
#
# Teams change this in Rego: add sinks to `sinks`, tools to `message_tools`, or approved hosts in settings.
package gateway.concerns.flow

import rego.v1

default flow := {"integrity": "trusted", "confidentiality": "public", "untrusted": [], "confidential": []}

flow := input.flow if is_object(input.flow)

# Tools whose arguments other agents read and act on: manifests, their amendments, execution records and
# proposed merges. An upstream tool becomes one by listing its exposed name here.
default_message_tools := {"task_submit", "task_amend", "task_report", "intent_propose"}

# data.settings, not object.get(data, ...): a rule that reads all of data depends on every rule (OPA refuses it)
default settings_flow := {}

settings_flow := data.settings.flow if is_object(data.settings.flow)

message_tools := default_message_tools | {t | some t in object.get(settings_flow, "message_tools", [])}

# Hosts confidential data may go to: exact names, or "*.example.com" for any name below example.com.
confidential_hosts := object.get(settings_flow, "confidential_hosts", [])

commands := data.gateway.concerns.tiers.commands

# Each sink the call reaches, as a phrase a person reads.
sinks contains sprintf("egress to %s", [concat(", ", hosts)]) if {
	count(input.effects.network) > 0
	hosts := sort({n.host | some n in input.effects.network})
}

sinks contains sprintf("publishing with '%s %s'", [cmd.program, cmd.subcommand]) if {
	some cmd in commands
	cmd.subcommand in object.get(data.gateway.concerns.tiers.publishing, cmd.program, set())
}

sinks contains "a git push" if {
	some cmd in commands
	cmd.program == "git"
	cmd.subcommand == "push"
}

# commit-class calls: an upstream's (through intent_commit) and the gateway's own commits of a task's work
commit_tools := {"intent_commit", "merge_ceremony"}

sinks contains sprintf("a commit-class call (%s)", [input.tool.name]) if input.tool.commit_class == true

sinks contains sprintf("a commit-class call (%s)", [input.tool.name]) if input.tool.name in commit_tools

sinks contains sprintf("a change to a protected control path (%s)", [concat(", ", paths)]) if {
	count(data.gateway.concerns.paths.control_hits) > 0
	paths := sort({sprintf("%v", [hit[0]]) | some hit in data.gateway.concerns.paths.control_hits})
}

sinks contains sprintf("a message to other agents (%s)", [input.tool.name]) if input.tool.name in message_tools

# The first sources, named in the reason (the rest are in input.flow and the trace).
named(sources) := concat("; ", [s.what | some i, s in sources; i < 3])

# METADATA
# title: Sink after untrusted content
# description: >-
#   a sink (egress, publishing, a push, a commit-class call, a protected control path, a message to other
#   agents) after the session read untrusted content waits for a person, the source named
# custom:
#   rule: flow.untrusted_sink
#   tier: 3
findings contains {"tier": 3, "rule": "flow.untrusted_sink", "reason": msg} if {
	flow.integrity == "untrusted"
	some sink in sinks
	msg := sprintf("%s after the session read untrusted content (%s)", [sink, named(flow.untrusted)])
}

approved(host) if host in confidential_hosts

approved(host) if {
	some pattern in confidential_hosts
	startswith(pattern, "*.")
	endswith(host, substring(pattern, 1, -1))
}

# METADATA
# title: Confidential data to an unapproved host
# description: >-
#   egress after the session read confidential data goes only to hosts approved for it
#   (settings.flow.confidential_hosts)
# custom:
#   rule: flow.confidential_egress
deny contains {"rule": "flow.confidential_egress", "reason": msg} if {
	flow.confidentiality == "confidential"
	unapproved := sort({n.host | some n in input.effects.network; not approved(n.host)})
	count(unapproved) > 0
	msg := sprintf(
		"egress to %s after the session read confidential data (%s): not a host approved for it",
		[concat(", ", unapproved), named(flow.confidential)],
	)
}
