"""The subcommand a program really runs for the word it is given: its aliases and abbreviations.

`npm pub` publishes: npm accepts any unique prefix of its commands and aliases. A rule on "publish" must see
"publish" however the agent spelled it, so the handlers state the canonical name (``subcommand``) and the
word as written (``subcommand_as_written``). Each table is the program's own, read from its source:

- npm 11.19 (lib/utils/cmd-list.js): commands, aliases, and `abbrev` over both (a unique prefix of either);
  camelCase becomes kebab-case (`installTest` -> install-test)
- pnpm 11 (each command's `commandNames`, the first is the name) and pnpm 10's commands handed to npm; a word
  that is none of them runs the package.json script of that name
- yarn 1 (src/cli/commands/index.js, camelCase keys too) and yarn 2+ (`yarn npm publish`); other words run a
  script or a dependency's binary
- bun (src/cli.zig `Command.which`); other words run a script or a file
- RubyGems (command_manager.rb): aliases, then a unique prefix, the word in lower case
- cargo (src/bin/cargo/main.rs): built-in aliases; `[alias]` tables of .cargo/config.toml are read by
  gateway/effects/shell/cargo_aliases.py, git's and gh's aliases by git_aliases.py and gh_aliases.py

pip (`pip inst` is "unknown command", pip 26.3), twine (argparse choices), poetry (cleo 2 finds names
exactly) and uv take a command's name only as written: their handlers need no table.

    npm("pub")     # "publish"
    npm("p")       # None: pack, ping, pkg, prefix, profile, prune, publish
    gem("pu")      # "push"
"""

from __future__ import annotations

import re

from gateway.effects.shell.words import names

__all__ = ["RUNS_A_SCRIPT", "bun", "gem", "npm", "pnpm", "yarn"]

# --- npm --------------------------------------------------------------------------------------------------

NPM_COMMANDS = names(
    "access adduser approve-scripts audit bugs cache ci completion config dedupe deny-scripts deprecate diff "
    "dist-tag docs doctor edit exec explain explore find-dupes fund get help help-search init install "
    "install-ci-test install-scripts install-test link ll login logout ls org outdated owner pack ping pkg prefix "
    "profile prune publish query rebuild repo restart root run sbom search set shrinkwrap stage star stars start "
    "stop team test token trust undeprecate uninstall unpublish unstar update version view whoami"
)
NPM_ALIASES = {
    "author": "owner", "home": "docs", "issues": "bugs", "info": "view", "show": "view", "find": "search",
    "add": "install", "unlink": "uninstall", "remove": "uninstall", "rm": "uninstall", "r": "uninstall",
    "un": "uninstall", "rb": "rebuild", "list": "ls", "ln": "link", "create": "init", "i": "install",
    "it": "install-test", "cit": "install-ci-test", "u": "update", "up": "update", "c": "config", "s": "search",
    "se": "search", "tst": "test", "t": "test", "ddp": "dedupe", "v": "view", "run-script": "run",
    "clean-install": "ci", "clean-install-test": "install-ci-test", "x": "exec", "why": "explain", "la": "ll",
    "verison": "version", "ic": "ci", "innit": "init", "in": "install", "ins": "install", "inst": "install",
    "insta": "install", "instal": "install", "isnt": "install", "isnta": "install", "isntal": "install",
    "isntall": "install", "install-clean": "ci", "isntall-clean": "ci", "hlep": "help", "dist-tags": "dist-tag",
    "upgrade": "update", "udpate": "update", "rum": "run", "sit": "install-ci-test", "urn": "run", "ogr": "org",
    "add-user": "adduser",
}  # fmt: skip


def abbreviations(words: frozenset[str] | set[str]) -> dict[str, str]:
    """npm's `abbrev` package: every prefix that names one word of ``words`` (a word is its own abbreviation,
    even when it is a prefix of another), as npm builds it: sorted, each word against its neighbours."""
    ordered = sorted(words)
    table: dict[str, str] = {}
    previous = ""
    for at, current in enumerate(ordered):
        following = ordered[at + 1] if at + 1 < len(ordered) else ""
        if current == following:
            continue
        j = 0
        next_matches = prev_matches = True
        while j < len(current):
            char = current[j]
            next_matches = next_matches and j < len(following) and following[j] == char
            prev_matches = prev_matches and j < len(previous) and previous[j] == char
            if not next_matches and not prev_matches:
                j += 1
                break
            j += 1
        previous = current
        if j == len(current):
            table[current] = current
            continue
        for end in range(j, len(current) + 1):
            table[current[:end]] = current
    return table


_NPM_ABBREVIATIONS = abbreviations(NPM_COMMANDS | NPM_ALIASES.keys())


def npm(word: str) -> str | None:
    """The command npm runs for ``word`` (lib/utils/cmd-list.js ``deref``), or None: npm refuses it."""
    if re.search("[A-Z]", word):
        word = re.sub("[A-Z]", lambda m: "-" + m.group(0).lower(), word)
    if word in NPM_COMMANDS:
        return word
    if word in NPM_ALIASES:
        return NPM_ALIASES[word]
    found = _NPM_ABBREVIATIONS.get(word)
    while found in NPM_ALIASES:
        found = NPM_ALIASES[found]
    return found


# --- pnpm -------------------------------------------------------------------------------------------------

# Each command's names, the first its own (pnpm 11's `commandNames`).
_PNPM_NAMES = """
login adduser | logout | rebuild rb | approve-builds | ignored-builds | cache | completion | config c | get | set |
audit | licenses | sbom | bugs issues | docs home | list ls | ll la | why | outdated | peers | repo |
view info show v | self-update | setup | with | env | runtime rt | create | dlx | exec | restart | run run-script |
add | dedupe | fetch | import | install i | link ln | prune | remove uninstall rm un uni | unlink dislink |
update up upgrade | patch | patch-commit | patch-remove | pkg | set-script ss | bin | clean purge |
ci clean-install ic install-clean | doctor | help | install-test it | prefix | recursive multi m | root | access |
deprecate | undeprecate | dist-tag dist-tags | owner owners | ping | search s se find | star | stars | unstar |
team | unpublish | whoami | change | deploy | lane | pack-app | pack | publish | stage | version | cat-file |
cat-index | find-hash | store | init | edit | profile | token | xmas
"""
PNPM_COMMANDS = {
    alias: group.split()[0] for group in _PNPM_NAMES.replace("\n", " ").split("|") for alias in group.split()
}


def pnpm(word: str) -> str | None:
    """The command pnpm runs for ``word``, or None: pnpm runs the package.json script of that name."""
    return PNPM_COMMANDS.get(word)


# --- yarn ---------------------------------------------------------------------------------------------------

# yarn 1's commands (its camelCase keys are names too) and yarn 2+'s; every other word runs a script or a bin
YARN_COMMANDS = names(
    "access add audit autoclean bin cache check config create dedupe exec generate-lock-entry generateLockEntry "
    "global help import info init install licenses link lockfile login logout list node outdated owner pack "
    "policies prune publish remove run tag team unplug unlink upgrade version versions why workspaces workspace "
    "upgrade-interactive upgradeInteractive constraints dlx explain npm patch patch-commit plugin rebuild search "
    "set stage up"
)
# yarn 2+: `yarn npm <command>` talks to the registry
YARN_NPM_COMMANDS = {"audit": "audit", "info": "view", "login": "login", "logout": "logout", "publish": "publish"}
YARN_NPM_COMMANDS |= {"tag": "dist-tag", "whoami": "whoami"}


def yarn(word: str) -> str | None:
    """The command yarn runs for ``word``, or None: yarn runs the script or binary of that name."""
    if word in ("generateLockEntry", "upgradeInteractive"):
        return re.sub("[A-Z]", lambda m: "-" + m.group(0).lower(), word)
    return word if word in YARN_COMMANDS else None


# --- bun ----------------------------------------------------------------------------------------------------

BUN_COMMANDS = {
    **{name: name for name in names("init build discord upgrade completions getcompletes link unlink repl")},
    **{name: name for name in names("test pm update patch patch-commit run help exec outdated publish audit info")},
    "bun": "build", "x": "bunx", "i": "install", "install": "install", "c": "create", "create": "create",
    "a": "add", "add": "add", "r": "remove", "remove": "remove", "rm": "remove", "uninstall": "remove",
}  # fmt: skip


def bun(word: str) -> str | None:
    """The command bun runs for ``word``, or None: bun runs the script or file of that name (or refuses a name
    it keeps for later: deploy, login, whoami, ...)."""
    return BUN_COMMANDS.get(word)


# A word that is not one of the program's commands runs the package.json script of that name.
RUNS_A_SCRIPT = frozenset({"pnpm", "yarn", "bun"})

# --- gem ----------------------------------------------------------------------------------------------------

GEM_COMMANDS = sorted(
    names(
        "build cert check cleanup contents dependency environment exec fetch generate_index help info install list "
        "lock mirror open outdated owner pristine push query rdoc rebuild search server signin signout sources "
        "specification stale uninstall unpack update which yank"
    )
)
GEM_ALIASES = {"i": "install", "login": "signin", "logout": "signout"}


def gem(word: str) -> str | None:
    """The command RubyGems runs for ``word``: an alias, the command itself, or the one command it is a prefix
    of; None when none or several (gem refuses it; a plugin's command is not known here)."""
    word = GEM_ALIASES.get(word.lower(), word.lower())
    found = [name for name in GEM_COMMANDS if name.startswith(word)]
    if word in found:
        return word
    return found[0] if len(found) == 1 else None
