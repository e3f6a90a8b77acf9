"""The helpers handlers state network facts with: the hosts a command contacts or serves on.

d.url(word, call)            # `curl https://x.io/f`: NetworkEffect(host="x.io", via="curl")
d.reach("pypi.org", "pip")   # a fixed host a program is known to contact
"""

from __future__ import annotations

from gateway.effects import network
from gateway.effects.shell.call import Call
from gateway.effects.shell.walk.state import WalkState
from gateway.effects.shell.words import Word, short
from gateway.types import NetworkEffect

__all__ = ["HostFacts"]


class HostFacts(WalkState):
    """Network facts: URLs, ``host:path`` remotes, bare hosts, fixed hosts, listening."""

    def url(self, word: Word, call: Call, default_scheme: str | None = "http") -> None:
        """A URL argument: the host it contacts, or the file a file:// URL reads."""
        if not word.literal:
            self.opaque(f"{call.name}: URL {short(word.raw)} is not literal ({word.why})")
            return
        value = word.value
        if default_scheme and "://" not in value and not value.lower().startswith("file:"):
            value = f"{default_scheme}://{value}"
        found = network.describe_url(value, self.ws, via=call.name)
        self.reads.extend(found.reads)
        call.facts.reads.extend(found.reads)
        self.network.extend(found.network)
        self.opaques.extend(found.opaque)

    def remote(self, word: Word, call: Call) -> bool:
        """``[user@]host:path`` or a URL names the remote side: record its host. False for a local path."""
        if not word.literal:
            return False
        value = word.value
        if "://" in value:
            self.url(word, call, default_scheme=None)
            return True
        if value.startswith(("/", "./", "../", "~")) or ":" not in value:
            return False
        host = value.split(":", 1)[0].rpartition("@")[2]
        if "/" in host or not host:
            return False
        self.host(host.strip("[]"), call.name)
        return True

    def host_word(self, word: Word, call: Call) -> None:
        """A bare host argument (``ssh user@host``, ``nc host``)."""
        if not word.literal:
            self.opaque(f"{call.name}: host {short(word.raw)} is not literal ({word.why})")
        elif "://" in word.value:
            self.url(word, call, default_scheme=None)
        else:
            self.host(word.value.rpartition("@")[2].strip("[]"), call.name)

    def host(self, host: str, via: str) -> None:
        host = host.lower().rstrip(".")
        why = network.check_host(host)
        if why:
            self.opaque(f"{via}: host {short(host)}: {why}")
        if not why or not host.isascii():  # an IDN host is still a fact, next to the doubt
            self.network.append(NetworkEffect(host=host, via=via))

    def reach(self, host: str, via: str) -> None:
        """A fixed host a program is known to contact (a registry, a mirror, a named git remote)."""
        self.network.append(NetworkEffect(host=host, via=via))

    def listen(self, where: str, call: Call) -> None:
        """The command serves on the network (``nc -l 8080``, ``python -m http.server``)."""
        self.reach(f"listen:{where}", call.name)
