"""The packages family (gateway/effects/shell/packages.py: pip, uv, npm, yarn, apt, cargo, gem, go, docker, gh, ...;
spellings.py, cargo_aliases.py, gh_aliases.py): the facts its programs' commands state and what it makes opaque.
Cases are grouped by the program a command starts with (a pipeline: its fetcher or decoder, else its last program).

Cases run against ``shell_cases.shell_workspace`` (tests/shell_cases.py).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from shell_cases import (
    HOME,
    file_effects_test,
    network_test,
    no_network_test,
    not_opaque_test,
    opaque_test,
    packages_test,
    run,
    shell_workspace,
    subcommand_test,
)

from gateway.effects.paths import Workspace
from gateway.effects.shell import describe_command, spellings
from gateway.types import CommandEffect, Effects


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Workspace:
    return shell_workspace(tmp_path, monkeypatch)


FILE_CASES = [
    ("pip install -r requirements.txt", "reads", ["requirements.txt"]),
]


test_file_effects = file_effects_test(FILE_CASES)


NETWORK_CASES = [
    ("pip install requests", {("pypi.org", "pip")}),
    ("pip install -i https://mirror.corp/simple x", {("pypi.org", "pip"), ("mirror.corp", "pip")}),
    ("pip install git+https://github.com/org/pkg", {("pypi.org", "pip"), ("github.com", "pip")}),
    ("npm install lodash", {("registry.npmjs.org", "npm")}),
    ("npm ci", {("registry.npmjs.org", "npm")}),
    ("npx create-react-app x", {("registry.npmjs.org", "npx")}),
    ("yarn add react", {("registry.yarnpkg.com", "yarn")}),
    ("apt-get install -y curl", {("deb.debian.org", "apt-get")}),
    ("apt update", {("deb.debian.org", "apt")}),
    ("cargo install ripgrep", {("crates.io", "cargo")}),
    ("gem install rails", {("rubygems.org", "gem")}),
    ("go install golang.org/x/tools/gopls@latest", {("proxy.golang.org", "go")}),
    ("go get example.com/mod", {("proxy.golang.org", "go")}),
    ("brew install jq", {("formulae.brew.sh", "brew")}),
    ("uv add httpx", {("pypi.org", "uv")}),
]


test_network = network_test(NETWORK_CASES)


NO_NETWORK_CASES = [
    "pip list",
    "pip install --no-index ./dist/x.whl",
    "npm test",
    "npm install --offline",
    "cargo build",
]


test_no_network = no_network_test(NO_NETWORK_CASES)


PACKAGE_CASES = [
    ("pip install requests", "pip", ["requests"], "global"),
    ("pip3 install 'django<5'", "pip", ["django<5"], "global"),
    ("pip install -r requirements.txt", "pip", ["-r requirements.txt"], "global"),
    ("pip install -e .", "pip", ["-e ."], "global"),
    ("pip install --user black", "pip", ["black"], "global"),
    ("./.venv/bin/pip install x", "pip", ["x"], "local"),
    ("pip install --target ./vendor x", "pip", ["x"], "local"),
    ("pip install -t vendor x", "pip", ["x"], "local"),
    ("pip install --prefix /usr/local x", "pip", ["x"], "global"),
    ("./.venv/bin/pip install --user x", "pip", ["x"], "global"),
    ("uv pip install httpx", "pip", ["httpx"], "local"),
    ("uv pip install --system httpx", "pip", ["httpx"], "global"),
    ("uv add httpx", "pip", ["httpx"], "local"),
    ("uv tool install ruff", "pip", ["ruff"], "global"),
    ("pipx install black", "pipx", ["black"], "global"),
    ("pip uninstall -y x", "pip", ["x"], "global"),
    ("npm install lodash", "npm", ["lodash"], "local"),
    ("npm i -D typescript", "npm", ["typescript"], "local"),
    ("npm i -g typescript", "npm", ["typescript"], "global"),
    ("npm install --global x", "npm", ["x"], "global"),
    ("npm install --location=global x", "npm", ["x"], "global"),
    ("npm ci", "npm", [], "local"),
    ("yarn add react", "yarn", ["react"], "local"),
    ("yarn", "yarn", [], "local"),
    ("yarn global add x", "yarn", ["x"], "global"),
    ("pnpm add -g x", "pnpm", ["x"], "global"),
    ("pnpm install", "pnpm", [], "local"),
    ("apt-get install -y curl git", "apt-get", ["curl", "git"], "global"),
    ("apt install ./local.deb", "apt", ["./local.deb"], "global"),
    ("dnf install -y gcc", "dnf", ["gcc"], "global"),
    ("yum install httpd", "yum", ["httpd"], "global"),
    ("apk add --no-cache bash", "apk", ["bash"], "global"),
    ("brew install jq", "brew", ["jq"], "global"),
    ("cargo install ripgrep", "cargo", ["ripgrep"], "global"),
    ("cargo add serde", "cargo", ["serde"], "local"),
    ("gem install rails", "gem", ["rails"], "global"),
    ("gem install -i vendor/gems rails", "gem", ["rails"], "local"),
    ("gem install --install-dir /opt/gems rails", "gem", ["rails"], "global"),
    ("go install golang.org/x/tools/gopls@latest", "go", ["golang.org/x/tools/gopls@latest"], "global"),
]


test_packages = packages_test(PACKAGE_CASES)


@pytest.mark.parametrize("command", ["pip list", "pip freeze", "npm run build", "cargo build", "apt-cache search x"])
def test_no_packages(command: str, ws: Workspace) -> None:
    assert run(command, ws).packages == []


OPAQUE_CASES = [
    ("apt-get -o APT::Update::Pre-Invoke::=id update", "can make it run commands"),
]


test_opaque = opaque_test(OPAQUE_CASES)


NOT_OPAQUE_CASES = [
    "npm test && npm run build",
    "docker ps --format '{{.Names}}'",
    "uv run pytest -q",
    "npx prettier --check .",
]


test_not_opaque = not_opaque_test(NOT_OPAQUE_CASES)


SUBCOMMAND_CASES = [
    ("npm --prefix sub install left-pad", "npm", "install", "left-pad"),
    ("npm config set registry http://x", "npm", "config", "set"),
    ("pip config set global.index-url x", "pip", "config", "set"),
    ("pip install -r requirements.txt", "pip", "install", None),
    ("uv add httpx", "uv", "add", "httpx"),
    ("cargo build --release", "cargo", "build", None),
    ("go test ./...", "go", "test", "./..."),
    ("apt-get install -y curl", "apt-get", "install", "curl"),
    ("docker --host tcp://h run alpine", "docker", "run", "alpine"),
    ("kubectl -n prod get pods", "kubectl", "get", "pods"),
]


test_subcommand_after_global_options = subcommand_test(SUBCOMMAND_CASES)


def test_user_configuration_writes(ws: Workspace) -> None:
    assert f"{HOME}/.npmrc" in run("npm config set registry http://x", ws).creates + run("npm login", ws).creates
    assert f"{HOME}/.config/pip/pip.conf" in run("pip config set global.index-url x", ws).creates
    assert run("npm config set x y --location=project", ws).creates == []


def described(command: str, root: Path) -> tuple[Effects, CommandEffect]:
    fx = describe_command(command, Workspace(root), cwd=root)
    return fx, fx.commands[-1]


def host_names(fx: Effects) -> set[str]:
    return {n.host for n in fx.network}


@pytest.mark.parametrize(
    ("word", "runs"),
    [
        ("publish", "publish"), ("pub", "publish"), ("pu", "publish"), ("publi", "publish"), ("unp", "unpublish"),
        ("i", "install"), ("isntall", "install"), ("install-cl", "ci"), ("installTest", "install-test"),
        ("add-user", "adduser"), ("c", "config"), ("rum", "run"), ("run-script", "run"), ("x", "exec"),
        ("p", None), ("st", None), ("PUBLISH", None), ("nonsense", None),
    ],
)  # fmt: skip
def test_npm_resolves_as_npm_does(word: str, runs: str | None) -> None:
    assert spellings.npm(word) == runs


def npm_cmd_list() -> Path | None:
    npm = shutil.which("npm")
    if npm is None:
        return None
    root = subprocess.run([npm, "root", "-g"], capture_output=True, text=True, timeout=60).stdout.strip()
    found = Path(root) / "npm" / "lib" / "utils" / "cmd-list.js"
    return found if found.is_file() else None


def test_npm_table_is_npms_own() -> None:
    """Every prefix of every command and alias, resolved by the installed npm's own `deref`."""
    cmd_list, node = npm_cmd_list(), shutil.which("node")
    if cmd_list is None or node is None:
        pytest.skip("no npm installed here to compare with")
    script = (
        f"const c = require({json.dumps(str(cmd_list))}); const out = {{}};"
        "for (const w of c.commands.concat(Object.keys(c.aliases)))"
        "  for (let i = 1; i <= w.length + 1; i++) { const p = (w + 'z').slice(0, i); out[p] = c.deref(p) ?? null; }"
        "console.log(JSON.stringify(out));"
    )
    theirs = json.loads(subprocess.run([node, "-e", script], capture_output=True, text=True, timeout=60).stdout)
    assert len(theirs) > 500
    differ = {word: (runs, spellings.npm(word)) for word, runs in theirs.items() if spellings.npm(word) != runs}
    assert not differ, f"npm's table changed (update gateway/effects/shell/spellings.py): {differ}"


@pytest.mark.parametrize(
    ("command", "runs", "written", "host"),
    [
        ("npm pub", "publish", "pub", "registry.npmjs.org"),
        ("npm --registry https://r.example pu --access public", "publish", "pu", "r.example"),
        ("npm unp pkg@1.0.0", "unpublish", "unp", "registry.npmjs.org"),
        ("npm --access public pub", "publish", "pub", "registry.npmjs.org"),  # --access takes a value
        ("pnpm --otp 123456 publish", "publish", "publish", "registry.npmjs.org"),
        ("npm isntall left-pad", "install", "isntall", "registry.npmjs.org"),
        ("pnpm publish", "publish", "publish", "registry.npmjs.org"),
        ("pnpm m publish", "publish", "m", "registry.npmjs.org"),
        ("pnpm -r publish", "publish", "publish", "registry.npmjs.org"),
        ("pnpm un x", "remove", "un", None),
        ("yarn npm publish", "publish", "npm", "registry.yarnpkg.com"),
        ("yarn workspace web publish", "publish", "workspace", "registry.yarnpkg.com"),
        ("yarn publish", "publish", "publish", "registry.yarnpkg.com"),
        ("bun publish", "publish", "publish", "registry.npmjs.org"),
        ("bun a zod", "add", "a", "registry.npmjs.org"),
    ],
)
def test_the_npm_family_states_the_command_it_runs(
    repo: Path, command: str, runs: str, written: str, host: str | None
) -> None:
    fx, cmd = described(command, repo)
    assert (cmd.subcommand, cmd.subcommand_as_written) == (runs, written)
    assert (host in host_names(fx)) if host else not fx.network


@pytest.mark.parametrize("command", ["pnpm pub", "yarn pub", "bun pub"])
def test_a_word_pnpm_yarn_or_bun_do_not_know_runs_a_script(repo: Path, command: str) -> None:
    fx, cmd = described(command, repo)
    assert (cmd.subcommand, cmd.operation, cmd.subcommand_as_written) == ("run", "pub", "pub")
    assert not fx.network


@pytest.mark.parametrize(
    ("word", "runs"),
    [("push", "push"), ("pu", "push"), ("PU", "push"), ("p", None), ("i", "install"), ("ins", "install"),
     ("login", "signin"), ("y", "yank"), ("o", None), ("ow", "owner")],
)  # fmt: skip
def test_gem_resolves_as_rubygems_does(word: str, runs: str | None) -> None:
    assert spellings.gem(word) == runs


@pytest.mark.parametrize(
    ("command", "runs", "host"),
    [
        ("gem pu my.gem", "push", "rubygems.org"),
        ("gem push --host https://gems.example my.gem", "push", "gems.example"),
        ("gem y my -v 1", "yank", "rubygems.org"),
        ("twine upload dist/*", "upload", "upload.pypi.org"),
        ("python -m twine upload dist/*", "twine", "upload.pypi.org"),
        ("twine upload -r testpypi dist/*", "upload", "test.pypi.org"),
        ("twine upload -r private dist/*", "upload", "pypirc:private"),
        ("twine upload --repository-url https://pypi.example/legacy/ dist/*", "upload", "pypi.example"),
        ("poetry publish --build", "publish", "upload.pypi.org"),
        ("poetry -C lib publish -r testpypi", "publish", "test.pypi.org"),
        ("uv publish", "publish", "upload.pypi.org"),
        ("uv publish --publish-url https://up.example/", "publish", "up.example"),
        ("pdm publish", "publish", "upload.pypi.org"),
        ("hatch publish", "publish", "upload.pypi.org"),
        ("flit publish", "publish", "upload.pypi.org"),
        ("docker push ghcr.io/acme/app:1", "push", "ghcr.io"),
        ("docker image push acme/app", "push", "docker.io"),
        ("podman push localhost:5000/app", "push", "localhost"),
    ],
)
def test_publishing_contacts_the_registry(repo: Path, command: str, runs: str, host: str) -> None:
    fx, cmd = described(command, repo)
    assert cmd.subcommand == runs
    assert host in host_names(fx), fx.network


def test_cargo_built_in_aliases(repo: Path) -> None:
    for word, runs in [("b", "build"), ("t", "test"), ("rm", "remove"), ("publish", "publish")]:
        _, cmd = described(f"cargo {word}", repo)
        assert (cmd.subcommand, cmd.subcommand_as_written) == (runs, word)
    assert "crates.io" in host_names(described("cargo +stable publish", repo)[0])


def test_cargo_user_aliases_win_over_built_in_ones(repo: Path) -> None:
    (repo / ".cargo").mkdir()
    (repo / ".cargo" / "config.toml").write_text('[alias]\nb = "publish --no-verify"\nship = ["b"]\n')
    for word in ("b", "ship"):
        fx, cmd = described(f"cargo {word}", repo)
        assert (cmd.subcommand, cmd.subcommand_as_written) == ("publish", word)
        assert "crates.io" in host_names(fx)
    # a directory below reads the config above it; a nearer one wins
    (repo / "crate" / ".cargo").mkdir(parents=True)
    (repo / "crate" / ".cargo" / "config.toml").write_text('[alias]\nb = "build"\n')
    fx = describe_command("cargo b", Workspace(repo), cwd=repo / "crate")
    assert fx.commands[0].subcommand == "build"
    fx = describe_command("cd crate && cargo ship", Workspace(repo), cwd=repo)
    assert fx.commands[-1].subcommand == "build", "ship -> b, and b is the nearer config's"


def test_cargo_aliases_from_the_command_line_and_the_environment(repo: Path) -> None:
    assert described("cargo --config 'alias.q=\"publish\"' q", repo)[1].subcommand == "publish"
    assert described("CARGO_ALIAS_Q=publish cargo q", repo)[1].subcommand == "publish"


@pytest.mark.parametrize(
    ("setup", "command", "why"),
    [
        ("", "echo '[alias]' > .cargo/config.toml && cargo q", "writes .cargo/config.toml"),
        ("[alias\n", "cargo q", "does not parse"),
        ('[alias]\nq = "q"\n', "cargo q", "into itself"),
        ('[alias]\nq = ""\n', "cargo q", "empty"),
        ("", "cargo --config other.toml q", "--config file"),
    ],
)
def test_a_cargo_alias_that_cannot_be_known_is_opaque(repo: Path, setup: str, command: str, why: str) -> None:
    (repo / ".cargo").mkdir()
    if setup:
        (repo / ".cargo" / "config.toml").write_text(setup)
    fx, _ = described(command, repo)
    assert any(why in reason for reason in fx.opaque), fx.opaque


def test_gh_aliases_from_its_config(repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = tmp_path / "gh"
    config.mkdir()
    (config / "config.yml").write_text('aliases:\n  co: pr checkout\n  rel: release create\n  pr: "issue list"\n')
    monkeypatch.setenv("GH_CONFIG_DIR", str(config))
    fx, cmd = described("gh rel v1.0", repo)
    assert (cmd.subcommand, cmd.operation, cmd.subcommand_as_written) == ("release", "create", "rel")
    assert "api.github.com" in host_names(fx)
    _, cmd = described("gh -R acme/app co 12", repo)
    assert (cmd.subcommand, cmd.operation) == ("pr", "checkout")
    _, cmd = described("gh pr list", repo)
    assert (cmd.subcommand, cmd.operation) == ("pr", "list"), "an alias never hides a gh command"


@pytest.mark.parametrize(
    ("config", "command", "why"),
    [
        ('aliases:\n  wipe: "!rm -rf ~"\n', "gh wipe", "runs a shell command"),
        ("aliases: [\n", "gh x", "does not read"),
        ("aliases: {}\n", "GH_CONFIG_DIR=/tmp gh x", "given to the command"),
    ],
)
def test_a_gh_alias_that_cannot_be_known_is_opaque(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, config: str, command: str, why: str
) -> None:
    (tmp_path / "config.yml").write_text(config)
    monkeypatch.setenv("GH_CONFIG_DIR", str(tmp_path))
    fx, _ = described(command, repo)
    assert any(why in reason for reason in fx.opaque), fx.opaque
    assert "api.github.com" in host_names(fx)
