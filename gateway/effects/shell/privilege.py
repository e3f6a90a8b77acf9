"""Privileged programs: sudo, sudoedit, su, doas, pkexec, run0. Each raises privileges (``Effects.privileged``);
the command it runs is listed again (via "wrapper:<name>") and described like any other, under sudo (so a
package it installs is global whatever the manager).

    FAMILY.handlers["sudo"](d, call)   # `sudo -u bob rm x`: lists rm (via wrapper:sudo), privileged
"""

from __future__ import annotations

from gateway.effects.shell.call import Call
from gateway.effects.shell.family import Family
from gateway.effects.shell.walker import Describer
from gateway.effects.shell.words import names
from gateway.effects.shell.wrappers import wrapper

__all__ = ["FAMILY"]


def _sudo(d: Describer, call: Call) -> None:
    opts = d.options(
        call,
        "CDghpRrtTUu",
        "--close-from --chdir --group --host --prompt --chroot --role --type --user --other-user --command-timeout",
        known="--edit --login --shell --list --validate --preserve-env",
        stop=True,
    )
    if opts.has("-e", "--edit") or call.name == "sudoedit":
        for word in opts.operands:
            d.write(word, call, modify=True)
        return
    if opts.values("-R", "--chroot"):
        d.opaque("sudo --chroot runs the command in another root directory")
    d.inner(opts.operands, call, cwd=opts.last("-D", "--chdir"))


def _su(d: Describer, call: Call) -> None:
    opts = d.options(call, "cCsgGw", "--command --session-command --shell --group --supp-group")
    commands = opts.values("-c", "--command", "--session-command", "-C")
    for word in commands:
        d.run_text(word, call)
    if not commands and len([w for w in opts.operands if w.value != "-"]) > 1:
        d.opaque("su passes extra arguments to a shell")


FAMILY = Family(
    name="privilege",
    handlers={
        "sudo": _sudo,
        "sudoedit": _sudo,
        "doas": wrapper("Cu"),
        "pkexec": wrapper("", "--user", "--disable-internal-agent --keep-cwd"),
        "run0": wrapper(
            "ugD", "--user --group --nice --chdir --setenv --property --unit --description --slice --machine"
        ),
        "su": _su,
    },
    privileged=names("sudo su doas pkexec run0 sudoedit"),
)
