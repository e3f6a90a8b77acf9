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

denials contains denial if some denial in data.gateway.concerns.paths.deny

denials contains denial if some denial in data.gateway.concerns.roles.deny

denials contains denial if some denial in data.gateway.concerns.secrets.deny

denials contains denial if some denial in data.gateway.concerns.tiers.deny

findings contains finding if some finding in data.gateway.concerns.commit.findings

findings contains finding if some finding in data.gateway.concerns.duty.findings

findings contains finding if some finding in data.gateway.concerns.paths.findings

findings contains finding if some finding in data.gateway.concerns.roles.findings

findings contains finding if some finding in data.gateway.concerns.secrets.findings

findings contains finding if some finding in data.gateway.concerns.tiers.findings

tier := max({1} | {f.tier | some f in findings})

max_tier := object.get(data.roles, [input.principal.role, "max_tier"], 1)

top_findings := [f | some f in findings; f.tier == tier]

decision := {
	"action": "deny",
	"tier": tier,
	"reasons": sort([d.reason | some d in denials]),
	"rules": sort([d.rule | some d in denials]),
} if {
	count(denials) > 0
}

decision := {
	"action": action,
	"tier": tier,
	"reasons": sort([f.reason | some f in top_findings]),
	"rules": sort([f.rule | some f in top_findings]),
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
