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
	"nohup", "time", "command", "builtin", "exit", "wait", ":", "read", "return", "shift",
}

# git subcommands that only read the repository.
git_read_only := {
	"status", "diff", "log", "show", "blame", "grep", "ls-files", "ls-tree", "rev-parse", "describe",
	"shortlog", "cat-file", "rev-list", "reflog", "branch", "tag", "remote", "config", "help", "version",
	"merge-base", "name-rev", "whatchanged", "show-ref", "for-each-ref", "count-objects", "check-ignore",
}

# git subcommands that contact another host are reported by the shell analysis as network effects.
git_network := {"push", "pull", "fetch", "clone", "ls-remote", "submodule", "send-email", "request-pull"}

# Programs whose every file effect the shell analysis states (what they read, write, create and
# delete, with the options that run other programs reported as opaque): they take their tier from
# those effects, so `mkdir docs` or `cp a.txt b.txt` is tier 1 and `mv a b` is tier 2.
described_programs := {
	"touch", "mkdir", "cp", "mv", "ln", "install", "truncate", "rm", "rmdir", "unlink", "sort", "uniq", "xxd",
	"cmp", "awk", "gawk", "mawk", "nawk", "base64", "base32", "basenc", "sha512sum", "b2sum", "cksum", "join",
}

# Interpreters and editors given program text on the command line (`python -c`, `node -e`, `vim -c`).
# The shell analysis records the text; it does not analyse it, and neither does the policy. Such a
# one-liner is treated like a script in the workspace (an unknown program, tier 2: `python -c
# 'print(1)'`), except when its text reaches for what tier 3 is about: other processes, the network,
# deletion, dynamic evaluation or decoding, or a path outside the workspace. That is a heuristic over
# the text, not an analysis: it catches the obvious one-liners, and a script file written first gets
# tier 2 whatever it does. Editors' and shells' command options (`vim -c ':!rm -rf src'`, `pwsh -c`,
# `osascript -e`) are always tier 3.
inline_code_options := {
	"python": "^-[A-Za-z]*c",
	"perl": "^-[A-Za-z]*[eE]",
	"ruby": "^-[A-Za-z]*e",
	"node": "^(-[A-Za-z]*[ep]|--eval|--print)",
	"bun": "^(-[A-Za-z]*e|--eval|--print)",
	"php": "^-[A-Za-z]*[rBRFE]",
	"lua": "^-[A-Za-z]*e",
	"Rscript": "^-[A-Za-z]*e",
	"julia": "^(-[A-Za-z]*e|--eval)",
	"osascript": "^-[A-Za-z]*e",
	"pwsh": "^-(c|C|command|Command|encodedcommand|EncodedCommand|ec|e)$",
	"vim": "^(-c|--cmd|-S|\\+)",
}

always_ask_interpreters := {"vim", "pwsh", "osascript"}

# What a one-liner may not reach for without a person looking (no (?i), no look-ahead: RE2 and OPA).
risky_code := concat("|", [
	`system|exec|popen|spawn|subprocess|child_process|pty\.|os\.fork|kill`,
	`socket|Socket|urllib|urlopen|requests|httpx|aiohttp|http\.client|https?:|ftp:|fetch\(|XMLHttpRequest`,
	`curl|wget|LWP|HTTP::|Net::HTTP|open-uri|IO::Socket|fsockopen|createServer|serve_forever|HTTPServer|\bhttpd\b`,
	`rmtree|rmSync|rmdirSync|unlinkSync|unlink|remove|rm_rf|FileUtils|File\.delete|truncate`,
	`eval|compile|__import__|importlib|getattr|globals\(|__builtins__|Function\(|process\.binding|import\(`,
	`base64|b64decode|atob|Buffer\.from|codecs|marshal|pickle|ctypes|zlib|fromCharCode|chr\(|\\x[0-9a-fA-F]`,
	`require\(\s*['"](node:)?(child_process|http|https|http2|net|dgram|tls|vm|worker_threads|cluster)['"]`,
	`qx|%x|chmod|chown|setuid|sudo`,
	"`",
	`['"](/|~|\.\./)`,
	`\.env\b|\.git\b|\.github|\.gitlab|\.ssh|\.aws|\.netrc|\.npmrc|\.pypirc|id_rsa|id_ed25519|credentials|hooks`,
])

interpreter(name) := "python" if regex.match("^(python|pypy)[0-9.]*$", name)

interpreter(name) := "node" if name in {"node", "nodejs"}

interpreter(name) := "lua" if regex.match("^lua(jit)?[0-9.]*$", name)

interpreter(name) := "vim" if name in {"vim", "vi", "nvim", "gvim", "view", "ex", "vimdiff"}

interpreter(name) := "perl" if regex.match("^perl[0-9.]*$", name)

interpreter(name) := "ruby" if regex.match("^ruby[0-9.]*$", name)

interpreter(name) := "php" if regex.match("^php[0-9.]*$", name)

interpreter(name) := name if name in {"bun", "deno", "Rscript", "julia", "osascript", "pwsh"}

# The options before the first operand (the script or module) belong to the interpreter.
first_operand(cmd) := i if {
	operands := [j | some j, a in cmd.argv; j > 0; not startswith(a, "-"); not startswith(a, "+")]
	i := operands[0]
}

# The index of the first operand, or the end of argv when there is none: options are the words before it.
options_end(cmd) := first_operand(cmd)

options_end(cmd) := count(cmd.argv) if not first_operand(cmd)

# The program text: each code option with the word after it (`-c CODE`; `-cCODE` is one word).
# `name` is interpreter(program(cmd)).
code_words(cmd, name) := words if {
	name != "deno"
	end := options_end(cmd)
	words := [w |
		pattern := inline_code_options[name]
		some i, arg in cmd.argv
		i > 0
		i < end
		regex.match(pattern, arg)
		some w in array.slice(cmd.argv, i, i + 2)
	]
}

code_words(cmd, "deno") := array.slice(cmd.argv, 2, 3) if cmd.argv[1] == "eval"

# --- per command, once per evaluation --------------------------------------------------------------

# What each command (by its index in effects.commands) is, worked out once for all the rules below
# rather than once per rule: its program's name, the interpreter that is, its program text.
command_program[i] := name if {
	some i, cmd in effects.commands
	name := program(cmd)
}

# How every interpreter's name begins (one regex in front of interpreter()'s several, which most
# programs are not; tiers_test.rego checks it lets each interpreter through).
interpreter_hint := `^(python|pypy|node|lua|vi|nvim|gvim|ex|perl|ruby|php|bun|deno|Rscript|julia|osascript|pwsh)`

command_interpreter[i] := kind if {
	some i, name in command_program
	regex.match(interpreter_hint, name)
	kind := interpreter(name)
}

command_code[i] := words if {
	some i, name in command_interpreter
	words := code_words(effects.commands[i], name)
}

# The commands whose one-liner reaches for what tier 3 is about.
risky_inline contains i if {
	some i, words in command_code
	count(words) > 0
	command_interpreter[i] in always_ask_interpreters
}

risky_inline contains i if {
	some i, words in command_code
	count(words) > 0
	regex.match(risky_code, concat(" ", words))
}

findings contains {"tier": 3, "rule": "tiers.inline_code", "reason": msg} if {
	some i in risky_inline
	msg := sprintf("runs program text given to '%s' on the command line that reaches for processes, the network, deletion or evaluation", [command_program[i]])
}

# Package managers' own configuration lives in the user's home (~/.npmrc, ~/.config/pip/pip.conf):
# changing it (a registry, an index URL, a login token) reaches every project on the machine.
package_config_programs := {"npm", "pnpm", "yarn", "pip", "pip3", "poetry", "conda", "bun", "uv"}

operands(cmd) := [a | some i, a in cmd.argv; i > 0; not startswith(a, "-")]

# `name` is program(cmd).
changes_package_config(cmd, name) if {
	name in package_config_programs
	ops := operands(cmd)
	ops[0] == "config"
	ops[1] in {"set", "delete", "rm", "unset", "edit", "add", "remove"}
}

changes_package_config(cmd, name) if {
	name in {"npm", "pnpm", "yarn"}
	operands(cmd)[0] in {"set", "login", "adduser", "add-user", "logout", "token"}
}

findings contains {"tier": 3, "rule": "tiers.global_config", "reason": msg} if {
	some i, name in command_program
	name in package_config_programs
	cmd := effects.commands[i]
	changes_package_config(cmd, name)
	msg := sprintf("changes %s's user or global configuration: %s", [name, concat(" ", cmd.argv)])
}

# Servers that expose the workspace to the network (the shell analysis reports nc/socat listeners).
# `name` is interpreter(program(cmd)).
serves_network(cmd, "python") if {
	some i, a in cmd.argv
	a == "-m"
	cmd.argv[i + 1] in {"http.server", "SimpleHTTPServer", "smtpd", "pyftpdlib", "uvicorn", "flask"}
}

serves_network(cmd, "php") if {
	some a in cmd.argv
	startswith(a, "-S")
}

findings contains {"tier": 3, "rule": "tiers.network", "reason": msg} if {
	some i, name in command_interpreter
	cmd := effects.commands[i]
	serves_network(cmd, name)
	msg := sprintf("serves on the network: %s", [concat(" ", cmd.argv)])
}

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

# git's global options that take their value as the next word (`git -C dir status`).
git_value_options := {"-C", "-c", "--git-dir", "--work-tree", "--namespace", "--super-prefix", "--config-env"}

git_subcommand_index(cmd) := i if {
	program(cmd) == "git"
	candidates := [j |
		some j, a in cmd.argv
		j > 0
		not startswith(a, "-")
		not cmd.argv[j - 1] in git_value_options
	]
	i := candidates[0]
}

git_subcommand(cmd) := cmd.argv[git_subcommand_index(cmd)]

# The words after the subcommand, and those of them that are not options.
git_rest(cmd) := array.slice(cmd.argv, git_subcommand_index(cmd) + 1, count(cmd.argv))

git_operands(cmd) := [a | some a in git_rest(cmd); not startswith(a, "-")]

git_has(cmd, flags) if {
	some a in git_rest(cmd)
	some flag in flags
	option_is(a, flag)
}

option_is(arg, flag) if arg == flag

option_is(arg, flag) if {
	startswith(flag, "--")
	startswith(arg, concat("", [flag, "="]))
}

# Subcommands in git_read_only that also write when given operands or certain options.
git_branch_writes := {
	"-d", "-D", "--delete", "-m", "-M", "--move", "-c", "-C", "--copy", "-f", "--force", "-u",
	"--set-upstream-to", "--unset-upstream", "--edit-description", "-t", "--track",
}

git_tag_writes := {
	"-d", "--delete", "-a", "--annotate", "-s", "--sign", "-u", "--local-user", "-f", "--force", "-m",
	"--message", "-F", "--file", "-e", "--edit",
}

git_list_modes := {"-l", "--list", "--contains", "--no-contains", "--merged", "--no-merged", "--points-at", "--show-current"}

git_config_writes := {
	"--add", "--replace-all", "--unset", "--unset-all", "-e", "--edit", "--rename-section",
	"--remove-section",
}

git_writes(cmd, "branch") if {
	git_has(cmd, git_branch_writes)
}

git_writes(cmd, "branch") if {
	count(git_operands(cmd)) > 0
	not git_has(cmd, git_list_modes)
}

git_writes(cmd, "tag") if {
	git_has(cmd, git_tag_writes)
}

git_writes(cmd, "tag") if {
	count(git_operands(cmd)) > 0
	not git_has(cmd, git_list_modes | {"-v", "--verify", "-n"})
}

git_writes(cmd, "remote") if {
	git_operands(cmd)[0] in {"add", "remove", "rm", "rename", "set-url", "set-head", "set-branches", "prune"}
}

git_writes(cmd, "config") if {
	count(git_operands(cmd)) >= 2
}

git_writes(cmd, "config") if {
	git_has(cmd, git_config_writes)
}

git_writes(cmd, "reflog") if {
	git_operands(cmd)[0] in {"expire", "delete"}
}

# In git_writes, git_reads and git_contacts_remote, `sub` is git_subcommand(cmd).
git_reads(cmd, sub) if {
	sub in git_read_only
	not git_writes(cmd, sub)
}

git_reads(cmd, "stash") if {
	git_operands(cmd)[0] in {"list", "show"}
}

# Defence in depth: git subcommands that contact a remote, whatever the shell analysis found.
git_contacts_remote(cmd, sub) if {
	sub in (git_network - {"submodule"})
}

git_contacts_remote(cmd, "submodule") if {
	git_operands(cmd)[0] in {"add", "update"}
}

git_contacts_remote(cmd, "remote") if {
	git_operands(cmd)[0] in {"show", "prune", "update"}
	not git_has(cmd, {"-n"})
}

# The git commands (by index in effects.commands), their subcommands, and which of them only read or
# contact a remote, worked out once.
git_commands[i] := cmd if {
	some i, name in command_program
	name == "git"
	cmd := effects.commands[i]
}

git_sub[i] := sub if {
	some i, cmd in git_commands
	sub := git_subcommand(cmd)
}

git_reading contains i if {
	some i, sub in git_sub
	git_reads(git_commands[i], sub)
}

git_remote contains i if {
	some i, sub in git_sub
	git_contacts_remote(git_commands[i], sub)
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
	some name in command_program
	name in dangerous_programs
	msg := sprintf("runs '%s', which can do damage beyond the workspace", [name])
}

findings contains {"tier": 3, "rule": "tiers.dangerous_command", "reason": msg} if {
	some i, name in command_program
	name in {"chmod", "chown", "chgrp"}
	some arg in effects.commands[i].argv
	arg in {"-R", "--recursive", "777", "a+rwx", "o+w"}
	msg := sprintf("runs '%s' recursively or world-writable", [name])
}

findings contains {"tier": 1, "rule": "tiers.read_only_command", "reason": msg} if {
	some name in command_program
	name in read_only_programs
	msg := sprintf("runs '%s', which only reads", [name])
}

findings contains {"tier": 1, "rule": "tiers.git_read", "reason": msg} if {
	some i in git_reading
	msg := sprintf("runs 'git %s', which only reads the repository", [git_sub[i]])
}

findings contains {"tier": 2, "rule": "tiers.git_local_write", "reason": msg} if {
	some i, sub in git_sub
	not i in git_reading
	not i in git_remote
	msg := sprintf("runs 'git %s', which changes the local repository", [sub])
}

findings contains {"tier": 3, "rule": "tiers.network", "reason": msg} if {
	some i in git_remote
	msg := sprintf("runs 'git %s', which contacts a remote repository", [git_sub[i]])
}

findings contains {"tier": 2, "rule": "tiers.unknown_command", "reason": msg} if {
	some i, name in command_program
	not name in read_only_programs
	not name in described_programs
	not name in dangerous_programs
	not name in {"git", "chmod", "chown", "chgrp"}
	not i in risky_inline
	msg := sprintf("runs '%s', which may change the workspace (a checkpoint is taken first)", [name])
}

findings contains {"tier": 2, "rule": "tiers.unknown_command", "reason": msg} if {
	some name in command_program
	name in {"chmod", "chown", "chgrp"}
	msg := sprintf("runs '%s', which changes file modes or owners", [name])
}

findings contains {"tier": 2, "rule": "tiers.git_local_write", "reason": "runs 'git' without a subcommand"} if {
	some i, _ in git_commands
	not git_sub[i]
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
