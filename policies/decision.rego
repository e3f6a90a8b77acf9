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

denials := ((((data.gateway.roles.deny | data.gateway.paths.deny) | data.gateway.secrets.deny) | data.gateway.commit.deny) | data.gateway.duty.deny) | data.gateway.flow.deny

findings := ((((data.gateway.roles.findings | data.gateway.tiers.findings) | data.gateway.paths.findings) | data.gateway.secrets.findings) | data.gateway.commit.findings) | data.gateway.flow.findings

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
