"""Deployment: the Host values served come from gateway.yaml; the Dockerfile is checked by reading."""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any

import httpx2
import pytest
import yaml
from conftest import http_gateway, reconfigure, token

from gateway.cli.parser import build_parser
from gateway.config import GatewayConfig
from gateway.listen import parse_listen

ROOT = Path(__file__).resolve().parents[1]
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}
HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def test_allowed_hosts_from_config(config: Any) -> None:
    config = reconfigure(config, allowed_hosts=["gateway.internal:*"])
    bearer = {"Authorization": f"Bearer {token(config, 'developer')}"}
    with http_gateway(config.source) as url:
        port = url.rsplit(":", 1)[1]
        named = httpx2.post(
            f"{url}/mcp", json=INITIALIZE, headers={**HEADERS, **bearer, "Host": f"gateway.internal:{port}"}
        )
        other = httpx2.post(
            f"{url}/mcp", json=INITIALIZE, headers={**HEADERS, **bearer, "Host": f"evil.example:{port}"}
        )
        health = httpx2.get(f"{url}/healthz")
    assert named.status_code == 200
    assert other.status_code == 421  # DNS-rebinding protection: a Host nobody configured
    assert health.status_code == 200


def test_dockerfile_by_reading() -> None:
    dockerfile = (ROOT / "Dockerfile").read_text()
    base = re.search(r"^FROM (\S+)", dockerfile, re.M)
    assert base and re.fullmatch(r"python:3\.11\.\d+-slim-\w+(@sha256:[0-9a-f]{64})?", base.group(1))
    assert re.search(r"^HEALTHCHECK .*\n?.*/readyz", dockerfile, re.M)
    assert re.search(r'^ENTRYPOINT \["python", "-m", "gateway.entrypoint"\]$', dockerfile, re.M)
    assert "bubblewrap" in dockerfile and "safe.directory /workspace" in dockerfile
    ignored = {line.strip() for line in (ROOT / ".dockerignore").read_text().splitlines()}
    assert {".git", ".venv", "tests"} <= ignored
    # any uid may run it (--user "$(id -u):$(id -g)" to own files in a bind-mounted workspace): the state dir
    # (XDG_STATE_HOME) and HOME are made, sticky and world-writable, before USER, on the state volume
    env = dict(re.findall(r"(\w+)=(\S+)", " ".join(re.findall(r"^ENV (.+)$", dockerfile, re.M))))
    volume = re.search(r"^VOLUME (\S+)$", dockerfile, re.M)
    assert volume and env["XDG_STATE_HOME"] == volume.group(1) and env["HOME"].startswith(volume.group(1) + "/")
    made = re.search(r"^RUN mkdir -p (\S+) .*\n.*chmod 1777 (.+)$", dockerfile, re.M)
    assert made and made.group(1) == env["HOME"] and set(made.group(2).split()) == {env["XDG_STATE_HOME"], env["HOME"]}
    assert dockerfile.index(made.group(0)) < dockerfile.index("\nUSER ")
    as_you = '--user "$(id -u):$(id -g)"'
    assert as_you in dockerfile and as_you in (ROOT / "README.md").read_text()
    for source in re.findall(r"^COPY (.+) \S+$", dockerfile, re.M):
        for name in source.split():
            assert (ROOT / name).exists(), f"COPY {name}: not in the repository"
            assert name not in ignored, f"COPY {name}: excluded by .dockerignore"


# --- examples/scale-out: compose.yaml and k8s.yaml, checked against the code by reading ----------------------

SCALE_OUT = ROOT / "examples" / "scale-out"
COMPOSE = yaml.safe_load((SCALE_OUT / "compose.yaml").read_text())
K8S = [doc for doc in yaml.safe_load_all((SCALE_OUT / "k8s.yaml").read_text()) if doc]
EXAMPLE_ENV = dict(
    line.split("=", 1) for line in (SCALE_OUT / ".env.example").read_text().splitlines() if re.match(r"^[A-Z_]+=", line)
)
ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)")
CONFIG_PATH = "/etc/gateway/gateway.yaml"
LISTEN_PORT = 8787


def k8s(kind: str, name: str) -> dict[str, Any]:
    found = [d for d in K8S if d["kind"] == kind and d["metadata"]["name"] == name]
    assert len(found) == 1, f"k8s.yaml: {kind}/{name}"
    return found[0]


def gateway_services() -> dict[str, dict[str, Any]]:
    """The compose services that run the gateway image (the replicas and the one-shot init)."""
    return {name: s for name, s in COMPOSE["services"].items() if s.get("image", "").startswith("mcp-policy-gateway")}


def gateway_containers() -> list[dict[str, Any]]:
    """Every Kubernetes container that runs the gateway image: the setup Job, the init container, the replicas."""
    pods = [
        k8s("Job", "gateway-setup")["spec"]["template"]["spec"],
        k8s("Deployment", "gateway")["spec"]["template"]["spec"],
    ]
    return [
        c
        for pod in pods
        for c in pod.get("initContainers", []) + pod["containers"]
        if "mcp-policy-gateway" in c["image"]
    ]


def example_config(monkeypatch: pytest.MonkeyPatch) -> GatewayConfig:
    for name in EXAMPLE_ENV:
        monkeypatch.setenv(name, "x" * 40)
    raw = yaml.safe_load((SCALE_OUT / "gateway.yaml").read_text())
    return GatewayConfig.from_mapping(raw, base=Path("/etc/gateway"))


def test_scale_out_config_is_a_valid_gateway_yaml(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every key exists in GatewayConfig (unknown keys are refused), and the paths are the volumes'."""
    config = example_config(monkeypatch)
    assert config.policy.engine == "opa" and config.policy.opa_token == "x" * 40
    assert parse_listen(config.listen)[1] == LISTEN_PORT
    assert config.workspace == Path("/workspace")
    state_volume = Path("/var/lib/gateway")  # the Dockerfile's VOLUME, owned by the image's user
    assert f"VOLUME {state_volume}" in (ROOT / "Dockerfile").read_text()
    assert config.state.is_relative_to(state_volume) and config.worktrees.is_relative_to(state_volume)
    config.check_layout()


def test_scale_out_store_is_postgresql(monkeypatch: pytest.MonkeyPatch) -> None:
    config = example_config(monkeypatch)
    assert str(config.store).startswith("postgresql://gateway:") and "@postgres:5432/gateway" in str(config.store)


def test_scale_out_images_are_built_from_the_dockerfile() -> None:
    version = re.search(r'^version = "([^"]+)"', (ROOT / "pyproject.toml").read_text(), re.M)
    assert version
    services = gateway_services()
    assert {"gateway-init", "gateway-1", "gateway-2"} <= set(services)
    for name, service in services.items():
        build = service["build"]
        assert (SCALE_OUT / build["context"]).resolve() == ROOT and (ROOT / build["dockerfile"]).is_file(), name
        assert service["image"] == f"mcp-policy-gateway:{version.group(1)}", name
    uid = re.search(r"useradd .*--uid (\d+)", (ROOT / "Dockerfile").read_text())
    assert uid
    for container in gateway_containers():
        assert container["image"].endswith(f"/mcp-policy-gateway:{version.group(1)}"), container["name"]
    for kind, name in (("Job", "gateway-setup"), ("Deployment", "gateway")):
        assert k8s(kind, name)["spec"]["template"]["spec"]["securityContext"]["runAsUser"] == int(uid.group(1))


def gateway_argvs() -> list[list[str]]:
    """Every gateway command line the examples run (inside ``sh -c`` too)."""
    commands = [s["command"] for s in gateway_services().values()]
    commands += [c.get("command") or c["args"] for c in gateway_containers()]
    argvs = []
    for command in commands:
        if command[:2] == ["sh", "-c"]:
            for part in re.split(r"&&|\|\||;|\(|\)", command[2]):
                words = shlex.split(part)
                words = words[1:] if words[:1] == ["exec"] else words
                if words[:1] == ["gateway"]:
                    argvs.append(words)
        else:
            argvs.append(command)
    return argvs


def test_scale_out_commands_are_gateway_commands() -> None:
    parser = build_parser()
    argvs = gateway_argvs()
    assert any("serve" in argv for argv in argvs) and any(argv[-2:] == ["db", "upgrade"] for argv in argvs)
    for argv in argvs:
        assert argv[0] == "gateway"
        args = parser.parse_args(argv[1:])
        if "--config" in argv:
            assert args.config == CONFIG_PATH
        if args.command == "serve":
            assert parse_listen(args.http)[1] == LISTEN_PORT
        if args.command == "init":
            assert args.state_dir == "/var/lib/gateway/state"


def test_scale_out_mounts_the_config_and_the_shared_volumes() -> None:
    for name, service in gateway_services().items():
        targets = dict(reversed(v.removesuffix(":ro").rsplit(":", 1)) for v in service["volumes"])
        assert targets[CONFIG_PATH] == "./gateway.yaml" and (SCALE_OUT / "gateway.yaml").is_file(), name
        assert targets["/var/lib/gateway"] == "gateway-state" and "gateway-state" in COMPOSE["volumes"], name
        assert "/workspace" in targets, name
    claims = {d["metadata"]["name"] for d in K8S if d["kind"] == "PersistentVolumeClaim"}
    pod = k8s("Deployment", "gateway")["spec"]["template"]["spec"]
    volumes = {v["name"]: v for v in pod["volumes"]}
    for container in gateway_containers():
        mounts = {m["mountPath"]: volumes[m["name"]] for m in container["volumeMounts"]}
        assert mounts[str(Path(CONFIG_PATH).parent)]["configMap"]["name"] == "gateway-config"
        for path in ("/workspace", "/var/lib/gateway"):
            claim = mounts[path]["persistentVolumeClaim"]["claimName"]
            assert claim in claims and k8s("PersistentVolumeClaim", claim)["spec"]["accessModes"] == ["ReadWriteMany"]


def documented_options() -> dict[str, str]:
    """docs/container.md's options per runtime, as its block of them says (`docker: --security-opt ...`)."""
    text = (ROOT / "docs" / "container.md").read_text()
    block = re.search(r"```text\n(docker: .*?)```", text, re.S)
    assert block, "docs/container.md: the block of options"
    return dict(line.split(": ", 1) for line in block.group(1).strip().splitlines())


def test_scale_out_runs_the_sandbox_with_the_documented_options_and_never_as_root() -> None:
    """compose: the Docker options docs/container.md names, and a user (not root); Kubernetes: the fields it
    names, on every replica, whose command goes through the image's entrypoint (its sandbox check)."""
    options = documented_options()
    docker = re.findall(r"--security-opt (\S+)", options["docker"])
    assert docker == ["seccomp=unconfined", "systempaths=unconfined"]
    for name, service in gateway_services().items():
        assert service["security_opt"] == docker, name
        uid, gid = re.fullmatch(r"\$\{GATEWAY_UID:-(\d+)\}:\$\{GATEWAY_GID:-(\d+)\}", service["user"]).groups()
        assert int(uid) != 0 and int(gid) != 0 and EXAMPLE_ENV["GATEWAY_UID"] != "0", name
    assert options["podman"] == "--security-opt unmask=/proc/*"
    fields = dict(f.split(" = ") for f in options["kubernetes"].split("; "))
    assert fields == {
        "spec.hostUsers": "false",
        "securityContext.seccompProfile.type": "Unconfined",
        "containers[].securityContext.procMount": "Unmasked",
    }
    pod = k8s("Deployment", "gateway")["spec"]["template"]["spec"]
    assert pod["hostUsers"] is False and pod["securityContext"]["seccompProfile"]["type"] == "Unconfined"
    assert pod["securityContext"]["runAsNonRoot"] is True and pod["securityContext"]["runAsUser"] != 0
    for container in pod["containers"]:
        assert container["securityContext"]["procMount"] == "Unmasked", container["name"]
        assert "command" not in container and container["args"][0] == "gateway", "the entrypoint must run"


def test_scale_out_configmaps_are_made_from_files_that_exist() -> None:
    header = (SCALE_OUT / "k8s.yaml").read_text()
    made = dict(re.findall(r"kubectl create configmap (\S+) --from-file=(\S+)", header))
    assert made["gateway-config"] == "gateway.yaml"
    for name, source in made.items():
        assert (SCALE_OUT / source).is_file(), f"configmap {name}: {source}"
    used = {
        v["configMap"]["name"]
        for d in K8S
        if d["kind"] == "Deployment"
        for v in d["spec"]["template"]["spec"].get("volumes", [])
        if "configMap" in v
    }
    assert used <= set(made), f"configmaps nobody makes: {used - set(made)}"
    collector = k8s("Deployment", "otel-collector")["spec"]["template"]["spec"]["containers"][0]
    assert collector["args"] == [f"--config=/etc/otelcol-contrib/{made['otel-collector-config']}"]


def test_scale_out_probes_hit_routes_the_gateway_serves(config: Any) -> None:
    """The compose health checks, the load balancer's and the Kubernetes probes, asked of a real gateway."""
    paths = set()
    for service in gateway_services().values():
        if "healthcheck" in service and not service["healthcheck"].get("disable"):
            url = re.search(r"http://127\.0\.0\.1:(\d+)(/\S*?)'", " ".join(service["healthcheck"]["test"]))
            assert url and int(url.group(1)) == LISTEN_PORT
            paths.add(url.group(2))
    caddy = (SCALE_OUT / "Caddyfile").read_text()
    paths.update(re.findall(r"health_uri (\S+)", caddy))
    upstreams = re.search(r"reverse_proxy ([^{]+)\{", caddy)
    assert upstreams
    replicas = [name for name, s in gateway_services().items() if "serve" in s["command"]]
    assert sorted(upstreams.group(1).split()) == sorted(f"{name}:{LISTEN_PORT}" for name in replicas)
    assert len(replicas) >= 2
    deployment = k8s("Deployment", "gateway")
    assert deployment["spec"]["replicas"] >= 2
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    assert container["ports"] == [{"name": "http", "containerPort": LISTEN_PORT}]
    for probe in ("readinessProbe", "livenessProbe"):
        assert container[probe]["httpGet"]["port"] == "http"
        paths.add(container[probe]["httpGet"]["path"])
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert paths == {"/healthz", "/readyz"}, "readiness checks /readyz, liveness /healthz"
    with http_gateway(config.source) as url:
        for path in paths:
            assert httpx2.get(f"{url}{path}").status_code == 200, path


def test_scale_out_service_addresses_match_the_config(monkeypatch: pytest.MonkeyPatch) -> None:
    """gateway.yaml names postgres, opa and otel-collector: compose services and Kubernetes Services by those
    names, on those ports."""
    config = example_config(monkeypatch)
    raw = yaml.safe_load((SCALE_OUT / "gateway.yaml").read_text())
    store = re.search(r"@([a-z-]+):(\d+)/", raw["store"])
    assert store
    addresses = {
        (store.group(1), int(store.group(2))),
        parse_listen(config.policy.opa_url.removeprefix("http://")),
        parse_listen(str(config.telemetry.otlp_endpoint).removeprefix("http://")),
    }
    for host, port in addresses:
        assert host in COMPOSE["services"], host
        assert port in [p["port"] for p in k8s("Service", host)["spec"]["ports"]], (host, port)
    collector = yaml.safe_load((SCALE_OUT / "otel-collector.yaml").read_text())
    assert collector["receivers"]["otlp"]["protocols"]["http"]["endpoint"] == "0.0.0.0:4318"
    assert "health_check" in collector["service"]["extensions"]
    assert "--addr=0.0.0.0:8181" in COMPOSE["services"]["opa"]["command"]


def test_scale_out_every_service_has_a_health_check() -> None:
    for name, service in COMPOSE["services"].items():
        check = service.get("healthcheck")
        assert check, f"compose service {name} has no health check"
        if check.get("disable"):
            assert service["restart"] == "no" and name == "gateway-init", name  # only the one-shot job
    for deployment in (d for d in K8S if d["kind"] == "Deployment"):
        for container in deployment["spec"]["template"]["spec"]["containers"]:
            assert "readinessProbe" in container and "livenessProbe" in container, container["name"]


SECRET_NAME = re.compile(r"PASSWORD|TOKEN|SECRET|KEY", re.I)


def test_scale_out_secrets_come_from_the_environment() -> None:
    """Every ${VAR} has an .env.example entry; no secret is written into a file; the gateway replicas get
    every variable gateway.yaml reads."""
    used = set()
    for name in ("compose.yaml", "gateway.yaml", "k8s.yaml", "otel-collector.yaml"):
        used |= set(ENV_REF.findall((SCALE_OUT / name).read_text()))
    used.discard("env")  # the collector's own ${env:VAR} syntax, in a comment
    assert used - {"WORKSPACE_DIR"} and used <= set(EXAMPLE_ENV), f"not in .env.example: {used - set(EXAMPLE_ENV)}"
    assert all(value == "" for key, value in EXAMPLE_ENV.items() if SECRET_NAME.search(key)), "a secret in .env.example"
    config_vars = set(ENV_REF.findall((SCALE_OUT / "gateway.yaml").read_text()))
    for name, service in COMPOSE["services"].items():
        for key, value in (service.get("environment") or {}).items():
            if SECRET_NAME.search(key):
                assert re.fullmatch(r"\$\{[A-Z_]+(:\?[^}]*)?\}", value), f"{name}: {key} is written in the file"
        if name in gateway_services():
            assert config_vars <= set(service["environment"]), name
    assert not [d for d in K8S if d["kind"] == "Secret"], "k8s.yaml references the Secret; it never holds one"
    for container in gateway_containers():
        given = {e["name"] for e in container.get("env", [])} | ({*EXAMPLE_ENV} if container.get("envFrom") else set())
        assert config_vars <= given, container["name"]
    for deployment in (d for d in K8S if d["kind"] == "Deployment"):
        for container in deployment["spec"]["template"]["spec"]["containers"]:
            for env in container.get("env", []):
                if SECRET_NAME.search(env["name"]):
                    assert env["valueFrom"]["secretKeyRef"]["name"] == "gateway-secrets", env["name"]
                    assert env["valueFrom"]["secretKeyRef"]["key"] in EXAMPLE_ENV, env["name"]
    for path in SCALE_OUT.rglob("*"):
        if path.is_file():
            for url in re.findall(r"[a-z]+://[^/\s:@]+:([^@\s]+)@", path.read_text()):
                assert ENV_REF.fullmatch(url) or re.fullmatch(r"\$\{[A-Z_]+\}", url), f"{path.name}: password in a URL"
