"""Package managers: pip, uv, pipx, npm/yarn/pnpm/bun, apt, dnf, apk, brew, cargo, gem, go, ...

Each states the packages installed or removed and their scope (``local`` only when visibly inside the
workspace), the registries contacted, its ``subcommand`` and ``operation`` (``npm config set`` ->
"config", "set"), and the user configuration it writes (``npm login`` writes ~/.npmrc).

    HANDLERS["npm"](d, call)   # `npm i -g typescript`: PackageEffect(manager="npm", scope="global")
"""

from __future__ import annotations

import re
from dataclasses import replace

from gateway.effects.shell.options import Opts, first_operand
from gateway.effects.shell.walker import Call, Describer, Handler
from gateway.effects.shell.words import Word, names

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


_NPM_INSTALL = names(
    "install i in ins inst insta instal isnt isnta isntal isntall add ci install-clean update up upgrade"
)
_NPM_REMOVE = names("uninstall un unlink remove rm r")
# subcommands that talk to the registry (to fetch, to look up, or to publish)
_NPM_FETCH = _NPM_INSTALL | names(
    "exec x dlx create init publish unpublish view info show v search s se find outdated audit ping whoami "
    "doctor dist-tag owner access token login adduser add-user logout star deprecate"
)
_REGISTRY = {"npm": "registry.npmjs.org", "pnpm": "registry.npmjs.org", "yarn": "registry.yarnpkg.com"}
_CONFIG_CHANGES = names("set delete rm unset edit add remove")
_NPM_LOGIN = names("set login adduser add-user logout token")
_NPM_RC = {"npm": "~/.npmrc", "pnpm": "~/.npmrc", "yarn": "~/.yarnrc", "bun": "~/.bunfig.toml"}


def _npm_like(d: Describer, call: Call) -> None:
    """npm, yarn, pnpm, bun: add/install/remove (local unless global); exec/dlx/create fetch and run packages."""
    opts = d.options(call, "wC", "--registry --prefix --workspace --location --tag --filter --dir --cwd")
    operands = [w.value for w in opts.operands]
    global_ = opts.has("-g", "--global") or any(w.value == "global" for w in opts.values("--location"))
    if call.name == "yarn" and operands[:1] == ["global"]:
        global_, operands = True, operands[1:]
    sub = operands[0] if operands else ("install" if call.name == "yarn" else "")
    _name(call, [sub, *operands[1:]])
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
    opts = d.options(call, "Zj", "--git --path --root --version --branch --tag --rev --jobs")
    operands = [w.value for w in opts.operands]
    _name(call, operands)
    d.unknown_paths(call.args, call)
    sub = operands[0] if operands else ""
    if sub in ("install", "uninstall", "add", "remove"):
        d.package("cargo", operands[1:], sub in ("add", "remove"), call)
    if sub in ("install", "add", "search", "update", "fetch", "publish", "login", "owner", "yank", "generate-lockfile"):
        d.reach("crates.io", "cargo")
        for word in opts.values("--git"):
            d.url(word, call)


def _gem(d: Describer, call: Call) -> None:
    opts = d.options(call, "ivs", "--install-dir --version --source --bindir")
    operands = [w.value for w in opts.operands]
    _name(call, operands)
    d.unknown_paths(call.args, call)
    sub = operands[0] if operands else ""
    if sub not in ("install", "update", "uninstall"):
        return
    dirs = opts.values("-i", "--install-dir")
    d.package("gem", operands[1:], bool(dirs) and all(d.in_workspace(w) for w in dirs), call)
    if sub != "uninstall":
        d.reach("rubygems.org", "gem")
        for word in opts.values("-s", "--source"):
            d.url(word, call)


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
    "docker": subcommands("-H", "--host", "--config", "--context", "-c", "--log-level", "-l"),
    "podman": subcommands("--url", "--connection", "--root", "--runroot", "--log-level"),
    "kubectl": subcommands("-n", "--namespace", "--context", "--kubeconfig", "--cluster", "--user", "-s", "--server"),
    "helm": subcommands("-n", "--namespace", "--kube-context", "--kubeconfig"),
    "terraform": subcommands(),
    "systemctl": subcommands("-H", "--host", "-M", "--machine", "-t", "--type", "-p", "--property"),
    "poetry": subcommands("-C", "--directory"),
    "conda": subcommands(),
    "pdm": subcommands("-p", "--project"),
    "hatch": subcommands("-e", "--env"),
    "gh": subcommands("-R", "--repo", host="api.github.com"),
}
