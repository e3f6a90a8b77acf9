#!/usr/bin/env bash
# The container proof (docs/container.md): build the image from this repository's Dockerfile and run its
# entrypoint, and a sandboxed command inside it, under rootless podman, with and without each option the
# sandbox needs. Not part of `make test`: it needs root (debootstrap, a user for rootless podman, apt-get)
# and takes minutes.
#
#   sudo examples/container/prove.sh            # prints one line per run: the options, what happened
#   sudo PROOF_REUSE_IMAGE=1 examples/container/prove.sh   # the runs again, on the image already built
#
# No container registry is reachable here, so the Dockerfile's base image (python:3.11-slim-bookworm) is
# replaced by Debian bookworm made with debootstrap from Debian's mirror, and `pip install .` installs the
# gateway from wheels built on this host (its pip reaches PyPI; the build's would need this host's CA),
# the gateway's own wheel among them (so the build needs no setuptools of its own). Debian's pip installs under
# /usr/local while its Python's prefix is /usr, so GATEWAY_DEFAULTS names where the default roles and
# policies went (python:3.11-slim's prefix is /usr/local: the Dockerfile needs no such line).
# Everything else is the Dockerfile as it is: its apt-get line, user, ENV, VOLUME, ENTRYPOINT and CMD.
set -euo pipefail

repo=$(cd "$(dirname "$0")/../.." && pwd)
work=${PROOF_DIR:-/var/tmp/gateway-container-proof}
user=${PROOF_USER:-gwproof}
python=${PYTHON:-python3}
image=localhost/mcp-policy-gateway:proof
base=localhost/bookworm-python:proof

[ "$(id -u)" = 0 ] || { echo "run as root: it installs podman and debootstrap and adds the user $user" >&2; exit 2; }
command -v podman >/dev/null && command -v debootstrap >/dev/null && command -v newuidmap >/dev/null \
  && command -v runc >/dev/null || apt-get install -y -q podman debootstrap uidmap slirp4netns runc >/dev/null

mkdir -p "$work"
# an unprivileged user for rootless podman, with subordinate ids
id "$user" >/dev/null 2>&1 || useradd -m -s /bin/bash "$user"
grep -q "^$user:" /etc/subuid || echo "$user:300000:65536" >>/etc/subuid
grep -q "^$user:" /etc/subgid || echo "$user:300000:65536" >>/etc/subgid
# crun refuses a host with cgroup v1 controllers mounted (cgroups "hybrid mode"); runc runs there
runtime=crun
[ "$(stat -fc %T /sys/fs/cgroup)" = cgroup2fs ] || runtime=runc
as_user() { su - "$user" -c "cd /tmp && $*"; }

# 1. the base: Debian bookworm with Python 3.11 (the Dockerfile's base has Python and pip of its own)
if [ ! -f "$work/base.tar" ] && ! as_user "podman image exists $base"; then
  debootstrap --variant=minbase --include=python3,python3-pip,python3-venv,python-is-python3,ca-certificates \
    bookworm "$work/rootfs" http://deb.debian.org/debian >"$work/debootstrap.log"
  tar -C "$work/rootfs" -cf "$work/base.tar" .
fi

# 2. the build context: what .dockerignore lets in, wheels for everything pip installs, and the Dockerfile with
#    its FROM and pip lines pointed at them
context="$work/context"
rm -rf "$context" && mkdir -p "$context"
cp -r "$repo/pyproject.toml" "$repo/README.md" "$repo/gateway" "$repo/policies" "$repo/roles" "$context/"
find "$context" -name __pycache__ -prune -exec rm -rf {} +
"$python" -m pip wheel -q --wheel-dir "$context/wheels" "$context" 2> >(grep -v WARNING >&2)
sed -e "s|^FROM .*|FROM $base|" \
    -e "s|^RUN pip install --no-cache-dir \.\$|COPY wheels /opt/wheels\nRUN pip install --no-cache-dir --break-system-packages --no-index --find-links /opt/wheels mcp-policy-gateway\nENV GATEWAY_DEFAULTS=/usr/local/share/mcp-policy-gateway|" \
    "$repo/Dockerfile" >"$context/Containerfile"
grep -q "find-links /opt/wheels" "$context/Containerfile" || { echo "the Dockerfile's pip line moved" >&2; exit 1; }
chmod -R a+rX "$work"

# 3. the base image and the gateway's image, built by that user
as_user "podman image exists $base || podman import $work/base.tar $base" >/dev/null
if [ -z "${PROOF_REUSE_IMAGE:-}" ] || ! as_user "podman image exists $image"; then
  as_user "podman --runtime $runtime build -q -f $context/Containerfile -t $image $context" >"$work/build.log" 2>&1 \
    || { tail -20 "$work/build.log" >&2; exit 1; }
fi

cp "$(dirname "$0")/sandboxed_call.py" "$work/sandboxed_call.py" && chmod a+r "$work/sandboxed_call.py"

run() {  # run NAME OPTIONS...: start the image's entrypoint, then a sandboxed command through MCP
  local name=$1; shift
  # a workspace owned by that user (a git repository), mounted at /workspace; the container runs as that user
  # (--userns=keep-id --user UID:GID: podman's "run as yourself", what the README asks of docker --user)
  local workspace
  workspace=$(as_user "mktemp -d /tmp/gateway-proof-XXXXXX")
  as_user "git -C $workspace init -q -b main && echo hello >$workspace/README.md && git -C $workspace add -A \
    && git -C $workspace -c user.name=proof -c user.email=proof@example.invalid commit -q -m first"
  as_user "podman rm -f -v proof >/dev/null 2>&1; podman --runtime $runtime run -d --name proof --network none \
    --userns=keep-id --user \$(id -u):\$(id -g) -v $workspace:/workspace -v $work/sandboxed_call.py:/opt/call.py:ro \
    $* $image" >/dev/null
  local state
  for _ in $(seq 120); do
    state=$(as_user "podman inspect -f '{{.State.Status}}' proof")
    [ "$state" = running ] && as_user "podman exec proof python -c \"import urllib.request as u; \
      u.urlopen('http://127.0.0.1:8787/readyz', timeout=4)\"" >/dev/null 2>&1 && break
    [ "$state" = exited ] && break
    sleep 1
  done
  if [ "$state" = exited ]; then
    local code; code=$(as_user "podman inspect -f '{{.State.ExitCode}}' proof")
    echo "$name: the entrypoint exited $code: $(as_user 'podman logs proof' 2>&1 | grep -E 'FAIL|not serving' | head -2 | tr '\n' ' ')"
  else
    local answer
    answer=$(as_user "podman exec proof sh -c 'T=\$(gateway token issue --role developer --agent proof) \
      python /opt/call.py'" 2>&1 | tail -1)
    echo "$name: serving, /readyz 200; shell_run: $answer; proof.txt: $(cat "$workspace/proof.txt" 2>/dev/null || echo none)"
  fi
  as_user "podman rm -f -v proof" >/dev/null 2>&1
  rm -rf "$workspace"
}

echo "runtime: rootless podman $(podman --version | awk '{print $3}') ($runtime), user $user, image $image"
run "no options" ""
run "seccomp=unconfined" "--security-opt seccomp=unconfined"
run "unmask=/proc/*" "--security-opt 'unmask=/proc/*'"
run "systempaths=unconfined" "--security-opt systempaths=unconfined"
run "unmask=/proc/* and cap-drop ALL, no-new-privileges" \
  "--security-opt 'unmask=/proc/*' --cap-drop ALL --security-opt no-new-privileges"
