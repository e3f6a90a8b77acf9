# Relayed requests: what an upstream asks of the calling client while it runs a call (gateway/judge/relay.py).
# input.kind is "elicitation" (a question to the person) or "sampling" (a completion by the client's model),
# input.tool the tool whose call it came from, input.arguments the request's params. A relayed request is
# never held for approval: "ask" refuses it as "deny" does, and the upstream is told no.
package gateway.concerns.relay

import rego.v1

import data.gateway.lib.portable

relayed if input.kind in {"elicitation", "sampling"}

# Words that name a secret: a hostile upstream phishing through the agent's client asks for one of these.
# matched against portable.lowered text, word ends written out (no (?i) or \b: engines disagree on them, docs/opa.md)
secret_words := `(pass(word|phrase|code)|secret|token|api[ _-]?key|credential|private[ _-]?key|one[ -]?time[ -]?code|(^|[^a-z0-9_])(otp|2fa|mfa|pin|ssn|cvv)([^a-z0-9_]|$)|social security|credit[ _-]?card|card[ _-]?number|seed phrase|mnemonic|recovery (code|phrase))`

default fields := {}

fields := input.arguments.requestedSchema.properties if is_object(input.arguments.requestedSchema.properties)

asks_secret contains name if {
	some name, _ in fields
	regex.match(secret_words, portable.lowered(name))
}

asks_secret contains name if {
	some name, field in fields
	some key in ["title", "description"]
	is_string(field[key])
	regex.match(secret_words, portable.lowered(field[key]))
}

asks_secret contains "the message" if {
	is_string(input.arguments.message)
	regex.match(secret_words, portable.lowered(input.arguments.message))
}

# METADATA
# title: Relayed question asks for a secret
# description: >-
#   an upstream asks the person, through the agent's client, for what looks like a secret
# custom:
#   rule: relay.elicitation_asks_secret
deny contains {"rule": "relay.elicitation_asks_secret", "reason": msg} if {
	input.kind == "elicitation"
	count(asks_secret) > 0
	msg := sprintf(
		"upstream %s asks the person for what looks like a secret (%s); no secret goes to an upstream through the agent's client",
		[input.tool.provider, concat(", ", sort(asks_secret))],
	)
}

# METADATA
# title: Relayed question sends to a URL
# description: >-
#   an upstream would send the person to a URL of its choosing
# custom:
#   rule: relay.elicitation_url
deny contains {"rule": "relay.elicitation_url", "reason": msg} if {
	input.kind == "elicitation"
	input.arguments.mode == "url"
	msg := sprintf("upstream %s would send the person to a URL of its choosing", [input.tool.provider])
}

# "thisServer" / "allServers" would put the agent's conversation (other servers' results with it) in the prompt
# METADATA
# title: Sampling asks for the agent's context
# description: >-
#   an upstream asks for the agent's conversation (includeContext) in a completion
# custom:
#   rule: relay.sampling_context
deny contains {"rule": "relay.sampling_context", "reason": msg} if {
	input.kind == "sampling"
	object.get(input.arguments, "includeContext", "none") != "none"
	msg := sprintf("upstream %s asks for the agent's context (includeContext %v) in a completion", [input.tool.provider, input.arguments.includeContext])
}

# METADATA
# title: Relayed question
# description: >-
#   an upstream asks the person a question during a call
# custom:
#   rule: relay.elicitation
#   tier: 1
findings contains {"tier": 1, "rule": "relay.elicitation", "reason": msg} if {
	input.kind == "elicitation"
	msg := sprintf("upstream %s asks the person a question during '%s'", [input.tool.provider, input.tool.name])
}

# METADATA
# title: Relayed sampling
# description: >-
#   an upstream asks the agent's model for a completion with its own prompt; the answer is untrusted
# custom:
#   rule: relay.sampling
#   tier: 2
findings contains {"tier": 2, "rule": "relay.sampling", "reason": msg} if {
	input.kind == "sampling"
	msg := sprintf(
		"upstream %s asks the agent's model for a completion with its own prompt during '%s': the prompt may steer the model, the answer is untrusted",
		[input.tool.provider, input.tool.name],
	)
}
