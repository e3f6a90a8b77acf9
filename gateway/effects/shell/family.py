"""A program family: everything the analysis knows about a group of programs, declared in one object.

Each family module (files.py, git.py, network.py, ...) ends with one ``FAMILY = Family(...)``: the handler of
each program it follows, and which of its programs print downloaded bytes (fetchers) or decoded ones
(decoders), read shell program text (shells), raise privileges, run other programs the analysis does not
unwrap, and which classes the policy judges them by. ``registry.py`` collects the families; the walker asks
the registry and knows no program by name.

    FAMILY = Family(
        name="network",
        handlers={"curl": _curl, "wget": _wget},
        fetchers=names("curl wget"),
        classes={"dangerous_programs": names("...")},
    )
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from gateway.effects.shell.call import Handler
from gateway.effects.shell.words import Word

__all__ = ["PROGRAM_CLASSES", "Decodes", "EnvCheck", "Family", "always"]

# argv after the program -> does this command print decoded bytes (`base64 -d`, `gzip -d`)?
Decodes = Callable[[list[str]], bool]
# NAME, value given to a command -> why it changes what the command runs or where it writes, or None
EnvCheck = Callable[[str, Word], str | None]

# The program classes the policy judges commands by (policies/lib/programs.rego is generated from the
# families' ``classes``): class name -> what membership means.
PROGRAM_CLASSES: dict[str, str] = {
    "read_only_programs": "programs that only read (their writes show up as redirections, tee, find -delete)",
    "described_programs": "programs whose every file effect the analysis states: they take the tier of those effects",
    "always_ask_interpreters": "interpreters and editors whose program text is always asked about",
    "dangerous_programs": "programs whose misuse is hard to undo or reaches beyond the workspace",
    "mode_programs": "programs that change file modes or owners",
    "package_config_programs": "package managers whose own configuration lives in the user's home",
    "cd_programs": "programs that change the working directory of the commands after them",
    "link_programs": "programs that make links (a link's target is reached through it)",
}


def always(args: list[str]) -> bool:
    """A decoder whatever its options (gunzip, zcat, uudecode)."""
    return True


@dataclass(frozen=True)
class Family:
    """What the analysis knows about one family of programs.

    ``handlers``: program name -> the handler that states its facts (a program has one handler in all the
    families). ``fetchers``: programs whose output is downloaded (or remote) bytes. ``decoders``: program
    -> when its output is decoded bytes that hide what they are. ``shells``: programs whose program text
    from a heredoc is a shell script (parsed again). ``privileged``: programs that raise privileges.
    ``opaque_runners``: programs that run another command this analysis does not unwrap. ``versioned``:
    names also written with a version (``python3.11``); ``renamed``: a spelling -> the program it is
    (``nodejs`` -> ``node``). ``guarded``: names a shell function must not take over, beyond the handled
    ones. ``env_checks``: variables that change what these programs run. ``classes``: policy class ->
    its programs in this family (see ``PROGRAM_CLASSES``); ``publishes``: program -> the subcommands that
    publish to a registry."""

    name: str
    handlers: Mapping[str, Handler] = field(default_factory=dict)
    fetchers: frozenset[str] = frozenset()
    decoders: Mapping[str, Decodes] = field(default_factory=dict)
    shells: frozenset[str] = frozenset()
    privileged: frozenset[str] = frozenset()
    opaque_runners: frozenset[str] = frozenset()
    versioned: frozenset[str] = frozenset()
    renamed: Mapping[str, str] = field(default_factory=dict)
    guarded: frozenset[str] = frozenset()
    env_checks: tuple[EnvCheck, ...] = ()
    classes: Mapping[str, frozenset[str]] = field(default_factory=dict)
    publishes: Mapping[str, frozenset[str]] = field(default_factory=dict)
