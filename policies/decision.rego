# The entry point: data.gateway.decision, combining every concern's findings.
#
# Each concern package contributes two sets:
#   deny     {"rule", "reason"}          the call must not run
#   findings {"tier", "rule", "reason"}  why the call is as risky as it is
# The tier is the highest finding (1 when there is none). Any denial denies; otherwise a tier above
# the role's max_tier asks a human, and the rest is allowed. Reasons and rules are those of the
# findings at that tier, so a person reads why the call is tier 3, not every tier-1 fact about it.
package gateway

import rego.v1

# Other packages' rules are named by their full path (data.gateway.tiers.findings), not through an
# import (tiers.findings): regorus evaluates every rule of a package read through an import, only the
# rule named by a full path. Functions (tiers.program) cost nothing extra through an import.

default decision := {
	"action": "deny",
	"tier": 3,
	"reasons": ["no policy rule produced a decision"],
	"rules": ["gateway.default"],
}

denials := ((((data.gateway.roles.deny | data.gateway.paths.deny) | data.gateway.secrets.deny) | data.gateway.commit.deny) | data.gateway.duty.deny) | data.gateway.relay.deny

findings := ((((data.gateway.roles.findings | data.gateway.tiers.findings) | data.gateway.paths.findings) | data.gateway.secrets.findings) | data.gateway.commit.findings) | data.gateway.relay.findings

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
