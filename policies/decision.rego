# The entry point: data.gateway.decision, combining every concern's denials and findings.
#
# A concern is a package under gateway.concerns, in a directory of its own (policies/<concern>/), and it
# may contribute two sets:
#   deny     {"rule", "reason"}          the call must not run
#   findings {"tier", "rule", "reason"}  why the call is as risky as it is
# Each concern's two sets are combined below, both named whether or not the concern has rules of that kind
# today, so a deny rule added to any concern takes effect. A new concern is one line each here: the gateway
# refuses a bundle holding a concern package this module does not combine (gateway/policy/layout.py), and
# `gateway policy lint` says which. (Walking data.gateway.concerns[_] would need no list, but regorus
# evaluates every rule of every package it walks: three times the cost of a decision.)
# Helpers shared by concerns live under gateway.lib (policies/lib/).
# The tier is the highest finding (1 when there is none). Any denial denies; otherwise a tier above
# the role's max_tier asks a human, and the rest is allowed. Reasons and rules are those of the
# findings at that tier, so a person reads why the call is tier 3, not every tier-1 fact about it.
package gateway

import rego.v1

default decision := {
	"action": "deny",
	"tier": 3,
	"reasons": ["no policy rule produced a decision"],
	"rules": ["gateway.default"],
}

denials contains denial if some denial in data.gateway.concerns.commit.deny

denials contains denial if some denial in data.gateway.concerns.duty.deny

denials contains denial if some denial in data.gateway.concerns.flow.deny

denials contains denial if some denial in data.gateway.concerns.paths.deny

denials contains denial if some denial in data.gateway.concerns.relay.deny

denials contains denial if some denial in data.gateway.concerns.roles.deny

denials contains denial if some denial in data.gateway.concerns.secrets.deny

denials contains denial if some denial in data.gateway.concerns.tiers.deny

findings contains finding if some finding in data.gateway.concerns.commit.findings

findings contains finding if some finding in data.gateway.concerns.duty.findings

findings contains finding if some finding in data.gateway.concerns.flow.findings

findings contains finding if some finding in data.gateway.concerns.paths.findings

findings contains finding if some finding in data.gateway.concerns.relay.findings

findings contains finding if some finding in data.gateway.concerns.roles.findings

findings contains finding if some finding in data.gateway.concerns.secrets.findings

findings contains finding if some finding in data.gateway.concerns.tiers.findings

tier := max({1} | {f.tier | some f in findings})

max_tier := object.get(data.roles, [input.principal.role, "max_tier"], 1)

top_findings := [f | some f in findings; f.tier == tier]

# Rules and reasons in one order, by rule: the i-th reason is the i-th rule's, so a page that shows a call's
# first rule shows that rule's reason beside it (sorted apart, a sudo reason could sit beside another rule).
denied_pairs := sort([[d.rule, d.reason] | some d in denials])

top_pairs := sort([[f.rule, f.reason] | some f in top_findings])

decision := {
	"action": "deny",
	"tier": tier,
	"reasons": [p[1] | some p in denied_pairs],
	"rules": [p[0] | some p in denied_pairs],
} if {
	count(denials) > 0
}

decision := {
	"action": action,
	"tier": tier,
	"reasons": [p[1] | some p in top_pairs],
	"rules": [p[0] | some p in top_pairs],
} if {
	count(denials) == 0
	action := allow_or_ask
}

allow_or_ask := "ask" if tier > max_tier

allow_or_ask := "allow" if tier <= max_tier

# Every rule the input fired, not only those the decision names (`gateway check --explain`). Arrays, since
# a set of objects does not cross every engine's API.
default fired := {"denials": [], "findings": []}

fired := {"denials": [d | some d in denials], "findings": [f | some f in findings]}
