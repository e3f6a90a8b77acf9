"""Package managers: pip, uv, pipx, npm/yarn/pnpm/bun, apt, dnf, apk, brew, cargo, gem, go, ...

Each states the packages installed or removed and their scope (``local`` only when visibly inside the
workspace), the registries contacted, its ``subcommand`` and ``operation`` (``npm config set`` ->
"config", "set"), and the user configuration it writes (``npm login`` writes ~/.npmrc).

    FAMILY.handlers["npm"](d, call)   # `npm i -g typescript`: PackageEffect(manager="npm", scope="global")
"""

from __future__ import annotations

import re
from dataclasses import replace

from gateway.effects.shell import cargo_aliases, gh_aliases, spellings
from gateway.effects.shell.call import Call, Handler
from gateway.effects.shell.family import Family
from gateway.effects.shell.options import Opts, first_operand
from gateway.effects.shell.walker import Describer
from gateway.effects.shell.words import Word, names

__all__ = ["FAMILY", "pip_command", "subcommands"]

_PIP_LONG = (
    "--requirement --constraint --editable --target --index-url --extra-index-url --find-links --config-settings "
    "--prefix --root --src --upgrade-strategy --python-version --platform --implementation --abi --only-binary "
    "--no-binary --progress-bar --log --proxy --cert --client-cert --cache-dir --exists-action --trusted-host "
    "--retries --timeout --global-option --install-option --report --python --dest"
)


def _pip(d: Describer, call: Call) -> None:
    pip_command(d, call, call.args, runner=call.words[0])
    d.unknown_paths(call.args, call)


def _name(call: Call, operands: list[str], at: int = 0) -> None:
    """The subcommand (operand ``at``) and the operation after it (``npm config set`` -> "config", "set")."""
    call.facts.subcommand = operands[at] if len(operands) > at else None
    call.facts.operation = operands[at + 1] if len(operands) > at + 1 and not operands[at + 1].startswith("-") else None


def _user_config(d: Describer, call: Call, path: str) -> None:
    """The command changes the user's own configuration of a tool (a registry, an index, a login token)."""
    d.write(Word.of(path.replace("~", d.home, 1)), call)


def pip_command(d: Describer, call: Call, args: list[Word], runner: Word, uv: bool = False) -> None:
    """pip (also ``python -m pip`` and ``uv pip``): the packages, their scope and the indexes contacted."""
    opts = d.options(call, "rceitfCd", _PIP_LONG, known="--user --no-index --system --dry-run", args=args)
    operands = list(opts.operands)
    _name(call, [w.value for w in operands])
    sub = operands.pop(0).value if operands else ""
    if sub == "config" and call.facts.operation in _CONFIG_CHANGES:
        where = "/etc/pip.conf" if opts.has("--global") else "~/.config/pip/pip.conf"
        if not opts.has("--site"):
            _user_config(d, call, where)
    if sub in ("index", "search"):
        _pip_network(d, call, opts, [])
    if sub not in ("install", "uninstall", "download"):
        return
    names = [w.value for w in operands]
    names += [f"-r {w.value}" for w in opts.values("-r", "--requirement")]
    names += [f"-e {w.value}" for w in opts.values("-e", "--editable")]
    for word in opts.values("-r", "--requirement", "-c", "--constraint"):
        d.read(word, call)
    if sub == "download":
        for word in opts.values("-d", "--dest"):
            d.write(word, call)
    else:
        d.package("pip", names, _pip_local(d, runner, opts, uv), call)
    if sub != "uninstall":
        _pip_network(d, call, opts, operands)


def _pip_local(d: Describer, runner: Word, opts: Opts, uv: bool) -> bool:
    """Local only when the target is visibly inside the workspace: a bare pip could be any interpreter's."""
    if opts.has("--user"):
        return False
    targets = opts.values("-t", "--target", "--prefix", "--root") or opts.values("--python")
    if targets:
        return all(d.in_workspace(w) for w in targets)
    if uv:
        return not opts.has("--system")  # uv installs into the project's venv unless told otherwise
    return "/" in runner.value and d.in_workspace(runner)  # ./.venv/bin/pip, venv/bin/python -m pip


def _pip_network(d: Describer, call: Call, opts: Opts, operands: list[Word]) -> None:
    pip_call = replace(call, name="pip")
    if not opts.has("--no-index"):
        d.reach("pypi.org", "pip")
    for word in opts.values("-i", "--index-url", "--extra-index-url", "--proxy"):
        d.url(word, pip_call)
    for word in opts.values("-f", "--find-links") + operands:
        url = word.value.split(" @ ", 1)[-1].strip()  # `name @ https://...`
        if "://" in url:
            d.url(replace(word, value=re.sub(r"^(git|hg|svn|bzr)\+", "", url)), pip_call)


def _uv(d: Describer, call: Call) -> None:
    opts = d.options(call, "p", "--python --directory --project --cache-dir --color", stop=True)
    _name(call, [w.value for w in opts.operands])
    sub = opts.operands[0].value if opts.operands else ""
    rest = opts.operands[1:]
    if sub != "run":
        d.unknown_paths(call.args, call)
    if sub == "pip":
        pip_command(d, call, rest, runner=call.words[0], uv=True)
        return
    if sub in ("add", "remove", "sync", "lock", "run") or (sub == "tool" and rest[:1] and rest[0].value != "list"):
        d.reach("pypi.org", "uv")
    if sub == "publish":
        _upload(d, call, d.options(call, "u", "--publish-url --index --username --password --token", args=rest))
    if sub in ("add", "remove"):
        names = d.options(call, "", "--group --optional --extra --package", args=rest).operands
        d.package("pip", [w.value for w in names], True, call)
    elif sub == "tool" and rest[:1] and rest[0].value in ("install", "upgrade", "uninstall"):
        d.package("pip", [w.value for w in rest[1:] if not w.value.startswith("-")], False, call)
    elif sub == "run":
        inner = d.options(call, "p", "--with --python --extra --group --env-file --package", args=rest, stop=True)
        d.inner(inner.operands, call)
    elif sub == "venv":
        for word in [w for w in rest if not w.value.startswith("-")][:1] or [Word.of(".venv")]:
            d.write(word, call)


def _pipx(d: Describer, call: Call) -> None:
    operands = [w for w in call.args if not w.value.startswith("-")]
    _name(call, [w.value for w in operands])
    d.unknown_paths(call.args, call)
    sub = operands[0].value if operands else ""
    if sub in ("install", "inject", "upgrade", "reinstall", "uninstall"):
        d.package("pipx", [w.value for w in operands[1:]], False, call)
    if sub in ("install", "inject", "upgrade", "reinstall", "run"):
        d.reach("pypi.org", "pipx")


# The commands by the name each program runs (gateway/effects/shell/spellings.py: `npm i` is install)
_NPM_INSTALL = names("install add ci update install-test install-ci-test")
_NPM_REMOVE = names("uninstall remove unlink")
# commands that talk to the registry (to fetch, to look up, or to publish)
_NPM_FETCH = _NPM_INSTALL | names(
    "exec bunx dlx create init publish unpublish view info search outdated audit ping whoami doctor dist-tag owner "
    "access token login adduser logout star unstar stars deprecate undeprecate stage trust team org profile "
    "self-update docs bugs repo"
)
_REGISTRY = {"npm": "registry.npmjs.org", "pnpm": "registry.npmjs.org", "yarn": "registry.yarnpkg.com"}
_CONFIG_CHANGES = names("set delete rm unset edit add remove")
_NPM_LOGIN = names("set login adduser logout token")
_NPM_RC = {"npm": "~/.npmrc", "pnpm": "~/.npmrc", "yarn": "~/.yarnrc", "bun": "~/.bunfig.toml"}
_RESOLVE = {"npm": spellings.npm, "pnpm": spellings.pnpm, "yarn": spellings.yarn, "bun": spellings.bun}


def _npm_command(program: str, operands: list[str]) -> tuple[str, list[str]]:
    """The command npm, pnpm, yarn or bun runs for ``operands`` and the words after it. A word the program
    does not know: npm refuses it (stated as written); the others run the package.json script of that name."""
    written, rest = operands[0], operands[1:]
    name = _RESOLVE[program](written)
    if program == "pnpm" and name == "recursive" and rest:  # `pnpm m publish`: the command in every package
        return _npm_command(program, rest)
    if program == "yarn" and name == "npm" and rest:  # yarn 2+: `yarn npm publish`
        npm_name = spellings.YARN_NPM_COMMANDS.get(rest[0])
        return (npm_name, rest[1:]) if npm_name else (name, rest)
    if program == "yarn" and name == "workspace" and len(rest) > 1:  # `yarn workspace PKG publish`
        return _npm_command(program, rest[1:])
    if name is None:
        return ("run", [written, *rest]) if program in spellings.RUNS_A_SCRIPT else (written, rest)
    return name, rest


def _after_option(call: Call, opts: Opts) -> bool:
    """The first operand follows an option without `=` (it may be that option's value)."""
    at = next((i for i, w in enumerate(call.args) if w is opts.operands[0]), None)
    before = call.args[at - 1].value if at else ""
    return before.startswith("-") and "=" not in before and before != "--"


def _npm_like(d: Describer, call: Call) -> None:
    """npm, yarn, pnpm, bun: add/install/remove (local unless global); exec/dlx/create fetch and run packages.
    The command is the one the program runs for the word given (`npm pub` publishes)."""
    opts = d.options(call, "wC", "--registry --prefix --workspace --location --tag --filter --dir --cwd")
    operands = [w.value for w in opts.operands]
    global_ = opts.has("-g", "--global") or any(w.value == "global" for w in opts.values("--location"))
    if call.name == "yarn" and operands[:1] == ["global"]:
        global_, operands = True, operands[1:]
    if operands and _RESOLVE[call.name](operands[0]) is None and len(operands) > 1 and _after_option(call, opts):
        # `npm --access public pub`: npm's configs take a value (`--access public`), which this parse does not
        # know for each of them; the word is a value, and the next one the command
        operands = operands[1:]
    if operands:
        sub, rest = _npm_command(call.name, operands)
        _name(call, [sub, *rest])
        call.facts.subcommand_as_written = operands[0]
    else:
        sub, rest = ("install" if call.name == "yarn" else ""), []
        _name(call, [sub] if sub else [])
    operands = [sub, *rest]
    d.unknown_paths(call.args, call)
    project = any(w.value == "project" for w in opts.values("--location"))
    if ((sub == "config" and call.facts.operation in _CONFIG_CHANGES) or sub in _NPM_LOGIN) and not project:
        _user_config(d, call, _NPM_RC.get(call.name, "~/.npmrc"))
    if sub in _NPM_INSTALL or sub in _NPM_REMOVE:
        d.package(call.name, operands[1:], not global_, call)
    if sub in _NPM_FETCH and not opts.has("--offline"):
        d.reach(_REGISTRY.get(call.name, "registry.npmjs.org"), call.name)
        for word in opts.values("--registry"):
            d.url(word, call)


def _registry_runner(host: str) -> Handler:
    """npx, bunx, uvx: fetch a package from the registry (when not installed) and run it."""

    def handler(d: Describer, call: Call) -> None:
        d.reach(host, call.name)
        operands = [w.value for w in call.args if not w.value.startswith("-")]
        call.facts.subcommand = operands[0] if operands else None  # the package it runs
        d.unknown_paths(call.args, call)

    return handler


def _system_packages(host: str, installs: str, fetches: str = "update upgrade") -> Handler:
    """apt, dnf, yum, apk, brew: always global; installs and updates contact the distribution's mirrors."""
    install_set = names(installs)
    fetch_set = names(fetches) | install_set

    def handler(d: Describer, call: Call) -> None:
        opts = d.options(call, "otcXC", "--option --target-release --config-file --repository --setopt")
        if opts.values("-o", "--option", "-c", "--config-file"):
            d.opaque(f"{call.name} -o/-c options can make it run commands")
        operands = [w.value for w in opts.operands]
        _name(call, operands)
        d.unknown_paths(call.args, call)
        sub = operands[0] if operands else ""
        if sub in install_set:
            d.package(call.name, operands[1:], False, call)
        if sub in fetch_set:
            d.reach(host, call.name)
        for word in opts.values("-X", "--repository"):
            d.url(word, call)

    return handler


_APT = _system_packages(
    "deb.debian.org", "install reinstall remove purge build-dep", "update upgrade full-upgrade dist-upgrade source"
)
_DNF = _system_packages(
    "mirrors.fedoraproject.org", "install reinstall remove erase downgrade", "update upgrade makecache"
)


def _cargo(d: Describer, call: Call) -> None:
    """cargo: the command it runs for the word (`cargo b` builds; an `[alias]` of .cargo/config.toml, of
    $CARGO_HOME or of --config can name any command: `b = "publish"`)."""
    opts = d.options(call, "ZjC", "--git --path --root --version --branch --tag --rev --jobs --config --color")
    operands = [w.value for w in opts.operands if not w.value.startswith("+")]  # `cargo +nightly b`
    if operands:
        expanded = cargo_aliases.expand(d, call, operands, [w for w in opts.values("--config")])
        if expanded is None:
            return
        _name(call, expanded)
        call.facts.subcommand_as_written = operands[0]
        operands = expanded
    d.unknown_paths(call.args, call)
    sub = operands[0] if operands else ""
    if sub in ("install", "uninstall", "add", "remove"):
        d.package("cargo", operands[1:], sub in ("add", "remove"), call)
    if sub in ("install", "add", "search", "update", "fetch", "publish", "login", "owner", "yank", "generate-lockfile"):
        d.reach("crates.io", "cargo")
        for word in opts.values("--git"):
            d.url(word, call)


def _gem(d: Describer, call: Call) -> None:
    """gem: the command RubyGems runs for the word (`gem pu` pushes: any unique prefix); push, yank and owner
    change a gem on rubygems.org (or --host), signin writes the user's credentials."""
    opts = d.options(call, "ivsk", "--install-dir --version --source --bindir --host --key --otp")
    operands = [w.value for w in opts.operands]
    if operands:
        _name(call, [spellings.gem(operands[0]) or operands[0], *operands[1:]])
        call.facts.subcommand_as_written = operands[0]
    d.unknown_paths(call.args, call)
    sub = call.facts.subcommand or ""
    if sub in ("push", "yank", "owner", "signin", "signout"):
        _upload(d, call, opts, host="rubygems.org", url_options=("--host",))
    if sub in ("signin", "signout"):
        _user_config(d, call, "~/.gem/credentials")
    if sub not in ("install", "update", "uninstall"):
        return
    dirs = opts.values("-i", "--install-dir")
    d.package("gem", operands[1:], bool(dirs) and all(d.in_workspace(w) for w in dirs), call)
    if sub != "uninstall":
        d.reach("rubygems.org", "gem")
        for word in opts.values("-s", "--source"):
            d.url(word, call)


# Where each publisher uploads unless told otherwise, and the options that name another index.
_PYPI_UPLOAD = "upload.pypi.org"


def _upload(
    d: Describer,
    call: Call,
    opts: Opts,
    host: str = _PYPI_UPLOAD,
    url_options: tuple[str, ...] = ("--repository-url", "--publish-url", "-u", "--url"),
    name_options: tuple[str, ...] = ("-r", "--repository", "--repo", "--index"),
) -> None:
    """A publish: to the URL an option gives, to a repository named in the user's config (``pypirc:NAME``:
    where it points is not known here), or to the program's default index."""
    urls = opts.values(*url_options)
    named = [w for w in opts.values(*name_options) if w.literal and "://" not in w.value]
    for word in urls + [w for w in opts.values(*name_options) if "://" in w.value]:
        d.url(word, call)
    for word in named:
        d.reach("test.pypi.org" if word.value == "testpypi" else f"pypirc:{word.value}", call.name)
    if not urls and not named:
        d.reach(host, call.name)


def _twine(d: Describer, call: Call) -> None:
    """twine upload|register DIST...: to PyPI, --repository-url, or a repository of ~/.pypirc (-r)."""
    opts = d.options(call, "rupc", "--repository --repository-url --username --password --comment --config-file")
    operands = [w.value for w in opts.operands]
    _name(call, operands)
    for word in opts.values("--config-file"):
        d.read(word, call)
    for word in opts.operands[1:]:
        d.read(word, call)
    if call.facts.subcommand in ("upload", "register"):
        _upload(d, call, opts)


def _python_publisher(*value_options: str) -> Handler:
    """poetry, pdm, hatch, flit: subcommands the analysis does not follow, but `publish` uploads to PyPI (or
    the repository an option names)."""
    general = subcommands(*value_options)

    def handler(d: Describer, call: Call) -> None:
        general(d, call)
        if call.facts.subcommand == "publish":
            at = first_operand(call.args, frozenset(value_options)) or 0
            _upload(
                d,
                call,
                d.options(
                    call, "ru", "--repository --repository-url --repo --url --username", args=call.args[at + 1 :]
                ),
            )

    return handler


def _gh(d: Describer, call: Call) -> None:
    """gh: an alias from its config is expanded first (`gh co 12` is `gh pr checkout 12`); every command but
    help, version and completion talks to the GitHub API."""
    general = subcommands("-R", "--repo", host="api.github.com")
    at = first_operand(call.args, frozenset({"-R", "--repo"}))
    if at is None:
        general(d, call)
        return
    written = call.args[at].value
    expanded = gh_aliases.expand(d, call, [w.value for w in call.args[at:]])
    if expanded is None:
        d.reach("api.github.com", call.name)
        return
    general(d, replace(call, words=[call.words[0], *call.args[:at], *(Word.of(w) for w in expanded)]))
    call.facts.subcommand_as_written = written


def _image_push(d: Describer, call: Call) -> None:
    """docker/podman push IMAGE (`image push` is the same command): the registry the image names, else
    Docker Hub."""
    general = subcommands("-H", "--host", "--config", "--context", "-c", "--log-level", "-l", "--url", "--connection")
    general(d, call)
    facts = call.facts
    if facts.subcommand == "image" and facts.operation in ("push", "pull"):
        facts.subcommand, facts.operation = facts.operation, None
    if facts.subcommand != "push":
        return
    images = [w for w in call.args if not w.value.startswith("-") and w.value not in ("image", "push")]
    for word in images[:1]:
        first = word.value.split("/", 1)[0]
        registry = first if "/" in word.value and ("." in first or ":" in first or first == "localhost") else ""
        d.reach(registry.split(":", 1)[0] or "docker.io", call.name)


def _go(d: Describer, call: Call) -> None:
    operands = [w.value for w in call.args if not w.value.startswith("-")]
    _name(call, operands)
    d.unknown_paths(call.args, call)
    sub = operands[0] if operands else ""
    if sub == "env" and any(w.value == "-w" for w in call.args):
        _user_config(d, call, "~/.config/go/env")
    if sub in ("install", "get"):
        d.package("go", operands[1:], sub == "get", call)  # go get edits go.mod; go install writes ~/go/bin
    if sub in ("install", "get") or operands[:2] in (["mod", "download"], ["mod", "tidy"]):
        d.reach("proxy.golang.org", "go")


def _virtualenv(d: Describer, call: Call) -> None:
    for word in d.options(call, "p", "--python --prompt").operands[:1]:
        d.write(word, call)


# --------------------------------------------------------------------------------------------------


def subcommands(*value_options: str, host: str | None = None) -> Handler:
    """A program with subcommands the analysis does not follow further (docker, kubectl, poetry, ...):
    its subcommand after the global options (``value_options`` take the next word), its path-like words,
    and the ``host`` it always contacts (gh: the GitHub API)."""
    takes_value = frozenset(value_options)

    def handler(d: Describer, call: Call) -> None:
        at = first_operand(call.args, takes_value)
        if at is not None:
            _name(call, [w.value for w in call.args[at:]])
        d.unknown_paths(call.args, call)
        if host and call.facts.subcommand not in (None, "help", "version", "completion"):
            d.reach(host, call.name)
        if call.facts.subcommand == "config" and call.facts.operation in _CONFIG_CHANGES:
            d.opaque(f"{call.name} config {call.facts.operation} changes the user's {call.name} configuration")

    return handler


_REGISTRY_RUNNERS = {"npx": "registry.npmjs.org", "bunx": "registry.npmjs.org", "uvx": "pypi.org"}

HANDLERS: dict[str, Handler] = {
    "pip": _pip,
    "uv": _uv,
    "pipx": _pipx,
    **{name: _npm_like for name in ("npm", "yarn", "pnpm")},
    **{name: _registry_runner(host) for name, host in _REGISTRY_RUNNERS.items()},
    "apt": _APT,
    "apt-get": _APT,
    "aptitude": _APT,
    "dnf": _DNF,
    "yum": _DNF,
    "microdnf": _DNF,
    "apk": _system_packages("dl-cdn.alpinelinux.org", "add del", "update upgrade fix"),
    "brew": _system_packages("formulae.brew.sh", "install reinstall uninstall remove", "update upgrade tap"),
    "cargo": _cargo,
    "gem": _gem,
    "go": _go,
    "virtualenv": _virtualenv,
    "docker": _image_push,
    "podman": _image_push,
    "kubectl": subcommands("-n", "--namespace", "--context", "--kubeconfig", "--cluster", "--user", "-s", "--server"),
    "helm": subcommands("-n", "--namespace", "--kube-context", "--kubeconfig"),
    "terraform": subcommands(),
    "systemctl": subcommands("-H", "--host", "-M", "--machine", "-t", "--type", "-p", "--property"),
    "poetry": _python_publisher("-C", "--directory"),
    "conda": subcommands(),
    "pdm": _python_publisher("-p", "--project"),
    "hatch": _python_publisher("-e", "--env"),
    "flit": _python_publisher(),
    "twine": _twine,
    "gh": _gh,
}

# What a registry serves to everyone else: the subcommands that change it (as the program resolves the word)
_REGISTRY_WRITES = names("publish unpublish deprecate undeprecate dist-tag owner access stage trust")

FAMILY = Family(
    name="packages",
    handlers=HANDLERS,
    versioned=names("pip"),
    classes={
        "package_config_programs": names("npm pnpm yarn pip poetry conda bun uv"),
        "dangerous_programs": names("docker podman kubectl terraform systemctl"),
    },
    publishes={
        **{name: _REGISTRY_WRITES for name in ("npm", "pnpm", "yarn", "bun")},
        "cargo": names("publish yank owner"),
        "gem": names("push yank owner"),
        "twine": names("upload register"),
        **{name: names("publish") for name in ("poetry", "uv", "pdm", "hatch", "flit")},
        **{name: names("push") for name in ("docker", "podman")},
    },
)
