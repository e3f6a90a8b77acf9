# The commit protocol: irreversible side effects run only through intent_commit, by a role allowed to
# commit, for an intent a verifier approved.
package gateway.concerns.commit

import rego.v1

role := object.get(data.roles, input.principal.role, {})

# METADATA
# title: Direct call
# description: >-
#   '…' is commit-class: it runs only through intent_commit, for an approved intent
# custom:
#   rule: commit.direct_call
deny contains {"rule": "commit.direct_call", "reason": msg} if {
	input.tool.commit_class
	msg := sprintf("'%s' is commit-class: it runs only through intent_commit, for an approved intent", [input.tool.name])
}

# METADATA
# title: Not committer
# description: >-
#   role '…' may not commit; only a role with commit: true may
# custom:
#   rule: commit.not_committer
deny contains {"rule": "commit.not_committer", "reason": msg} if {
	input.tool.name == "intent_commit"
	not role.commit
	msg := sprintf("role '%s' may not commit; only a role with commit: true may", [input.principal.role])
}

# input.intent is null unless the call names an intent: test for an object, never for truthiness.
intent := input.intent if is_object(input.intent)

intent := {"id": "(none)", "state": "missing", "action": "(none)"} if not is_object(input.intent)

# METADATA
# title: Not approved
# description: >-
#   intent '…' is …; a verifier must approve it first
# custom:
#   rule: commit.not_approved
deny contains {"rule": "commit.not_approved", "reason": msg} if {
	input.tool.name == "intent_commit"
	not intent.state in {"approved", "executing", "committed", "failed", "compensated"}
	msg := sprintf("intent '%s' is %s; a verifier must approve it first", [intent.id, intent.state])
}

# METADATA
# title: Execute
# description: >-
#   commits intent '…' (…) exactly once
# custom:
#   rule: commit.execute
#   tier: 2
findings contains {"tier": 2, "rule": "commit.execute", "reason": msg} if {
	input.tool.name == "intent_commit"
	intent.state == "approved"
	msg := sprintf("commits intent '%s' (%s) exactly once", [intent.id, intent.action])
}

# METADATA
# title: Push
# description: >-
#   Push.
# custom:
#   rule: commit.push
#   tier: 3
findings contains {"tier": 3, "rule": "commit.push", "reason": "pushes to another host (network egress)"} if {
	input.tool.name == "intent_commit"
	intent.action == "push"
}

# METADATA
# title: Ceremony
# description: >-
#   Ceremony.
# custom:
#   rule: commit.ceremony
#   tier: 2
findings contains {"tier": 2, "rule": "commit.ceremony", "reason": "merges every verified task with an approved intent"} if {
	input.tool.name == "merge_ceremony"
}

# Defence in depth at the merge: a merge that deletes much of the repository is held for a person (tier 3),
# whoever verified and approved it; a scope check alone once let a worktree a crash left half-made report
# thousands of files as deleted. input.intent.diff is the merge's shape (files added, changed and deleted since
# the task forked, the files tracked there, the share deleted, lines). The thresholds are policy data: set
# data.settings.merge_deletions in gateway.yaml (policy: settings: merge_deletions: {...}) to change them.
default_merge_deletions := {
	"files": 50, # more than this many files deleted ...
	"share": 0.2, # ... and more than this share of the tracked files,
	"files_always": 500, # or more than this many files, whatever the share
}

# data.settings, not object.get(data, ...): a rule that reads all of data depends on every rule, this one
# included, and OPA refuses the bundle as recursive (regorus does not notice).
default settings_merge_deletions := {}

settings_merge_deletions := data.settings.merge_deletions if is_object(data.settings.merge_deletions)

merge_deletions := object.union(default_merge_deletions, settings_merge_deletions)

diff := intent.diff if is_object(object.get(intent, "diff", null))

mass_deletion if {
	diff.deleted > merge_deletions.files
	diff.deleted_share > merge_deletions.share
}

mass_deletion if diff.deleted > merge_deletions.files_always

# METADATA
# title: Mass deletion
# description: >-
#   Mass deletion.
# custom:
#   rule: commit.mass_deletion
#   tier: 3
findings contains {"tier": 3, "rule": "commit.mass_deletion", "reason": msg} if {
	input.tool.name == "intent_commit"
	intent.action == "merge"
	intent.state == "approved"
	mass_deletion
	msg := sprintf(
		"the merge deletes %d of the %d files tracked where task '%s' forked (%d%%; %d added, %d changed): a person confirms it (held above %d files and %d%%, or %d files)",
		[
			diff.deleted, diff.tracked, intent.task_id, round(diff.deleted_share * 100), diff.added, diff.changed,
			merge_deletions.files, round(merge_deletions.share * 100), merge_deletions.files_always,
		],
	)
}
