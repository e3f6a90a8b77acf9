# The gateway as a service: streamable HTTP on :8787, the workspace mounted at /workspace.
#   docker build -t mcp-policy-gateway .
#   docker run -d --name gateway -p 127.0.0.1:8787:8787 -v "$PWD:/workspace" -v gateway-state:/var/lib/gateway \
#       --user "$(id -u):$(id -g)" --security-opt seccomp=unconfined --security-opt systempaths=unconfined \
#       mcp-policy-gateway
#   podman run ... --user "$(id -u):$(id -g)" --userns=keep-id --security-opt unmask=/proc/* mcp-policy-gateway
#   docker exec --user "$(id -u):$(id -g)" gateway gateway token issue --role developer --agent claude-code   # a credential for an agent
# On first start it runs `gateway init` in /workspace: gateway.yaml there, the state (keys, store, roles,
# policies) in /var/lib/gateway, outside the workspace (keep it on a volume). Behind a proxy or a DNS name,
# list the Host values clients use in gateway.yaml (`allowed_hosts: ["gateway.internal:8787"]`): requests
# with any other Host header are refused (DNS-rebinding protection).
# The image runs as uid 10001, but a bind-mounted workspace belongs to the host user: to let the gateway write
# gateway.yaml and task worktrees there, run as that user, any uid works:
#   docker run ... --user "$(id -u):$(id -g)" -v "$PWD:/workspace" -v gateway-state:/var/lib/gateway ...
# /var/lib/gateway (the state: XDG_STATE_HOME) and /var/lib/gateway/home (HOME: npm's cache, git) are
# world-writable with the sticky bit, like /tmp: whichever uid starts first makes its own owner-only state dir
# there. Use one uid per state volume (a volume first used as 10001 needs `chown -R` to move to another uid).
# Commands run in bubblewrap, which needs a user namespace and a /proc of its own (docs/container.md has the
# measured matrix): Docker's default seccomp profile refuses the first (seccomp=unconfined), and both Docker and
# podman mask paths in /proc, which makes the kernel refuse the second (docker: systempaths=unconfined; podman:
# unmask=/proc/*, measured enough under rootless podman, whose default seccomp profile allows user namespaces).
# The entrypoint (gateway/entrypoint.py) checks this before serving and, if the sandbox cannot start, names
# what is missing and the option that fixes it, and exits 1. Or set `sandbox: {mode: off}` in gateway.yaml
# and accept unconfined commands (docs/sandbox.md).

# Pinned: Python patch release and Debian release. For reproducible builds pin the digest as well
# (`docker buildx imagetools inspect python:3.11.11-slim-bookworm` prints it).
FROM python:3.11.11-slim-bookworm

# safe.directory: the workspace is a bind mount owned by the host user; git runs as `gateway` in it.
RUN apt-get update \
    && apt-get install -y --no-install-recommends git nodejs npm bubblewrap util-linux \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --create-home --uid 10001 gateway \
    && git config --system --add safe.directory /workspace

WORKDIR /opt/gateway
COPY pyproject.toml README.md ./
COPY gateway ./gateway
COPY policies ./policies
COPY roles ./roles
RUN pip install --no-cache-dir .

# pip installs the default roles and policies under share/mcp-policy-gateway, where `gateway init` finds them.
ENV PYTHONUNBUFFERED=1 XDG_STATE_HOME=/var/lib/gateway HOME=/var/lib/gateway/home
RUN mkdir -p /var/lib/gateway/home && chown gateway /var/lib/gateway /var/lib/gateway/home \
    && chmod 1777 /var/lib/gateway /var/lib/gateway/home
VOLUME /var/lib/gateway
USER gateway
WORKDIR /workspace
EXPOSE 8787
# /readyz needs no credential: 503 naming the dependency (policy, store, sandbox) that does not work; the image
# has no curl.
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
    CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8787/readyz', timeout=4)"]
# Before a command that serves: the sandbox check (gateway/entrypoint.py); any other command runs as given.
ENTRYPOINT ["python", "-m", "gateway.entrypoint"]
# Listen on all interfaces inside the container; publish the port only where agents can reach it.
CMD ["sh", "-c", "test -f gateway.yaml || gateway init . && exec gateway serve --http 0.0.0.0:8787"]
