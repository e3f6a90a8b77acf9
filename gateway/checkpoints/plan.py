"""What a rollback would do, worked out before anything is done: the files it writes, what it removes,
what it leaves alone and what it refuses.

The checkpoint's record (the paths it holds, read from the vault) says what to write. What to remove is
what exists now in the checkpoint's scope and is not in that record: for a git checkpoint the files git
lists as untracked against an index made from the record (never the user's index, which an agent can
fill with any path), for a copy checkpoint what is below the paths it copied. Something in a restored
path's way (a link or a file where a directory must be) is removed itself. A recorded path that would
leave the worktree or reach into .git is refused.

    plan = plan_files(WorkTree(root), record, present, exclude=["gateway.yaml"])
    plan.write, plan.remove, plan.left, plan.refused
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from gateway.checkpoints.tree import WorkTree, unsafe
from gateway.types import JSONObject

__all__ = ["DIRECTORY", "GITLINK", "FilesPlan", "plan_files"]

DIRECTORY, GITLINK = 0o040000, 0o160000  # a copy checkpoint's directories; a nested repository's commit


@dataclass
class FilesPlan:
    write: list[str] = field(default_factory=list)  # created or replaced, from the record
    remove: list[str] = field(default_factory=list)  # a file, a link, or a directory with all it holds
    left: list[JSONObject] = field(default_factory=list)  # {"path", "why"}: not touched
    refused: list[JSONObject] = field(default_factory=list)  # {"what", "why"}
    unchanged: int = 0


def plan_files(
    tree: WorkTree,
    record: dict[str, tuple[int, str]],
    present: Iterable[str],
    exclude: Iterable[str] = (),
) -> FilesPlan:
    """``record``: path -> (git mode, object id) as the checkpoint holds it; ``present``: the paths in the
    checkpoint's scope that exist now (a trailing "/" marks a nested repository)."""
    plan = FilesPlan()
    own = tuple(exclude)

    def left_out(rel: str) -> bool:  # the gateway's own (a file, or a directory with all below it)
        return any(rel == o or rel.startswith(f"{o}/") for o in own)

    recorded_dirs = {"/".join(p.split("/")[:i]) for p in record for i in range(1, p.count("/") + 1)}
    recorded_dirs |= {p for p, (mode, _) in record.items() if mode == DIRECTORY}
    removing: set[str] = set()
    for rel in sorted(set(present)):
        if rel.endswith("/"):
            plan.left.append({"path": rel, "why": "a nested repository: not part of the checkpoint"})
        elif unsafe(rel) is not None or left_out(rel) or rel in record or rel in recorded_dirs:
            continue
        elif not any(rel.startswith(f"{gone}/") for gone in removing):
            removing.add(rel)
    for rel, (mode, object_id) in sorted(record.items()):
        why = unsafe(rel)
        if why is not None:
            plan.refused.append({"what": f"path {rel!r}", "why": why})
            continue
        if left_out(rel):
            plan.left.append({"path": rel, "why": "the gateway's own configuration"})
            continue
        if mode == GITLINK:
            plan.left.append({"path": rel, "why": "a nested repository: not part of the checkpoint"})
            continue
        found = tree.look(rel)
        if found.blocked is not None:  # a link or a file where a directory must be: that entry goes
            removing.add(found.blocked)
            plan.write.append(rel)
        elif found.kind == "dir" and mode != DIRECTORY:  # a directory in a file's place goes, with all it holds
            removing.add(rel)
            plan.write.append(rel)
        elif mode == DIRECTORY:
            if found.kind != "dir":
                plan.write.append(rel)
            else:
                plan.unchanged += 1
        elif found.kind in ("file", "link") and found.mode == mode and tree.blob_id(rel) == object_id:
            plan.unchanged += 1
        else:
            plan.write.append(rel)
    plan.remove = sorted(r for r in removing if not any(r.startswith(f"{o}/") for o in removing))
    return plan
