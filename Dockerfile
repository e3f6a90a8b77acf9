# The gateway as a service: streamable HTTP on :8787, the workspace mounted at /workspace.
#   docker build -t mcp-policy-gateway .
#   docker run --rm -p 8787:8787 -v "$PWD:/workspace" mcp-policy-gateway
# On first start it runs `gateway init` in /workspace: gateway.yaml there, the state (keys, store, roles,
# policies) in /var/lib/gateway, outside the workspace (keep it on a volume).
# Commands run in bubblewrap, which needs user namespaces: Docker's default seccomp profile blocks them, so
# run with a profile that allows unshare (e.g. --security-opt seccomp=unconfined), or set
# `sandbox: {mode: off}` in gateway.yaml and accept unconfined commands (docs/sandbox.md).
FROM python:3.11-slim

RUN apt-get update \
    && apt-get install -y --no-install-recommends git nodejs npm bubblewrap util-linux \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --create-home --uid 10001 gateway

WORKDIR /opt/gateway
COPY pyproject.toml README.md ./
COPY gateway ./gateway
COPY policies ./policies
COPY roles ./roles
RUN pip install --no-cache-dir .

# pip installs the default roles and policies under share/mcp-policy-gateway, where `gateway init` finds them.
ENV PYTHONUNBUFFERED=1 XDG_STATE_HOME=/var/lib/gateway
RUN mkdir -p /var/lib/gateway && chown gateway /var/lib/gateway
VOLUME /var/lib/gateway
USER gateway
WORKDIR /workspace
EXPOSE 8787
# Listen on all interfaces inside the container; publish the port only where agents can reach it.
CMD ["sh", "-c", "test -f gateway.yaml || gateway init . && exec gateway serve --http 0.0.0.0:8787"]
