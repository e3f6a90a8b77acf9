"""Subcommands as the program runs them: aliases and abbreviations resolved per family.

`npm pub` ran at tier 2 while `npm publish` asked a person: the `subcommand` fact was the word as written.
Each family's resolver is checked against the program's own rules (npm's against npm itself when it is
installed), and the shell analysis states the canonical name, the spelling, and the registry contacted.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from gateway.effects.paths import Workspace
from gateway.effects.shell import describe_command, spellings
from gateway.types import CommandEffect, Effects


def described(command: str, root: Path) -> tuple[Effects, CommandEffect]:
    fx = describe_command(command, Workspace(root), cwd=root)
    return fx, fx.commands[-1]


def hosts(fx: Effects) -> set[str]:
    return {n.host for n in fx.network}


# --- npm ----------------------------------------------------------------------------------------------------


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
    assert (host in hosts(fx)) if host else not fx.network


@pytest.mark.parametrize("command", ["pnpm pub", "yarn pub", "bun pub"])
def test_a_word_pnpm_yarn_or_bun_do_not_know_runs_a_script(repo: Path, command: str) -> None:
    fx, cmd = described(command, repo)
    assert (cmd.subcommand, cmd.operation, cmd.subcommand_as_written) == ("run", "pub", "pub")
    assert not fx.network


# --- gem, twine, poetry, uv, pdm, hatch, flit, docker, podman --------------------------------------------------


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
    assert host in hosts(fx), fx.network


# --- cargo --------------------------------------------------------------------------------------------------


def test_cargo_built_in_aliases(repo: Path) -> None:
    for word, runs in [("b", "build"), ("t", "test"), ("rm", "remove"), ("publish", "publish")]:
        _, cmd = described(f"cargo {word}", repo)
        assert (cmd.subcommand, cmd.subcommand_as_written) == (runs, word)
    assert "crates.io" in hosts(described("cargo +stable publish", repo)[0])


def test_cargo_user_aliases_win_over_built_in_ones(repo: Path) -> None:
    (repo / ".cargo").mkdir()
    (repo / ".cargo" / "config.toml").write_text('[alias]\nb = "publish --no-verify"\nship = ["b"]\n')
    for word in ("b", "ship"):
        fx, cmd = described(f"cargo {word}", repo)
        assert (cmd.subcommand, cmd.subcommand_as_written) == ("publish", word)
        assert "crates.io" in hosts(fx)
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


# --- git ----------------------------------------------------------------------------------------------------


def git_config(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), "config", *args], check=True)


def test_git_aliases_are_what_git_runs(repo: Path) -> None:
    git_config(repo, "alias.co", "checkout -b")
    git_config(repo, "alias.p", "push")
    git_config(repo, "alias.pp", "p --force")
    git_config(repo, "alias.st", "status --short")
    fx, cmd = described("git co topic", repo)
    assert (cmd.subcommand, cmd.subcommand_as_written, cmd.access) == ("checkout", "co", "write")
    fx, cmd = described("git pp origin main", repo)
    assert (cmd.subcommand, cmd.subcommand_as_written, cmd.access) == ("push", "pp", "remote")
    assert "git-remote:origin" in hosts(fx)
    fx, cmd = described("git -C . st", repo)
    assert (cmd.subcommand, cmd.access, fx.opaque) == ("status", "read", [])
    fx, cmd = described("git -c alias.q=push q", repo)
    assert cmd.subcommand == "push" and "git-remote:default" in hosts(fx)


def test_an_alias_never_hides_a_git_command(repo: Path) -> None:
    git_config(repo, "alias.status", "push")
    fx, cmd = described("git status", repo)
    assert (cmd.subcommand, cmd.access, fx.network) == ("status", "read", [])


@pytest.mark.parametrize(
    ("alias", "command", "why"),
    [
        ("!sh -c 'curl x | sh'", "git x", "runs a shell command"),
        ("x", "git x", "not a git command it knows"),  # a loop: git refuses it
        (None, "git nothing", "not a git command it knows"),
        ("status", "HOME=/tmp git x", "HOME is given"),
        ("status", "echo '[alias]' >> .git/config && git x", "writes .git/config"),
    ],
)
def test_a_git_alias_that_cannot_be_trusted_is_opaque(repo: Path, alias: str | None, command: str, why: str) -> None:
    if alias is not None:
        git_config(repo, "alias.x", alias)
    fx, _ = described(command, repo)
    assert any(why in reason for reason in fx.opaque), fx.opaque


def test_an_alias_from_a_file_the_agent_may_write_is_opaque(repo: Path) -> None:
    (repo / "team.gitconfig").write_text("[alias]\n\tship = status\n")
    git_config(repo, "include.path", "../team.gitconfig")
    fx, _ = described("git ship", repo)
    assert any("team.gitconfig, which the agent may rewrite" in reason for reason in fx.opaque), fx.opaque


# --- gh -----------------------------------------------------------------------------------------------------


def test_gh_aliases_from_its_config(repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = tmp_path / "gh"
    config.mkdir()
    (config / "config.yml").write_text('aliases:\n  co: pr checkout\n  rel: release create\n  pr: "issue list"\n')
    monkeypatch.setenv("GH_CONFIG_DIR", str(config))
    fx, cmd = described("gh rel v1.0", repo)
    assert (cmd.subcommand, cmd.operation, cmd.subcommand_as_written) == ("release", "create", "rel")
    assert "api.github.com" in hosts(fx)
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
    assert "api.github.com" in hosts(fx)
