"""Network clients: curl, wget, httpie, ssh, scp, sftp, nc, socat, telnet, ping, dig, openssl, ...

Each states the hosts it contacts (``Effects.network``), the files it reads (uploads, keys, configs)
and writes (downloads, logs), and the local programs its options run (ProxyCommand, nc -e).

    FAMILY.handlers["curl"](d, call)   # `curl -o out.bin https://x.io/f`: contacts x.io, creates out.bin
"""

from __future__ import annotations

import re
from dataclasses import replace
from itertools import pairwise

from gateway.effects.shell.call import Call, Handler
from gateway.effects.shell.family import Family
from gateway.effects.shell.options import Opts
from gateway.effects.shell.walker import Describer
from gateway.effects.shell.words import Word, inside, names, short

__all__ = ["FAMILY"]

_CURL_LONG = (
    "--url --output --data --data-raw --data-binary --data-ascii --data-urlencode --json --form --form-string "
    "--header --user --user-agent --referer --cookie --cookie-jar --request --upload-file --config --proxy "
    "--proxy-user --max-time --connect-timeout --retry --retry-delay --retry-max-time --range --write-out "
    "--dump-header --cert --key --cacert --capath --output-dir --resolve --connect-to --interface --limit-rate "
    "--max-filesize --oauth2-bearer --trace --trace-ascii --stderr --unix-socket --abstract-unix-socket --doh-url "
    "--dns-servers --preproxy --socks4 --socks4a --socks5 --socks5-hostname --proto --proto-redir --variable "
    "--etag-save --etag-compare --hsts --alt-svc --netrc-file --aws-sigv4 --ciphers --local-port --continue-at "
    "--speed-time --speed-limit --time-cond --telnet-option --quote --ftp-port --mail-from --mail-rcpt "
    "--max-redirs --parallel-max --expect100-timeout --keepalive-time --pinnedpubkey --tls-max"
)


def _curl(d: Describer, call: Call) -> None:
    opts = d.options(call, "AbcCdDeEFHKmoPQrtTuUwxXyYz", _CURL_LONG, known="--remote-name --next")
    urls = [*opts.operands, *opts.values("--url")]
    for word in urls:
        d.url(word, call)
    outputs = ("-o", "--output", "-c", "--cookie-jar", "-D", "--dump-header", "--trace", "--trace-ascii", "--stderr")
    for word in opts.values(*outputs, "--etag-save"):
        d.write(word, call)
    if opts.has("-O", "--remote-name"):
        for word in urls:
            name = word.value.split("?", 1)[0].split("://", 1)[-1].rstrip("/").rsplit("/", 1)
            if word.literal and len(name) == 2 and name[1]:
                d.write(Word.of(name[1]), call)
    for word in opts.values("-T", "--upload-file", "--netrc-file"):
        d.read(word, call)
    for word in opts.values("-d", "--data", "--data-binary", "--data-ascii", "--data-urlencode", "--json"):
        _at_file(d, call, word)
    for word in opts.values("-F", "--form"):
        _at_file(d, call, replace(word, value=word.value.partition("=")[2]))
    for word in opts.values("-K", "--config"):
        d.read(word, call)
        d.opaque(f"curl config file {short(word.raw)} may name more URLs and options")
    for word in opts.values("-x", "--proxy", "--preproxy", "--socks4", "--socks4a", "--socks5", "--socks5-hostname"):
        d.url(word, call)
    if opts.values("--resolve", "--connect-to", "--dns-servers", "--doh-url"):
        d.opaque("curl maps host names to other addresses (--resolve/--connect-to/--dns-servers/--doh-url)")
    if opts.values("--variable") or any(name.startswith("--expand-") for name, _ in opts.flags):
        d.opaque("curl variable expansion may read files or the environment")


def _at_file(d: Describer, call: Call, word: Word) -> None:
    """curl -d @file and -F name=@file / name=<file: the file is read (and sent)."""
    value = word.value
    if value.startswith(("@", "<")) and value[1:] not in ("-", ""):
        d.read(replace(word, value=value[1:].split(";", 1)[0]), call)


_WGET_LONG = (
    "--output-document --output-file --append-output --directory-prefix --input-file --base --execute --tries "
    "--timeout --wait --quota --user-agent --level --accept --reject --domains --exclude-directories "
    "--include-directories --header --post-data --post-file --body-data --body-file --method --user --password "
    "--http-user --http-password --load-cookies --save-cookies --ca-certificate --certificate --private-key "
    "--bind-address --limit-rate --referer --config --proxy-user --proxy-password --default-page --progress"
)


def _wget(d: Describer, call: Call) -> None:
    opts = d.options(call, "OoaPiBetTwQUlARDXIY", _WGET_LONG, known="--recursive --mirror")
    for word in opts.operands:
        d.url(word, call)
    documents = opts.values("-O", "--output-document")
    for word in documents + opts.values("-o", "--output-file", "-a", "--append-output", "--save-cookies"):
        d.write(word, call)
    for word in opts.values("-i", "--input-file"):
        d.read(word, call)
        d.opaque(f"wget reads the URLs to fetch from {short(word.raw)}")
    for word in opts.values("--post-file", "--body-file", "--load-cookies"):
        d.read(word, call)
    for word in opts.values("--config"):
        d.read(word, call)
        d.opaque("wget --config may name more URLs and options")
    prefix = opts.last("-P", "--directory-prefix") or Word.of(".")
    if opts.has("-r", "--recursive", "-m", "--mirror"):
        d.write(prefix, call, modify=True)
    elif not documents:
        for word in opts.operands if all(w.literal for w in opts.operands) else []:
            name = word.value.split("?", 1)[0].split("://", 1)[-1].rstrip("/").rsplit("/", 1)
            d.write(inside(prefix, Word.of(name[1] if len(name) == 2 and name[1] else "index.html")), call)


def _httpie(d: Describer, call: Call) -> None:
    opts = d.options(
        call,
        "aAospv",
        "--auth --auth-type --output --session --session-read-only --proxy --cert --cert-key --verify --timeout "
        "--max-redirects --style --print --pretty --format-options",
    )
    operands = list(opts.operands)
    if operands and re.match(r"^[A-Z]+$", operands[0].value):
        operands.pop(0)  # the method
    if operands:
        url = operands.pop(0)
        if url.literal and url.value.startswith(":"):
            url = replace(url, value="localhost" + url.value)  # `http :8000/x`
        d.url(url, call, default_scheme="https" if call.name in ("https", "xhs") else "http")
    for item in operands:
        match = re.match(r"^[^=:@]*(?:=@|:=@|@)(.+)$", item.value)
        if match:
            d.read(replace(item, value=match.group(1)), call)
    for word in opts.values("-o", "--output", "--session"):
        d.write(word, call)
    for word in opts.values("--proxy"):
        d.url(replace(word, value=word.value.split(":", 1)[-1]) if "://" not in word.value else word, call)


def _ssh_options(d: Describer, call: Call, opts: Opts) -> None:
    """Options ssh, scp and sftp share: keys read, jump hosts contacted, local commands run."""
    for word in opts.values("-i"):
        d.read(word, call)
    for word in opts.values("-F"):
        d.read(word, call)
        d.opaque(f"{call.name} -F config file may run local commands (ProxyCommand)")
    for word in opts.values("-J"):
        for hop in word.value.split(","):
            d.host_word(replace(word, value=hop.split(":", 1)[0]), call)
    for word in opts.values("-o"):
        key, _, value = word.value.replace(" ", "=", 1).partition("=")
        if key.lower() in ("proxycommand", "localcommand", "permitlocalcommand", "knownhostscommand", "match"):
            d.opaque(f"{call.name} -o {key} runs a local command")
        elif key.lower() == "proxyjump":
            d.host_word(replace(word, value=value.split(":", 1)[0]), call)
    for word in opts.values("-S") if call.name != "ssh" else []:
        d.opaque(f"{call.name} -S runs the program {short(word.raw)}")
    for word in opts.values("-E"):
        d.write(word, call)


def _ssh(d: Describer, call: Call) -> None:
    opts = d.options(call, "BbcDEeFIiJLlmOoPpQRSWw", stop=True)
    _ssh_options(d, call, opts)
    for word in opts.values("-W"):
        d.host_word(replace(word, value=word.value.rsplit(":", 1)[0]), call)
    if opts.operands:
        d.host_word(opts.operands[0], call)  # the rest is a command that runs on the remote side


def _scp(d: Describer, call: Call) -> None:
    opts = d.options(call, "cFiJloPSD")
    _ssh_options(d, call, opts)
    operands = opts.operands
    for i, word in enumerate(operands):
        if d.remote(word, call):
            continue
        if i == len(operands) - 1 and len(operands) > 1:
            d.write(word, call)
        else:
            d.read(word, call)


def _sftp(d: Describer, call: Call) -> None:
    opts = d.options(call, "BbcDFiJloPRsS")
    _ssh_options(d, call, opts)
    for word in opts.values("-b"):
        d.read(word, call)
        d.opaque("sftp -b batch file may transfer files and run local commands")
    if opts.values("-s", "-D"):
        d.opaque("sftp -s/-D runs another server program")
    if opts.operands:
        target = opts.operands[0]
        d.host_word(target if "://" in target.value else replace(target, value=target.value.split(":", 1)[0]), call)
    if call.ctx.stdin in ("pipe", "heredoc", "herestring", "socket"):
        d.opaque(f"{call.name} reads commands (which may run local programs) from stdin")


def _netcat(d: Describer, call: Call) -> None:
    opts = d.options(
        call,
        "pswiqxXOPITVecmgG",
        "--exec --sh-exec --lua-exec --proxy --proxy-type --proxy-auth --source --source-port --wait --idle-timeout "
        "--max-conns --allow --deny --allowfile --denyfile --output",
        known="--listen --keep-open --udp --unixsock",
    )
    for word in opts.values("-e", "-c", "--exec", "--sh-exec", "--lua-exec"):
        d.execute(call, word.value, f"{call.name} runs a program for the connection")
    for word in opts.values("-x", "--proxy"):
        d.host_word(replace(word, value=word.value.rsplit(":", 1)[0]), call)
    for word in opts.values("--output"):
        d.write(word, call)
    if opts.has("-l", "--listen"):
        port = (opts.values("-p") or opts.operands[-1:] or [Word.of("?")])[-1]
        d.listen(port.value, call)
    elif opts.operands:
        d.host_word(opts.operands[0], call)


def _first_host(short: str = "", long: str = "") -> Handler:
    """telnet, ping, traceroute, ftp, whois: the first operand is the host."""

    def handler(d: Describer, call: Call) -> None:
        opts = d.options(call, short, long)
        if opts.operands:
            d.host_word(opts.operands[0], call)
        for word in opts.values("-h") if call.name == "whois" else []:
            d.host_word(word, call)
        if call.name in ("ftp", "lftp", "tftp") and call.ctx.stdin in ("pipe", "heredoc", "herestring"):
            d.opaque(f"{call.name} reads commands (which may run local programs) from stdin")
        if call.name == "lftp" and opts.values("-e", "-c", "-f"):
            d.opaque("lftp runs command text (-e/-c/-f)")

    return handler


_DNS_WORDS = names("a aaaa any mx ns txt soa cname ptr srv caa in ch hs axfr ixfr")


def _dns(d: Describer, call: Call) -> None:
    """dig/nslookup/host: the resolver (@server) and the name asked about (a name can carry data out)."""
    opts = d.options(call, "bcfkpqtxyWRi" if call.name == "dig" else "tcWRNm")
    for word in opts.values("-f", "-k"):
        d.read(word, call)
    for word in opts.values("-q", "-x") + opts.operands:
        if not (word.value.startswith("+") or word.value.lower() in _DNS_WORDS):
            d.host_word(replace(word, value=word.value.lstrip("@")), call)


_SOCAT_HOSTS = names("TCP TCP4 TCP6 UDP UDP4 UDP6 SCTP OPENSSL SSL SOCKS4 SOCKS4A PROXY")
_SOCAT_FILES = names("FILE OPEN CREATE CREAT GOPEN")
_SOCAT_QUIET = names("STDIO STDIN STDOUT STDERR - PIPE")


def _socat(d: Describer, call: Call) -> None:
    for word in d.options(call, "TtbL").operands:
        kind, _, rest = word.value.partition(":")
        kind = kind.upper().split(",")[0]
        where = rest.split(",")[0].split(":")[0]
        if not word.literal:
            d.opaque(f"socat address {short(word.raw)} is not literal")
        elif kind in ("EXEC", "SYSTEM"):
            d.execute(call, rest, f"socat {kind} runs a program")
        elif kind.endswith(("-LISTEN", "-L")):
            d.listen(where, call)
        elif kind in _SOCAT_HOSTS:
            d.host_word(Word.of(where), call)
        elif kind in _SOCAT_FILES:
            d.write(Word.of(where), call, modify=True)
        elif kind not in _SOCAT_QUIET:
            d.opaque(f"socat address type {kind!r} is not analysed")


def _openssl(d: Describer, call: Call) -> None:
    args = call.args
    for word, value in pairwise(args):
        if word.value == "-in":
            d.read(value, call)
        elif word.value == "-out":
            d.write(value, call)
        elif word.value == "-connect":
            d.host_word(replace(value, value=value.value.rsplit(":", 1)[0]), call)


HANDLERS: dict[str, Handler] = {
    "curl": _curl,
    "wget": _wget,
    **{name: _httpie for name in ("http", "https", "xh", "xhs")},
    "ssh": _ssh,
    "scp": _scp,
    "sftp": _sftp,
    **{name: _netcat for name in ("nc", "ncat", "netcat")},
    "socat": _socat,
    "telnet": _first_host("lneXkb"),
    "ping": _first_host("cistWwIlpQSMFmT"),
    "ping6": _first_host("cistWwIlpQSMFmT"),
    "traceroute": _first_host("fgimNptqswzA"),
    "tracepath": _first_host("lmp"),
    "mtr": _first_host("acfimpsBGQTUIZ"),
    "ftp": _first_host("P"),
    "tftp": _first_host("m"),
    "lftp": _first_host("efcup"),
    "whois": _first_host("hpiTsgS"),
    **{name: _dns for name in ("dig", "nslookup", "host")},
    "openssl": _openssl,
}

FAMILY = Family(
    name="network",
    handlers=HANDLERS,
    # programs whose output is downloaded (or remote) bytes
    fetchers=names(
        "curl wget fetch nc ncat netcat socat telnet http https xh xhs aria2c lynx w3m links ftp tftp lftp ssh"
    ),
)
