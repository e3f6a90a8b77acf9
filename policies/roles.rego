# Roles: which role may call which tool, from the role files (data.roles).
package gateway.roles

import rego.v1

role := data.roles[input.principal.role]

deny contains {"rule": "roles.unknown_role", "reason": msg} if {
	not data.roles[input.principal.role]
	msg := sprintf("role '%s' has no role file", [input.principal.role])
}

deny contains {"rule": "roles.tool_not_granted", "reason": msg} if {
	role
	not granted
	msg := sprintf("role '%s' may not call '%s'", [input.principal.role, input.tool.name])
}

granted if {
	some pattern in role.tools
	glob.match(pattern, [], input.tool.name)
}

findings contains {"tier": 1, "rule": "roles.granted", "reason": msg} if {
	granted
	msg := sprintf("role '%s' may call '%s'", [input.principal.role, input.tool.name])
}
