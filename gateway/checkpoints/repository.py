"""What a command in a repository's own checkout changes besides files: HEAD, refs, the index, stashes.

Recorded when a checkpoint of the workspace is taken, and put back by rollback. Every value comes from
git's own listing (``for-each-ref``, the stash's reflog) or from the HEAD file read without following a
link; names are checked again before they are used. Putting them back writes inside the repository
only: HEAD through a walk that follows no link, refs, the stash and the index by git behind the
sandbox's wall, where only the repository is writable (its config and hooks read-only) and the state dir
is not there.

    listing = list_refs(git)                                      # refs, commits they reach, checkpoint refs
    state = record(git, repository, listing)                       # {"head", "detached", "index", "refs", "stash"}
    plan = plan_refs(git, repository, state)                       # what would move; refused names
    restore_refs(walled, repository, state, plan)
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from gateway.checkpoints.tree import LINK, REGULAR, WorkTree
from gateway.repo import Repo
from gateway.types import JSONObject

__all__ = [
    "CHECKPOINT_REFS",
    "GATEWAY_REFS",
    "Listing",
    "RefsPlan",
    "bad_ref_name",
    "list_refs",
    "plan_refs",
    "read_head",
    "record",
    "restore_refs",
]

CHECKPOINT_REFS = "refs/gateway/checkpoints/"
# Refs a rollback leaves alone: the gateway's own (checkpoints, task branches other agents work on).
GATEWAY_REFS = ("refs/gateway/", "refs/heads/task/")
OBJECT_ID = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
FORMAT = "--format=%(objectname)%00%(objecttype)%00%(*objectname)%00%(*objecttype)%00%(committerdate:unix)%00%(refname)"


@dataclass
class Listing:
    tips: dict[str, str] = field(default_factory=dict)  # every ref listed
    refs: dict[str, str] = field(default_factory=dict)  # every ref but the gateway's and the stash
    commits: list[str] = field(default_factory=list)  # the commits they name (a tag: the commit it points at)
    checkpoints: list[tuple[int, str]] = field(default_factory=list)  # the gateway's checkpoint refs, newest first
    stash: bool = False


def list_refs(git: Repo, *patterns: str, typed: bool = True, behind: Path | None = None) -> Listing:
    """The repository's refs; ``typed`` False reads no object (a repository whose objects an agent
    destroyed still lists its refs), so ``commits`` and the checkpoint refs' times stay empty. ``behind``:
    the repository dir, whose refs git found through a link an agent planted (``refs/tags`` made a link to
    the state dir) are no refs of its own: left out, neither recorded nor deleted."""
    found = Listing()
    fields = FORMAT if typed else "--format=%(objectname)%00%00%00%00%00%(refname)"
    tree = WorkTree(behind) if behind is not None else None
    for line in git.run("for-each-ref", fields, *patterns, errors="surrogateescape").splitlines():
        object_id, kind, peeled, peeled_kind, when, name = line.split("\0", 5)
        if tree is not None and _behind_a_link(tree, name):
            continue
        found.tips[name] = object_id
        if name.startswith(CHECKPOINT_REFS):
            found.checkpoints.append((int(when or 0), name))
        elif name == "refs/stash":
            found.stash = True
        elif not name.startswith(GATEWAY_REFS):
            found.refs[name] = object_id
            if kind == "commit" or peeled_kind == "commit":
                found.commits.append(object_id if kind == "commit" else peeled)
    found.checkpoints.sort(reverse=True)
    return found


def _behind_a_link(tree: WorkTree, name: str) -> bool:
    found = tree.look(name)  # missing: a packed ref, which is the repository's own
    return found.blocked is not None or found.kind == "link"


def read_head(repository: Path) -> tuple[str | None, str | None]:
    """(the branch HEAD names, the commit a detached HEAD holds), read from the file without following a
    link; (None, None) when it is neither (an agent wrote something else there)."""
    found = WorkTree(repository).read("HEAD", limit=4096)
    if found is None or found[1] == LINK:
        return None, None
    text = found[0].decode(errors="replace").strip()
    if text.startswith("ref: ") and bad_ref_name(text[5:]) is None:
        return text[5:], None
    return (None, text) if OBJECT_ID.fullmatch(text) else (None, None)


def record(git: Repo, repository: Path, listing: Listing) -> JSONObject:
    """HEAD, the index's tree, every ref but the gateway's, and the stash list (newest first)."""
    head, detached = read_head(repository)
    # fails with unmerged (or planted, unreadable) entries: then the index is not restored
    index = git.run("write-tree", check=False, env={"GIT_INDEX_FILE": str(repository / "index")}).strip()
    stash = []
    if listing.stash:
        out = git.run("log", "-g", "--format=%H%x00%gs", "refs/stash", check=False, errors="surrogateescape")
        for line in out.splitlines():
            sha, _, message = line.partition("\0")
            stash.append({"commit": sha, "message": message})
    return {"head": head, "detached": detached, "index": index or None, "refs": listing.refs, "stash": stash}


def keep_parents(state: JSONObject, listing: Listing) -> list[str]:
    """Every commit a rollback may restore refs to: one commit with them all as parents keeps them (and,
    pushed to the vault, copies them there)."""
    return list(dict.fromkeys([*listing.commits, *(entry["commit"] for entry in state.get("stash") or [])]))


def bad_ref_name(name: str) -> str | None:
    """Why ``name`` is no ref name a restore writes (git's own rules, and only under refs/), or None."""
    if not name.startswith("refs/") or name.endswith(("/", ".", ".lock")):
        return "not a ref name under refs/"
    if any(c in name for c in " ~^:?*[\\\x7f") or any(ord(c) < 0x20 for c in name):
        return "a character git does not allow in a ref name"
    if ".." in name or "//" in name or "@{" in name or "/." in name:
        return "a sequence git does not allow in a ref name"
    return None


@dataclass
class RefsPlan:
    move: dict[str, list[str | None]] = field(default_factory=dict)  # name: [now, then]
    delete: list[str] = field(default_factory=list)
    head: list[str | None] | None = None  # [now, then] when HEAD changes
    stashes: int = 0
    index: str | None = None
    missing: list[str] = field(default_factory=list)  # objects the repository no longer has
    refused: list[JSONObject] = field(default_factory=list)

    def summary(self) -> JSONObject:
        return {
            "move": self.move,
            "delete": self.delete,
            "head": self.head,
            "stashes": self.stashes,
            "index": bool(self.index),
        }


def plan_refs(git: Repo, repository: Path, state: JSONObject) -> RefsPlan:
    """What putting ``state`` back would change, against the repository as it is now."""
    now = list_refs(git, typed=False, behind=repository)
    recorded: dict[str, str] = state.get("refs") or {}
    plan = RefsPlan(stashes=len(state.get("stash") or []), index=state.get("index"))
    for name in sorted(set(recorded) | set(now.refs)):
        why = bad_ref_name(name)
        if why is not None:
            plan.refused.append({"what": f"ref {name!r}", "why": why})
        elif name not in recorded:
            plan.delete.append(name)
        elif now.refs.get(name) != recorded[name]:
            plan.move[name] = [now.refs.get(name), recorded[name]]
    for name, value in ((n, v) for n, v in recorded.items() if not OBJECT_ID.fullmatch(v)):
        plan.refused.append({"what": f"ref {name!r}", "why": f"recorded value {value!r} is no object id"})
    then = (state.get("head") and f"ref: {state['head']}") or state.get("detached")
    if then:
        head, detached = read_head(repository)
        current = (head and f"ref: {head}") or detached
        if current != then:
            plan.head = [current, then]
    needed = [
        *recorded.values(),
        *(e["commit"] for e in state.get("stash") or []),
        *([plan.index] if plan.index else []),
    ]
    out = git.run("cat-file", "--batch-check=%(objectname)", input="".join(f"{sha}\n" for sha in needed), check=False)
    plan.missing = [line.split()[0] for line in out.splitlines() if line.endswith(" missing")]
    return plan


def restore_refs(walled: Repo, repository: Path, state: JSONObject, plan: RefsPlan) -> None:
    """Put HEAD, refs, the stash list and the index back as ``plan`` says (``walled``: git behind the wall,
    with the repository writable). The objects they name must be there (fetched from the vault first)."""
    if plan.head is not None:
        WorkTree(repository).put("HEAD", f"{plan.head[1]}\n".encode(), REGULAR)
    commands = [f"update {name} {then}" for name, (_, then) in plan.move.items()]
    commands += [f"delete {name}" for name in plan.delete]
    if commands:
        walled.run("update-ref", "--stdin", input="\n".join(commands) + "\n")
    walled.run("update-ref", "-d", "refs/stash", check=False)
    for entry in reversed(state.get("stash") or []):  # oldest first, so the newest ends on top
        walled.run("update-ref", "--create-reflog", "-m", entry["message"], "refs/stash", entry["commit"])
    if plan.index:
        walled.run("read-tree", plan.index, env={"GIT_INDEX_FILE": str(repository / "index")})
