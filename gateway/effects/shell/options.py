"""getopt-style option parsing for the handlers.

    opts = parse_options(words, short="o", long="--output", known="--force")
    opts.values("-o", "--output")   # the words given to -o/--output (attached or the next word)
    opts.has("-f", "--force")
    opts.operands                   # what is left
    opts.doubts                     # option-looking words that are not literal: they could be any option

``short`` letters and ``long`` names (space-separated) take a value, ``optional`` letters take an
attached one; ``known`` lists long flags without a value (for abbreviations, which GNU getopt accepts).
``stop`` ends options at the first operand, as wrappers (``sudo -u x cmd -rf``) do.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gateway.effects.shell.words import Word, names


@dataclass
class Opts:
    flags: list[tuple[str, Word | None]] = field(default_factory=list)
    operands: list[Word] = field(default_factory=list)
    doubts: list[Word] = field(default_factory=list)

    def has(self, *wanted: str) -> bool:
        return any(name in wanted for name, _ in self.flags)

    def values(self, *wanted: str) -> list[Word]:
        return [value for name, value in self.flags if name in wanted and value is not None]

    def last(self, *wanted: str) -> Word | None:
        found = self.values(*wanted)
        return found[-1] if found else None


def parse_options(
    args: list[Word], short: str = "", long: str = "", known: str = "", optional: str = "", stop: bool = False
) -> Opts:
    with_value = names(long)
    every = with_value | names(known)
    opts = Opts()
    i = 0
    while i < len(args):
        word = args[i]
        value = word.value
        if value == "--" and word.literal:
            opts.operands.extend(args[i + 1 :])
            break
        if not value.startswith("-") or value == "-":
            if stop:
                opts.operands.extend(args[i:])
                break
            opts.operands.append(word)
            i += 1
        elif not word.literal:
            opts.doubts.append(word)
            i += 1
        elif value.startswith("--"):
            name, eq, _ = value.partition("=")
            canonical = canonical_option(name, every)
            if eq:
                opts.flags.append((canonical, word.tail(len(name) + 1)))
            elif canonical in with_value:
                opts.flags.append((canonical, args[i + 1] if i + 1 < len(args) else None))
                i += 1
            else:
                opts.flags.append((canonical, None))
            i += 1
        else:
            i += short_cluster(word, args, i, short, optional, opts)
    return opts


def short_cluster(word: Word, args: list[Word], i: int, short: str, optional: str, opts: Opts) -> int:
    """Parse ``-abc`` / ``-ofile`` / ``-o file`` into ``opts``; returns how many words it used."""
    value = word.value
    for j in range(1, len(value)):
        letter = value[j]
        if letter in short:
            if j + 1 < len(value):
                opts.flags.append(("-" + letter, word.tail(j + 1)))
                return 1
            opts.flags.append(("-" + letter, args[i + 1] if i + 1 < len(args) else None))
            return 2
        if letter in optional:
            opts.flags.append(("-" + letter, word.tail(j + 1) if j + 1 < len(value) else None))
            return 1
        opts.flags.append(("-" + letter, None))
    return 1


def canonical_option(name: str, known: frozenset[str]) -> str:
    """GNU getopt accepts any unambiguous prefix of a long option: ``--rec`` is ``--recursive``."""
    if name in known or len(name) < 4:
        return name
    matches = [n for n in known if n.startswith(name)]
    return matches[0] if len(matches) == 1 else name


def first_operand(args: list[Word], takes_value: frozenset[str] = frozenset()) -> int | None:
    """The index of the first word that is not an option (skipping the values of ``takes_value`` options).

    For subcommands after global options: ``npm --prefix x install`` -> 2 (``install``)."""
    i = 0
    while i < len(args):
        value = args[i].value
        if value == "--":
            return i + 1 if i + 1 < len(args) else None
        if not value.startswith("-") or value == "-":
            return i
        if "=" not in value and value in takes_value:
            i += 1
        i += 1
    return None
