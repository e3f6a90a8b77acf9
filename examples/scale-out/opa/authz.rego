# OPA's own authorization (run with --authentication=token --authorization=basic): the gateway's bearer
# token, from OPA's environment (OPA_TOKEN), may do anything; without it only /health answers, for probes.
package system.authz

import rego.v1

default allow := false

allow if input.path == ["health"]

allow if {
	token := object.get(opa.runtime().env, "OPA_TOKEN", "")
	count(token) >= 32
	input.identity == token
}
