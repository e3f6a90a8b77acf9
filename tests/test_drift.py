"""Frozen interfaces and drift figures, with real git repositories: what an attempt may not change (frozen paths
and Python signatures), what a manifest's frozen entries must name, and how far an attempt moved."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from gateway.repo import Repo
from gateway.tasks.drift import diff_shape, drift, frozen_problems, frozen_violations, matches

Commit = Callable[[dict[str, str | None]], str]

API = """\
import functools


def parse(text: str, strict: bool = False) -> dict:
    return {"text": text}


async def fetch(url, *, timeout=10):
    return url


class Store(Base, metaclass=Meta):
    def __init__(self, path):
        self.path = path

    def get(self, key: str) -> bytes:
        return b""

    def _cache(self):
        return None
"""


@pytest.fixture
def repo(tmp_path: Path) -> Repo:
    repo = Repo(tmp_path / "repo")
    repo.root.mkdir()
    repo.run("init", "-q", "-b", "main")
    return repo


@pytest.fixture
def commit(repo: Repo) -> Commit:
    """commit({"src/a.py": "...", "old.txt": None}) writes (None: deletes) the files, commits, answers the sha."""

    def make(files: dict[str, str | None]) -> str:
        for name, text in files.items():
            path = repo.root / name
            if text is None:
                path.unlink()
            else:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(text)
        repo.run("add", "-A")
        repo.run("commit", "-q", "--allow-empty", "-m", "change")
        return repo.run("rev-parse", "HEAD").strip()

    return make


@pytest.fixture
def base(commit: Commit) -> str:
    return commit({"src/api.py": API, "api/v1/schema.json": "{}\n", "README.md": "hello\n"})


def edited(*changes: tuple[str, str]) -> str:
    """API with each (old, new) replacement made."""
    text = API
    for old, new in changes:
        assert old in text
        text = text.replace(old, new)
    return text


# -- matches ------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pattern", "path", "expected"),
    [
        ("api/**", "api/v1/schema.json", True),
        ("api/**", "apis/x", False),
        ("src/*.py", "src/a.py", True),
        ("src/*.py", "src/x/a.py", False),
        ("src/**/a.py", "src/a.py", True),
        ("src/**/a.py", "src/x/y/a.py", True),
        ("**/*.json", "schema.json", True),
        ("src/schema.json", "src/schema.json", True),
        ("src/schema.json", "src/schema_json", False),
        ("v?.txt", "v1.txt", True),
        ("v?.txt", "v/.txt", False),
        ("**/a.py", "a.py", True),
        ("src/**", "src", False),
        ("src/a**", "src/ab/c", False),  # `**` inside a name is `*`
        ("[a-c].py", "b.py", False),  # brackets and braces are literal, as the policy reads them
        ("[a-c].py", "[a-c].py", True),
        ("{a,b}.py", "a.py", False),
    ],
)
def test_matches(pattern: str, path: str, expected: bool) -> None:
    assert matches(pattern, path) is expected


# -- frozen_violations --------------------------------------------------------------------------------------------


def test_body_edit_of_a_frozen_symbol_is_no_violation(repo: Repo, commit: Commit, base: str) -> None:
    head = commit({"src/api.py": edited(('return {"text": text}', 'return {"text": text.strip()}'))})
    frozen = ["src/api.py:parse", "src/api.py:Store", "src/api.py:fetch"]
    assert frozen_violations(repo, base, head, frozen) == []


def test_reformatting_a_signature_is_no_violation(repo: Repo, commit: Commit, base: str) -> None:
    head = commit(
        {"src/api.py": edited(("(text: str, strict: bool = False)", "(\n    text:str,\n    strict:bool=False,\n)"))}
    )
    assert frozen_violations(repo, base, head, ["src/api.py:parse"]) == []


def test_added_parameter_names_both_signatures(repo: Repo, commit: Commit, base: str) -> None:
    head = commit({"src/api.py": edited(("strict: bool = False)", "strict: bool = False, limit: int = 0)"))})
    assert frozen_violations(repo, base, head, ["src/api.py:parse"]) == [
        "FROZEN_SIGNATURE src/api.py:parse: (text: str, strict: bool=False) -> dict "
        "became (text: str, strict: bool=False, limit: int=0) -> dict"
    ]


@pytest.mark.parametrize(
    ("old", "new", "before", "after"),
    [
        ("strict: bool = False)", "strict: bool = True)", "strict: bool=False", "strict: bool=True"),
        ("strict: bool = False)", "strict = False)", "strict: bool=False", "strict=False"),
        ("-> dict:", "-> list:", "-> dict", "-> list"),
        ("def parse(text: str, ", "def parse(text: str, /, ", "(text: str, strict", "(text: str, /, strict"),
        ("def parse(text: str, ", "def parse(*, text: str, ", "(text: str, strict", "(*, text: str, strict"),
        ("\ndef parse", "\n@functools.cache\ndef parse", "(text", "@functools.cache (text"),
        ("\ndef parse", "\nasync def parse", "(text", "async (text"),
    ],
)
def test_defaults_annotations_kinds_decorators_and_async_are_the_signature(
    repo: Repo, commit: Commit, base: str, old: str, new: str, before: str, after: str
) -> None:
    head = commit({"src/api.py": edited((old, new))})
    [violation] = frozen_violations(repo, base, head, ["src/api.py:parse"])
    was, became = violation.removeprefix("FROZEN_SIGNATURE src/api.py:parse: ").split(" became ")
    assert before in was and after in became


def test_removed_function_is_a_violation(repo: Repo, commit: Commit, base: str) -> None:
    head = commit({"src/api.py": edited(("async def fetch(url, *, timeout=10):", "async def get_url(url):"))})
    assert frozen_violations(repo, base, head, ["src/api.py:fetch"]) == [
        "FROZEN_SIGNATURE src/api.py:fetch: async (url, *, timeout=10) was removed"
    ]


def test_deleted_file_removes_its_frozen_symbols(repo: Repo, commit: Commit, base: str) -> None:
    head = commit({"src/api.py": None})
    assert frozen_violations(repo, base, head, ["src/api.py:Store"]) == [
        "FROZEN_SIGNATURE src/api.py:Store: class (Base, metaclass=Meta) was removed"
    ]


def test_changed_method_of_a_frozen_class_is_a_violation(repo: Repo, commit: Commit, base: str) -> None:
    head = commit({"src/api.py": edited(("def get(self, key: str)", "def get(self, key: bytes)"))})
    expected = ["FROZEN_SIGNATURE src/api.py:Store.get: (self, key: str) -> bytes became (self, key: bytes) -> bytes"]
    assert frozen_violations(repo, base, head, ["src/api.py:Store"]) == expected
    assert frozen_violations(repo, base, head, ["src/api.py:Store.get"]) == expected
    assert frozen_violations(repo, base, head, ["src/api.py:Store.__init__", "src/api.py:parse"]) == []


def test_frozen_class_bases_init_and_public_methods(repo: Repo, commit: Commit, base: str) -> None:
    head = commit(
        {
            "src/api.py": edited(
                ("class Store(Base, metaclass=Meta)", "class Store(Base)"),
                ("def __init__(self, path)", "def __init__(self, path, mode)"),
                ("def _cache(self)", "def _cache(self, size)"),
                ("    def get(", "    def put(self, value):\n        pass\n\n    def get("),
            )
        }
    )
    assert frozen_violations(repo, base, head, ["src/api.py:Store"]) == [
        "FROZEN_SIGNATURE src/api.py:Store: class (Base, metaclass=Meta) became class (Base)",
        "FROZEN_SIGNATURE src/api.py:Store.__init__: (self, path) became (self, path, mode)",
        "FROZEN_SIGNATURE src/api.py:Store.put: (self, value) was added",
    ]


def test_frozen_path_glob_changed_is_a_violation(repo: Repo, commit: Commit, base: str) -> None:
    head = commit({"api/v1/schema.json": '{"type": "object"}\n', "api/v2/new.json": "{}\n", "README.md": "hi\n"})
    assert frozen_violations(repo, base, head, ["api/v1/**", "README.txt"]) == ["FROZEN_PATH api/v1/schema.json"]
    assert frozen_violations(repo, base, head, ["api/**", "README.md"]) == [
        "FROZEN_PATH README.md",
        "FROZEN_PATH api/v1/schema.json",
        "FROZEN_PATH api/v2/new.json",
    ]


def test_file_that_no_longer_parses_is_a_violation(repo: Repo, commit: Commit, base: str) -> None:
    head = commit({"src/api.py": API + "\ndef broken(:\n"})
    [violation] = frozen_violations(repo, base, head, ["src/api.py:parse"])
    assert violation.startswith("FROZEN_SIGNATURE src/api.py:parse: src/api.py does not parse: ")
    assert "(line 22)" in violation


def test_symbol_missing_at_base_has_nothing_to_hold_to(repo: Repo, commit: Commit, base: str) -> None:
    head = commit({"src/api.py": API + "\ndef later(a):\n    pass\n"})
    assert frozen_violations(repo, base, head, ["src/api.py:later"]) == []


def test_only_the_attempts_own_changes_count_when_the_base_moved_on(repo: Repo, commit: Commit, base: str) -> None:
    repo.run("checkout", "-q", "-b", "task/T1")
    head = commit({"notes.txt": "work\n"})
    repo.run("checkout", "-q", "main")
    moved = commit({"api/v1/schema.json": "[]\n"})
    assert frozen_violations(repo, moved, head, ["api/**"]) == []


# -- frozen_problems ----------------------------------------------------------------------------------------------


def test_frozen_entries_that_name_something_are_fine(repo: Repo, base: str) -> None:
    frozen = ["src/api.py:parse", "src/api.py:fetch", "src/api.py:Store", "src/api.py:Store.get", "api/**", "*.md"]
    assert frozen_problems(repo, base, frozen) == []


def test_frozen_entries_that_name_nothing_are_problems(repo: Repo, base: str) -> None:
    short = repo.run("rev-parse", "--short", base).strip()
    frozen = ["src/api.py:nosuch", "src/api.py:Nope.get", "src/api.py:Store.nope", "src/gone.py:f", "docs/**"]
    assert frozen_problems(repo, "main", frozen) == [
        f"frozen 'src/api.py:nosuch': no function or class 'nosuch' in src/api.py at {short}",
        f"frozen 'src/api.py:Nope.get': no class 'Nope' in src/api.py at {short}",
        f"frozen 'src/api.py:Store.nope': no method 'nope' in class 'Store' in src/api.py at {short}",
        f"frozen 'src/gone.py:f': no file src/gone.py at {short}",
        f"frozen 'docs/**': matches no file at {short}",
    ]


def test_frozen_symbol_in_an_unparsable_file_is_a_problem(repo: Repo, commit: Commit, base: str) -> None:
    head = commit({"src/bad.py": "def f(:\n"})
    [problem] = frozen_problems(repo, head, ["src/bad.py:f"])
    assert problem.startswith("frozen 'src/bad.py:f': src/bad.py does not parse: ")
    assert "(line 1)" in problem


# -- drift --------------------------------------------------------------------------------------------------------


def test_drift_counts_lines_and_files(repo: Repo, commit: Commit, base: str) -> None:
    (repo.root / "logo.png").write_bytes(b"\x89PNG\x00\x01")
    head = commit({"README.md": "hello\nworld\nagain\n", "api/v1/schema.json": None})
    figures = drift(repo, base, head, None, ["logo.png"])
    assert figures == {
        "files_changed": 3,
        "files_outside_scope": 1,
        "outside_scope": ["logo.png"],
        "lines_added": 2,
        "lines_removed": 1,
        "churn_vs_previous": None,
        "public_symbols_removed": [],
        "public_symbols_renamed": [],
        "files_unparsable": [],
    }


def test_churn_vs_previous_attempt(repo: Repo, commit: Commit, base: str) -> None:
    previous = commit({"README.md": "one\ntwo\nthree\n"})  # the first attempt, saved
    repo.run("reset", "-q", "--hard", base)
    head = commit({"README.md": "one\ntwo\nfour\n", "extra.txt": "x\n"})
    figures = drift(repo, base, head, previous, [])
    assert (figures["lines_added"], figures["lines_removed"]) == (4, 1)
    assert figures["churn_vs_previous"] == 3  # three -> four (2), extra.txt (1)
    assert drift(repo, base, head, head, [])["churn_vs_previous"] == 0


def test_drift_detects_renames_and_removals(repo: Repo, commit: Commit, base: str) -> None:
    renamed = edited(
        ("def parse(text", "def parse_text(text"),
        ("async def fetch(url, *, timeout=10):", "async def fetch_all(urls):"),
        ("class Store(", "class Storage("),
    )
    head = commit({"src/api.py": renamed + "\ndef _private(a):\n    pass\n"})
    figures = drift(repo, base, head, None, [])
    assert figures["public_symbols_removed"] == ["src/api.py:fetch"]
    assert figures["public_symbols_renamed"] == [
        {"from": "src/api.py:Store", "to": "src/api.py:Storage"},
        {"from": "src/api.py:parse", "to": "src/api.py:parse_text"},
    ]


def test_drift_removals_in_deleted_files_and_unparsable_files(repo: Repo, commit: Commit, base: str) -> None:
    middle = commit({"src/other.py": "def helper(x):\n    return x\n\n\nclass _Hidden:\n    pass\n"})
    head = commit({"src/other.py": None, "src/api.py": "def parse(:\n"})
    figures = drift(repo, middle, head, None, [])
    assert figures["public_symbols_removed"] == ["src/other.py:helper"]
    assert figures["files_unparsable"] == ["src/api.py"]


# -- the shape of a merge ---------------------------------------------------------------------------------------


def test_diff_shape_counts_what_the_merge_adds_changes_and_deletes_since_the_fork(
    repo: Repo, commit: Commit, base: str
) -> None:
    """Measured from where the branch forked: what the base gained meanwhile is not the branch's; a rename is a
    delete plus an add; the share is of the files tracked at the fork."""
    repo.run("checkout", "-q", "-b", "task/T1")
    head = commit({"README.md": None, "api/v1/schema.json": '{"v": 2}\n', "src/new.py": "x = 1\ny = 2\n"})
    repo.run("checkout", "-q", "main")
    commit({"later.txt": "on main after the fork\n"})
    shape = diff_shape(repo, "main", head)
    assert shape == {
        "added": 1,
        "changed": 1,
        "deleted": 1,
        "tracked": 3,
        "deleted_share": 0.3333,
        "lines_added": 3,
        "lines_deleted": 2,
    }
