# Roles: which role may call which tool, from the role files (data.roles).
package gateway.concerns.roles

import rego.v1

role := data.roles[input.principal.role]

# METADATA
# title: Unknown role
# description: >-
#   role '…' has no role file
# custom:
#   rule: roles.unknown_role
deny contains {"rule": "roles.unknown_role", "reason": msg} if {
	not data.roles[input.principal.role]
	msg := sprintf("role '%s' has no role file", [input.principal.role])
}

# METADATA
# title: Unknown tool
# description: >-
#   A call must name a tool the gateway resolved: a name and a provider, both strings. An input without them
#   (an unknown tool, a hand-written document) is denied here, by name, not by a type error in another rule.
# custom:
#   rule: roles.unknown_tool
deny contains {"rule": "roles.unknown_tool", "reason": msg} if {
	not known_tool
	msg := sprintf("the call names no tool the gateway knows (tool %v): nothing runs", [object.get(input, "tool", null)])
}

# METADATA
# title: Unpinned definition
# description: >-
#   An upstream definition the gateway does not hold pinned as listed (changed, new, renamed, or its upstream's
#   instructions changed: gateway/tools/pins.py). The gateway refuses such a call before asking the policy; this
#   rule says the same of any input document that carries such a pin, so no policy can let one through.
# custom:
#   rule: roles.unpinned_definition
deny contains {"rule": "roles.unpinned_definition", "reason": msg} if {
	is_object(input.tool.pin)
	not pinned(input.tool.pin)
	msg := sprintf("'%s' is an upstream definition that is not pinned as listed (%s; instructions %s): a person approves it first", [input.tool.name, input.tool.pin.status, object.get(input.tool.pin, "instructions", "pinned")])
}

pinned(pin) if {
	pin.status == "pinned"
	object.get(pin, "instructions", "pinned") == "pinned"
}

default known_tool := false

known_tool if {
	is_string(input.tool.name)
	input.tool.name != ""
	is_string(input.tool.provider)
}

# The tool's name, "" when the input has none: the rules below never meet a null.
default tool_name := ""

tool_name := input.tool.name if is_string(input.tool.name)

# METADATA
# title: Tool not granted
# description: >-
#   role '…' may not call '…'
# custom:
#   rule: roles.tool_not_granted
deny contains {"rule": "roles.tool_not_granted", "reason": msg} if {
	role
	known_tool
	not granted
	msg := sprintf("role '%s' may not call '%s'", [input.principal.role, tool_name])
}

granted if {
	some pattern in role.tools
	# portable: tool-name patterns from role files hold no "/" (no `**/`); a malformed class in a role file would differ
	glob.match(pattern, [], tool_name)
}

# METADATA
# title: Granted
# description: >-
#   role '…' may call '…'
# custom:
#   rule: roles.granted
#   tier: 1
findings contains {"tier": 1, "rule": "roles.granted", "reason": msg} if {
	granted
	msg := sprintf("role '%s' may call '%s'", [input.principal.role, tool_name])
}
