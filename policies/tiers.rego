# Tiers: how far a call's effects could reach (the blast radius).
#   tier 1  read-only, or creating new files
#   tier 2  modifying or deleting inside the workspace, local installs, local git writes, programs the
#           gateway does not know (they may change the workspace: a checkpoint is taken first)
#   tier 3  mass deletion, privilege, global installs, network egress, dangerous programs, and
#           anything that could not be analysed
package gateway.tiers

import rego.v1

effects := input.effects

# Programs that only read (with the flags that would make them write handled by the shell analysis:
# redirections and tee show up as writes, find -delete as a recursive deletion).
read_only_programs := {
	"ls", "cat", "head", "tail", "less", "more", "grep", "egrep", "fgrep", "rg", "ag", "wc", "pwd", "echo",
	"printf", "true", "false", "test", "[", "which", "whoami", "id", "date", "uname", "hostname", "file",
	"stat", "du", "df", "tree", "find", "diff", "cmp", "cut", "tr", "basename", "dirname",
	"realpath", "readlink", "sha256sum", "sha1sum", "md5sum", "jq", "yq", "column", "nl", "od",
	"hexdump", "strings", "type", "sleep", "seq", "sed", "cd", "tac", "rev", "paste", "comm",
	"expr", "printenv", "env", "nproc", "free", "uptime", "ps", "lsof", "tee", "xargs", "timeout", "nice",
	"nohup", "time", "command", "builtin",
}

# git subcommands that only read the repository.
git_read_only := {
	"status", "diff", "log", "show", "blame", "grep", "ls-files", "ls-tree", "rev-parse", "describe",
	"shortlog", "cat-file", "rev-list", "reflog", "branch", "tag", "remote", "config", "help", "version",
	"merge-base", "name-rev", "whatchanged", "show-ref", "for-each-ref", "count-objects", "check-ignore",
}

# git subcommands that contact another host are reported by the shell analysis as network effects.
git_network := {"push", "pull", "fetch", "clone", "ls-remote", "submodule", "send-email", "request-pull"}

# Programs whose misuse is hard to undo or reaches beyond the workspace.
dangerous_programs := {
	"dd", "mkfs", "mkfs.ext4", "mkfs.xfs", "mkfs.vfat", "fdisk", "sfdisk", "parted", "wipefs", "shred",
	"shutdown", "reboot", "halt", "poweroff", "init", "telinit", "systemctl", "service", "launchctl",
	"crontab", "at", "iptables", "ip6tables", "nft", "ufw", "useradd", "userdel", "usermod", "passwd",
	"chpasswd", "visudo", "mount", "umount", "insmod", "rmmod", "modprobe", "sysctl", "kill", "killall",
	"pkill", "chattr", "setfacl", "docker", "podman", "kubectl", "terraform", "nsenter", "chroot",
}

program(cmd) := base if {
	count(cmd.argv) > 0
	parts := split(cmd.argv[0], "/")
	base := parts[count(parts) - 1]
}

git_subcommand(cmd) := sub if {
	program(cmd) == "git"
	subs := [a | some i, a in cmd.argv; i > 0; not startswith(a, "-")]
	sub := subs[0]
}

findings contains {"tier": 1, "rule": "tiers.read", "reason": sprintf("reads %s", [concat(", ", effects.reads)])} if {
	count(effects.reads) > 0
}

findings contains {"tier": 1, "rule": "tiers.create", "reason": msg} if {
	count(effects.creates) > 0
	msg := sprintf("creates new files: %s", [concat(", ", effects.creates)])
}

findings contains {"tier": 2, "rule": "tiers.modify", "reason": msg} if {
	count(effects.writes) > 0
	msg := sprintf("modifies existing files: %s", [concat(", ", effects.writes)])
}

findings contains {"tier": 2, "rule": "tiers.delete", "reason": msg} if {
	count(effects.deletes) > 0
	msg := sprintf("deletes %s", [concat(", ", effects.deletes)])
}

findings contains {"tier": 3, "rule": "tiers.mass_delete", "reason": msg} if {
	count(effects.recursive_deletes) > 0
	msg := sprintf("deletes recursively or by pattern: %s", [concat(", ", effects.recursive_deletes)])
}

findings contains {"tier": 3, "rule": "tiers.privilege", "reason": "asks for elevated privileges (sudo, su, doas)"} if {
	effects.privileged
}

findings contains {"tier": 3, "rule": "tiers.network", "reason": msg} if {
	count(effects.network) > 0
	hosts := sort({sprintf("%s (%s)", [n.host, n.via]) | some n in effects.network})
	msg := sprintf("contacts other hosts: %s", [concat(", ", hosts)])
}

findings contains {"tier": 3, "rule": "tiers.global_install", "reason": msg} if {
	some p in effects.packages
	p.scope == "global"
	msg := sprintf("installs packages outside the workspace with %s: %s", [p.manager, concat(" ", p.names)])
}

findings contains {"tier": 2, "rule": "tiers.local_install", "reason": msg} if {
	some p in effects.packages
	p.scope == "local"
	msg := sprintf("installs packages into the workspace with %s: %s", [p.manager, concat(" ", p.names)])
}

findings contains {"tier": 3, "rule": "tiers.opaque", "reason": msg} if {
	count(effects.opaque) > 0
	msg := sprintf("cannot be analysed, so it is treated as dangerous: %s", [concat("; ", effects.opaque)])
}

findings contains {"tier": 3, "rule": "tiers.dangerous_command", "reason": msg} if {
	some cmd in effects.commands
	program(cmd) in dangerous_programs
	msg := sprintf("runs '%s', which can do damage beyond the workspace", [program(cmd)])
}

findings contains {"tier": 3, "rule": "tiers.dangerous_command", "reason": msg} if {
	some cmd in effects.commands
	program(cmd) in {"chmod", "chown", "chgrp"}
	some arg in cmd.argv
	arg in {"-R", "--recursive", "777", "a+rwx", "o+w"}
	msg := sprintf("runs '%s' recursively or world-writable", [program(cmd)])
}

findings contains {"tier": 1, "rule": "tiers.read_only_command", "reason": msg} if {
	some cmd in effects.commands
	program(cmd) in read_only_programs
	msg := sprintf("runs '%s', which only reads", [program(cmd)])
}

findings contains {"tier": 1, "rule": "tiers.git_read", "reason": msg} if {
	some cmd in effects.commands
	git_subcommand(cmd) in git_read_only
	msg := sprintf("runs 'git %s', which only reads the repository", [git_subcommand(cmd)])
}

findings contains {"tier": 2, "rule": "tiers.git_local_write", "reason": msg} if {
	some cmd in effects.commands
	sub := git_subcommand(cmd)
	not sub in git_read_only
	not sub in git_network
	msg := sprintf("runs 'git %s', which changes the local repository", [sub])
}

findings contains {"tier": 2, "rule": "tiers.unknown_command", "reason": msg} if {
	some cmd in effects.commands
	name := program(cmd)
	not name in read_only_programs
	not name in dangerous_programs
	not name in {"git", "chmod", "chown", "chgrp"}
	msg := sprintf("runs '%s', which may change the workspace (a checkpoint is taken first)", [name])
}

findings contains {"tier": 2, "rule": "tiers.unknown_command", "reason": msg} if {
	some cmd in effects.commands
	program(cmd) in {"chmod", "chown", "chgrp"}
	msg := sprintf("runs '%s', which changes file modes or owners", [program(cmd)])
}

findings contains {"tier": 2, "rule": "tiers.git_local_write", "reason": "runs 'git' without a subcommand"} if {
	some cmd in effects.commands
	program(cmd) == "git"
	not git_subcommand(cmd)
}

# Upstream tools: their annotations are untrusted hints, so only what the operator declared in
# gateway.yaml counts. Undeclared tools cannot be analysed; declared ones may still write.
findings contains {"tier": 3, "rule": "tiers.upstream_unanalysed", "reason": msg} if {
	startswith(input.tool.provider, "upstream:")
	not input.tool.analysed
	msg := sprintf("'%s' is an upstream tool whose effects gateway.yaml does not describe", [input.tool.name])
}

findings contains {"tier": 2, "rule": "tiers.upstream_may_write", "reason": msg} if {
	startswith(input.tool.provider, "upstream:")
	input.tool.analysed
	not input.tool.read_only
	msg := sprintf("'%s' is an upstream tool not declared read-only", [input.tool.name])
}
