# Tiers: how far a call's effects could reach (the blast radius).
#   tier 1  read-only, or creating new files
#   tier 2  modifying or deleting inside the workspace, local installs, local git writes, programs the
#           gateway does not know (they may change the workspace: a checkpoint is taken first)
#   tier 3  mass deletion, privilege, global installs, network egress, dangerous programs, and
#           anything that could not be analysed
package gateway.concerns.tiers

import rego.v1

import data.gateway.lib.programs

effects := input.effects

# The commands of the call, each with every fact version 2 states. A version-1 document (a hand-written
# input, an older tool) states only argv, redirects and via: its commands are read with the facts
# version 1 implied (the program is the last part of argv[0], it runs in the workspace) and nothing
# more, so its git commands are local writes and its interpreters' code is not seen.
default commands := []

commands := effects.commands if not input.version == 1

commands := [command(c) | some c in effects.commands] if input.version == 1

command(c) := object.union(object.union(version_1_facts, c), {"program": version_1_program(c)})

version_1_facts := {
	"program": "", "subcommand": null, "subcommand_as_written": null, "operation": null, "cwd": ".", "inline_code": [], "reads": [],
	"writes": [], "deletes": [], "paths": [], "executes": [], "env": {}, "access": null, "recursive": false,
	"world_writable": false,
}

version_1_program(c) := name if {
	count(c.argv) > 0
	parts := split(c.argv[0], "/")
	name := parts[count(parts) - 1]
}

version_1_program(c) := "" if count(c.argv) == 0

# The program classes below are the shell analyser's own (policies/lib/programs.rego, generated from its
# program families in gateway/effects/shell/: CONTRIBUTING.md, "Add a program family").
#
# Programs that only read (with the flags that would make them write handled by the shell analysis:
# redirections and tee show up as writes, find -delete as a recursive deletion).
read_only_programs := programs.read_only_programs

# Programs whose every file effect the shell analysis states (what they read, write, create and
# delete, with the options that run other programs reported as opaque): they take their tier from
# those effects, so `mkdir docs` or `cp a.txt b.txt` is tier 1 and `mv a b` is tier 2.
described_programs := programs.described_programs

# Interpreters and editors given program text: the shell analysis records it per command as
# `inline_code` (`python -W x -c CODE`, `node --no-warnings -e CODE`, `perl -Mstrict -e`, a heredoc or
# here-string fed to python/node/..., `deno eval`, `vim -c`, `pwsh -c`, `osascript -e`). It does not
# analyse the text, and neither does the policy. Such a one-liner is treated like a script in the
# workspace (an unknown program, tier 2: `python -c 'print(1)'`), except when its text reaches for what
# tier 3 is about: other processes, the network, deletion, dynamic evaluation or decoding, or a path
# outside the workspace. That is a heuristic over the text, not an analysis: it catches the obvious
# one-liners, and a script file written first gets tier 2 whatever it does. Editors' and shells' command
# options (`vim -c ':!rm -rf src'`, `pwsh -c`, `osascript -e`, `emacs --eval`) and makefile text given to
# make (`make -f - <<EOF`, `--eval`: its recipes are shell commands) are always tier 3.
always_ask_interpreters := programs.always_ask_interpreters

# What a one-liner may not reach for without a person looking (no (?i), no look-ahead: RE2 and OPA; no
# `\b`, `\s`, `\w` or `\d`, which are ASCII in OPA and Unicode in regorus: word ends and whitespace are
# written out, whitespace as Unicode's and JavaScript's, so `require(\u00a0'net')` counts).
word_end := `([^A-Za-z0-9_]|$)`

whitespace := `[\t\n\x0B\f\r \x{85}\x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000}\x{FEFF}]`

risky_code := concat("|", [
	`system|exec|popen|spawn|subprocess|child_process|pty\.|os\.fork|kill`,
	`socket|Socket|urllib|urlopen|requests|httpx|aiohttp|http\.client|https?:|ftp:|fetch\(|XMLHttpRequest`,
	`curl|wget|LWP|HTTP::|Net::HTTP|open-uri|IO::Socket|fsockopen|createServer|serve_forever|HTTPServer`,
	concat("", [`(^|[^A-Za-z0-9_])httpd`, word_end]),
	`rmtree|rmSync|rmdirSync|unlinkSync|unlink|remove|rm_rf|FileUtils|File\.delete|truncate`,
	`eval|compile|__import__|importlib|getattr|globals\(|__builtins__|Function\(|process\.binding|import\(`,
	`base64|b64decode|atob|Buffer\.from|codecs|marshal|pickle|ctypes|zlib|fromCharCode|chr\(|\\x[0-9a-fA-F]`,
	concat("", [`require\(`, whitespace, `*['"](node:)?(child_process|http|https|http2|net|dgram|tls|vm|worker_threads|cluster)['"]`]),
	`qx|%x|chmod|chown|setuid|sudo|Deno\.(run|Command|remove|connect|listen|serve|env)`,
	"`",
	`['"](/|~|\.\./)`,
	concat("", [`\.env`, word_end, `|\.git`, word_end]),
	`\.github|\.gitlab|\.ssh|\.aws|\.netrc|\.npmrc|\.pypirc|id_rsa|id_ed25519|credentials|hooks`,
])

# The program a command runs, as the shell analysis normalised it (`/usr/bin/python3.11` -> python).
program(cmd) := object.get(cmd, "program", "")

# The commands whose one-liner reaches for what tier 3 is about.
risky_inline contains i if {
	some i, cmd in commands
	count(cmd.inline_code) > 0
	cmd.program in always_ask_interpreters
}

risky_inline contains i if {
	some i, cmd in commands
	count(cmd.inline_code) > 0
	regex.match(risky_code, concat("\n", cmd.inline_code))
}

# METADATA
# title: Inline code
# description: >-
#   runs program text given to '…' that reaches for processes, the network, deletion or evaluation
# custom:
#   rule: tiers.inline_code
#   tier: 3
findings contains {"tier": 3, "rule": "tiers.inline_code", "reason": msg} if {
	some i in risky_inline
	msg := sprintf("runs program text given to '%s' that reaches for processes, the network, deletion or evaluation", [commands[i].program])
}

# Package managers' own configuration lives in the user's home (~/.npmrc, ~/.config/pip/pip.conf):
# changing it (a registry, an index URL, a login token) reaches every project on the machine.
package_config_programs := programs.package_config_programs

config_changes := {"set", "delete", "rm", "unset", "edit", "add", "remove"}

changes_package_config(cmd) if {
	cmd.subcommand == "config"
	cmd.operation in config_changes
}

changes_package_config(cmd) if {
	cmd.program in {"npm", "pnpm", "yarn"}
	cmd.subcommand in {"set", "login", "adduser", "add-user", "logout", "token"}
}

# METADATA
# title: Global config
# description: >-
#   changes …'s user or global configuration: …
# custom:
#   rule: tiers.global_config
#   tier: 3
findings contains {"tier": 3, "rule": "tiers.global_config", "reason": msg} if {
	some cmd in commands
	cmd.program in package_config_programs
	changes_package_config(cmd)
	msg := sprintf("changes %s's user or global configuration: %s", [cmd.program, concat(" ", cmd.argv)])
}

# Publishing: what a registry serves to everyone else changes (a package, a version's tags or owners, an
# image). `subcommand` is the command the program runs, however it was spelled (`npm pub`, `gem pu`, `cargo b`
# with `[alias] b = "publish"`, `git p` with alias.p = push): the shell analysis resolves each program's
# aliases and abbreviations. The network finding says where to; this one says what.
publishing := programs.publishing

# METADATA
# title: Publish
# description: >-
#   publishes to a registry with '… …' (written '…'): what others install changes
# custom:
#   rule: tiers.publish
#   tier: 3
findings contains {"tier": 3, "rule": "tiers.publish", "reason": msg} if {
	some cmd in commands
	cmd.subcommand in object.get(publishing, cmd.program, set())
	msg := sprintf("publishes to a registry with '%s %s' (written '%s'): what others install changes", [cmd.program, cmd.subcommand, as_written(cmd)])
}

as_written(cmd) := cmd.subcommand_as_written if is_string(object.get(cmd, "subcommand_as_written", null))

as_written(cmd) := cmd.subcommand if not is_string(object.get(cmd, "subcommand_as_written", null))

# Programs whose misuse is hard to undo or reaches beyond the workspace.
dangerous_programs := programs.dangerous_programs

mode_programs := programs.mode_programs

# METADATA
# title: Read
# description: >-
#   creates new files: …
# custom:
#   rule: tiers.read
#   tier: 1
findings contains {"tier": 1, "rule": "tiers.read", "reason": sprintf("reads %s", [concat(", ", effects.reads)])} if {
	count(effects.reads) > 0
}

# METADATA
# title: Create
# description: >-
#   creates new files: …
# custom:
#   rule: tiers.create
#   tier: 1
findings contains {"tier": 1, "rule": "tiers.create", "reason": msg} if {
	count(effects.creates) > 0
	msg := sprintf("creates new files: %s", [concat(", ", effects.creates)])
}

# METADATA
# title: Modify
# description: >-
#   modifies existing files: …
# custom:
#   rule: tiers.modify
#   tier: 2
findings contains {"tier": 2, "rule": "tiers.modify", "reason": msg} if {
	count(effects.writes) > 0
	msg := sprintf("modifies existing files: %s", [concat(", ", effects.writes)])
}

# METADATA
# title: Delete
# description: >-
#   deletes …
# custom:
#   rule: tiers.delete
#   tier: 2
findings contains {"tier": 2, "rule": "tiers.delete", "reason": msg} if {
	count(effects.deletes) > 0
	msg := sprintf("deletes %s", [concat(", ", effects.deletes)])
}

# METADATA
# title: Mass delete
# description: >-
#   deletes recursively or by pattern: …
# custom:
#   rule: tiers.mass_delete
#   tier: 3
findings contains {"tier": 3, "rule": "tiers.mass_delete", "reason": msg} if {
	count(effects.recursive_deletes) > 0
	msg := sprintf("deletes recursively or by pattern: %s", [concat(", ", effects.recursive_deletes)])
}

# METADATA
# title: Privilege
# description: >-
#   contacts other hosts: …
# custom:
#   rule: tiers.privilege
#   tier: 3
findings contains {"tier": 3, "rule": "tiers.privilege", "reason": "asks for elevated privileges (sudo, su, doas)"} if {
	effects.privileged
}

# METADATA
# title: Network
# description: >-
#   contacts other hosts: …
# custom:
#   rule: tiers.network
#   tier: 3
findings contains {"tier": 3, "rule": "tiers.network", "reason": msg} if {
	count(effects.network) > 0
	hosts := sort({sprintf("%s (%s)", [n.host, n.via]) | some n in effects.network})
	msg := sprintf("contacts other hosts: %s", [concat(", ", hosts)])
}

# METADATA
# title: Global install
# description: >-
#   installs packages outside the workspace with …: …
# custom:
#   rule: tiers.global_install
#   tier: 3
findings contains {"tier": 3, "rule": "tiers.global_install", "reason": msg} if {
	some p in effects.packages
	p.scope == "global"
	msg := sprintf("installs packages outside the workspace with %s: %s", [p.manager, concat(" ", p.names)])
}

# METADATA
# title: Local install
# description: >-
#   installs packages into the workspace with …: …
# custom:
#   rule: tiers.local_install
#   tier: 2
findings contains {"tier": 2, "rule": "tiers.local_install", "reason": msg} if {
	some p in effects.packages
	p.scope == "local"
	msg := sprintf("installs packages into the workspace with %s: %s", [p.manager, concat(" ", p.names)])
}

# METADATA
# title: Opaque
# description: >-
#   cannot be analysed, so it is treated as dangerous: …
# custom:
#   rule: tiers.opaque
#   tier: 3
findings contains {"tier": 3, "rule": "tiers.opaque", "reason": msg} if {
	count(effects.opaque) > 0
	msg := sprintf("cannot be analysed, so it is treated as dangerous: %s", [concat("; ", effects.opaque)])
}

# METADATA
# title: Dangerous command
# description: >-
#   runs '…', which can do damage beyond the workspace
# custom:
#   rule: tiers.dangerous_command
#   tier: 3
findings contains {"tier": 3, "rule": "tiers.dangerous_command", "reason": msg} if {
	some cmd in commands
	cmd.program in dangerous_programs
	msg := sprintf("runs '%s', which can do damage beyond the workspace", [cmd.program])
}

# METADATA
# title: Dangerous command
# description: >-
#   runs '…' recursively
# custom:
#   rule: tiers.dangerous_command
#   tier: 3
findings contains {"tier": 3, "rule": "tiers.dangerous_command", "reason": msg} if {
	some cmd in commands
	cmd.program in mode_programs
	cmd.recursive
	msg := sprintf("runs '%s' recursively", [cmd.program])
}

# METADATA
# title: Dangerous command
# description: >-
#   runs '…' to make files world-writable
# custom:
#   rule: tiers.dangerous_command
#   tier: 3
findings contains {"tier": 3, "rule": "tiers.dangerous_command", "reason": msg} if {
	some cmd in commands
	cmd.world_writable
	msg := sprintf("runs '%s' to make files world-writable", [cmd.program])
}

# METADATA
# title: Read only command
# description: >-
#   runs '…', which only reads
# custom:
#   rule: tiers.read_only_command
#   tier: 1
findings contains {"tier": 1, "rule": "tiers.read_only_command", "reason": msg} if {
	some cmd in commands
	cmd.program in read_only_programs
	msg := sprintf("runs '%s', which only reads", [cmd.program])
}

# METADATA
# title: Git read
# description: >-
#   git: what each command does to the repository, as the shell analysis parsed it (`access`). A git
#   command whose access is not known (none given) is treated as a local write.
# custom:
#   rule: tiers.git_read
#   tier: 1
findings contains {"tier": 1, "rule": "tiers.git_read", "reason": msg} if {
	some cmd in commands
	cmd.program == "git"
	cmd.access == "read"
	msg := sprintf("runs 'git %s', which only reads the repository", [git_name(cmd)])
}

# METADATA
# title: Git local write
# description: >-
#   runs 'git …', which changes the local repository
# custom:
#   rule: tiers.git_local_write
#   tier: 2
findings contains {"tier": 2, "rule": "tiers.git_local_write", "reason": msg} if {
	some cmd in commands
	cmd.program == "git"
	not cmd.access in {"read", "remote"}
	msg := sprintf("runs 'git %s', which changes the local repository", [git_name(cmd)])
}

# METADATA
# title: Git destroys history
# description: >-
#   Deleting the gateway's refs, expiring the reflog or pruning unreachable objects destroys what a
#   rollback restores from (the gateway keeps its own copy of every checkpoint, but a person should see it).
# custom:
#   rule: tiers.git_destroys_history
#   tier: 3
findings contains {"tier": 3, "rule": "tiers.git_destroys_history", "reason": msg} if {
	some cmd in commands
	cmd.program == "git"
	cmd.access == "destroy"
	msg := sprintf("runs 'git %s', which destroys history a rollback restores from (checkpoint refs, reflog, unreachable commits)", [git_name(cmd)])
}

# METADATA
# title: Network
# description: >-
#   runs 'git …', which contacts a remote repository
# custom:
#   rule: tiers.network
#   tier: 3
findings contains {"tier": 3, "rule": "tiers.network", "reason": msg} if {
	some cmd in commands
	cmd.program == "git"
	cmd.access == "remote"
	msg := sprintf("runs 'git %s', which contacts a remote repository", [git_name(cmd)])
}

git_name(cmd) := concat(" ", [cmd.subcommand, cmd.operation]) if {
	is_string(cmd.subcommand)
	is_string(cmd.operation)
}

git_name(cmd) := cmd.subcommand if {
	is_string(cmd.subcommand)
	not is_string(cmd.operation)
}

git_name(cmd) := "(no subcommand)" if not is_string(cmd.subcommand)

# METADATA
# title: Unknown command
# description: >-
#   runs '…', which may change the workspace (a checkpoint is taken first)
# custom:
#   rule: tiers.unknown_command
#   tier: 2
findings contains {"tier": 2, "rule": "tiers.unknown_command", "reason": msg} if {
	some i, cmd in commands
	not cmd.program in read_only_programs
	not cmd.program in described_programs
	not cmd.program in dangerous_programs
	not cmd.program in mode_programs
	not cmd.program in {"git", ""} # "": a bare redirection, or a name not literal (opaque)
	not i in risky_inline
	msg := sprintf("runs '%s', which may change the workspace (a checkpoint is taken first)", [cmd.program])
}

# METADATA
# title: Unknown command
# description: >-
#   runs '…', which changes file modes or owners
# custom:
#   rule: tiers.unknown_command
#   tier: 2
findings contains {"tier": 2, "rule": "tiers.unknown_command", "reason": msg} if {
	some cmd in commands
	cmd.program in mode_programs
	msg := sprintf("runs '%s', which changes file modes or owners", [cmd.program])
}

# The tool's provider, "" when the input has none (null or missing): roles.unknown_tool denies such a call,
# and no rule here meets a null (a type error would deny it through an engine error instead, unnamed).
default provider := ""

provider := input.tool.provider if is_string(input.tool.provider)

# METADATA
# title: Upstream unanalysed
# description: >-
#   Upstream tools: their annotations are untrusted hints, so only what the operator declared in
#   gateway.yaml counts. Undeclared tools cannot be analysed; declared ones may still write. A
#   request the upstream relays to the client during such a call has no effects of the tool's:
#   relay/relay.rego judges it.
# custom:
#   rule: tiers.upstream_unanalysed
#   tier: 3
findings contains {"tier": 3, "rule": "tiers.upstream_unanalysed", "reason": msg} if {
	startswith(provider, "upstream:")
	not data.gateway.concerns.relay.relayed
	not input.tool.analysed
	msg := sprintf("'%s' is an upstream tool whose effects gateway.yaml does not describe", [input.tool.name])
}

# METADATA
# title: Upstream may write
# description: >-
#   '…' is an upstream tool not declared read-only
# custom:
#   rule: tiers.upstream_may_write
#   tier: 2
findings contains {"tier": 2, "rule": "tiers.upstream_may_write", "reason": msg} if {
	startswith(provider, "upstream:")
	not data.gateway.concerns.relay.relayed
	input.tool.analysed
	not input.tool.read_only
	msg := sprintf("'%s' is an upstream tool not declared read-only", [input.tool.name])
}
