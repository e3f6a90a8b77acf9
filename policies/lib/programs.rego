# Program classes: which programs the policy judges as read-only, dangerous, and so on.
#
# GENERATED from the shell analyser's program families (gateway/effects/shell/, each module's FAMILY):
# do not edit by hand. Change a family's `classes` or `publishes`, then regenerate:
#     .venv/bin/python -m gateway.effects.shell.program_classes policies/lib/programs.rego
# tests/test_program_classes.py fails while this file and the families disagree.
package gateway.lib.programs

import rego.v1

# programs that only read (their writes show up as redirections, tee, find -delete)
read_only_programs := {
	":", "[", "ag", "basename", "builtin", "cat", "cd", "cmp", "column", "comm", "command", "cut", "date",
	"df", "diff", "dirname", "du", "echo", "egrep", "env", "exit", "expr", "false", "fgrep", "file", "find",
	"free", "grep", "head", "hexdump", "hostname", "id", "jq", "less", "ls", "lsof", "md5sum", "more", "nice",
	"nl", "nohup", "nproc", "od", "paste", "printenv", "printf", "ps", "pwd", "read", "readlink", "realpath",
	"return", "rev", "rg", "sed", "seq", "sha1sum", "sha256sum", "shift", "sleep", "stat", "strings", "tac",
	"tail", "tee", "test", "time", "timeout", "tr", "tree", "true", "type", "uname", "uptime", "wait", "wc",
	"which", "whoami", "xargs", "yq",
}

# programs whose every file effect the analysis states: they take the tier of those effects
described_programs := {
	"awk", "b2sum", "base32", "base64", "basenc", "cksum", "cmp", "cp", "gawk", "install", "join", "link",
	"ln", "mawk", "mkdir", "mv", "nawk", "rm", "rmdir", "sha512sum", "sort", "touch", "truncate", "uniq",
	"unlink", "xxd",
}

# interpreters and editors whose program text is always asked about
always_ask_interpreters := {
	"emacs", "ex", "gmake", "gvim", "make", "nvim", "osascript", "powershell", "pwsh", "rvim", "vi", "view",
	"vim", "vimdiff",
}

# programs whose misuse is hard to undo or reaches beyond the workspace
dangerous_programs := {
	"at", "chattr", "chpasswd", "chroot", "crontab", "dd", "docker", "fdisk", "halt", "init", "insmod",
	"ip6tables", "iptables", "kill", "killall", "kubectl", "launchctl", "mkfs", "mkfs.ext4", "mkfs.vfat",
	"mkfs.xfs", "modprobe", "mount", "nft", "nsenter", "parted", "passwd", "pkill", "podman", "poweroff",
	"reboot", "rmmod", "service", "setfacl", "sfdisk", "shred", "shutdown", "sysctl", "systemctl", "telinit",
	"terraform", "ufw", "umount", "useradd", "userdel", "usermod", "visudo", "wipefs",
}

# programs that change file modes or owners
mode_programs := {
	"chgrp", "chmod", "chown",
}

# package managers whose own configuration lives in the user's home
package_config_programs := {
	"bun", "conda", "npm", "pip", "pnpm", "poetry", "uv", "yarn",
}

# programs that change the working directory of the commands after them
cd_programs := {
	"cd", "pushd",
}

# programs that make links (a link's target is reached through it)
link_programs := {
	"link", "ln",
}

# program -> the subcommands that publish to a registry: what others install changes
publishing := {
	"bun": {
		"access", "deprecate", "dist-tag", "owner", "publish", "stage", "trust", "undeprecate", "unpublish",
	},
	"cargo": {
		"owner", "publish", "yank",
	},
	"docker": {
		"push",
	},
	"flit": {
		"publish",
	},
	"gem": {
		"owner", "push", "yank",
	},
	"hatch": {
		"publish",
	},
	"npm": {
		"access", "deprecate", "dist-tag", "owner", "publish", "stage", "trust", "undeprecate", "unpublish",
	},
	"pdm": {
		"publish",
	},
	"pnpm": {
		"access", "deprecate", "dist-tag", "owner", "publish", "stage", "trust", "undeprecate", "unpublish",
	},
	"podman": {
		"push",
	},
	"poetry": {
		"publish",
	},
	"twine": {
		"register", "upload",
	},
	"uv": {
		"publish",
	},
	"yarn": {
		"access", "deprecate", "dist-tag", "owner", "publish", "stage", "trust", "undeprecate", "unpublish",
	},
}
