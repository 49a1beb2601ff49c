"""The files in deploy/, checked offline by the validators of the dev extra."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).parents[2]
DEPLOY = ROOT / "deploy"
BIN = Path(sys.executable).parent


def tool(name: str) -> str:
    """A validator installed by the dev extra, next to this interpreter."""
    path = BIN / name
    assert path.exists(), f"{name} is missing: install the dev extra (pip install -e '.[dev]')"
    return str(path)


def run(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=120)


def dockerfile_instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) pairs, continuation lines joined, comments dropped."""
    text = (DEPLOY / "Dockerfile").read_text().replace("\\\n", " ")
    found = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            keyword, _, rest = line.partition(" ")
            found.append((keyword.upper(), rest.strip()))
    return found


def test_dockerfile_passes_hadolint() -> None:
    done = run(tool("hadolint"), "--no-color", "--failure-threshold", "error", "deploy/Dockerfile")
    assert done.returncode == 0, done.stdout + done.stderr


def test_dockerfile_is_multi_stage_slim_non_root_and_serves() -> None:
    steps = dockerfile_instructions()
    bases = [args for kind, args in steps if kind == "FROM"]
    assert len(bases) >= 2 and all(b.startswith("python:3.11-slim") for b in bases)
    assert any(kind == "COPY" and args.startswith("--from=") for kind, args in steps)
    final = steps[max(i for i, (kind, _) in enumerate(steps) if kind == "FROM") :]
    users = [args for kind, args in final if kind == "USER"]
    assert users and users[-1].split(":")[0] not in {"0", "root"}
    assert [args for kind, args in final if kind == "CMD"][-1] == '["prdigest", "serve"]'
    env = " ".join(args for kind, args in final if kind == "ENV")
    volumes = " ".join(args for kind, args in final if kind == "VOLUME")
    digests = re.search(r"PRDIGEST_DIGESTS_DIR=(\S+)", env)
    database = re.search(r"PRDIGEST_DATABASE_URL=sqlite:///(/\S+)/[^/\s]+\.db", env)
    assert digests and database, env
    assert f'"{digests[1]}"' in volumes and f'"{database[1]}"' in volumes


def test_build_context_lets_through_what_the_dockerfile_copies() -> None:
    """deploy/Dockerfile.dockerignore starts from `*`: every COPY source must be let back in."""
    ignore = (DEPLOY / "Dockerfile.dockerignore").read_text().splitlines()
    allowed = {line[1:].rstrip("/") for line in ignore if line.startswith("!")}
    assert "*" in ignore
    for kind, args in dockerfile_instructions():
        if kind == "COPY" and not args.startswith("--from="):
            for source in args.split()[:-1]:
                assert source.rstrip("/") in allowed, source
                assert (ROOT / source).exists(), source


class _Health(BaseHTTPRequestHandler):
    status = 200

    def do_GET(self) -> None:
        self.send_response(self.status if self.path == "/healthz" else 404)
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def health_server() -> Iterator[HTTPServer]:
    server = HTTPServer(("127.0.0.1", 0), _Health)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def test_healthcheck_command_follows_healthz(health_server: HTTPServer) -> None:
    """The HEALTHCHECK runs in the slim image (no curl): its command, run here, passes on 200
    and fails on 503 or when nothing listens; PRDIGEST_METRICS_PORT wins when set."""
    check = next(args for kind, args in dockerfile_instructions() if kind == "HEALTHCHECK")
    command = json.loads(check[check.index("CMD") + 3 :])
    assert command[:2] == ["python", "-c"]
    port = str(health_server.server_address[1])

    def healthcheck(port: str, **extra: str) -> int:
        env = {"PRDIGEST_PORT": port, "PATH": "", **extra}
        return subprocess.run([sys.executable, "-c", command[2]], env=env, timeout=30).returncode

    assert healthcheck(port) == 0
    # Socket Mode serves /healthz only on PRDIGEST_METRICS_PORT.
    assert healthcheck("9", PRDIGEST_METRICS_PORT=port) == 0
    _Health.status = 503
    try:
        assert healthcheck(port) != 0
    finally:
        _Health.status = 200
    health_server.shutdown()
    health_server.server_close()
    assert healthcheck(port) != 0


def compose() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((DEPLOY / "docker-compose.yml").read_text())
    return loaded


def test_compose_file_is_valid_against_the_compose_spec() -> None:
    done = run(
        tool("check-jsonschema"),
        "--builtin-schema",
        "vendor.compose-spec",
        "deploy/docker-compose.yml",
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_compose_runs_replicas_in_http_mode_after_a_healthy_postgres() -> None:
    services = compose()["services"]
    database = next(s for s in services.values() if str(s.get("image", "")).startswith("postgres"))
    assert "pg_isready" in " ".join(database["healthcheck"]["test"])
    bot = services["bot"]
    assert bot["build"]["dockerfile"] == "deploy/Dockerfile"
    assert (DEPLOY / bot["build"]["context"] / bot["build"]["dockerfile"]).exists()
    assert all(dep["condition"] == "service_healthy" for dep in bot["depends_on"].values())
    assert bot["deploy"]["replicas"] >= 2
    assert bot["environment"]["PRDIGEST_DATABASE_URL"].startswith("postgresql+psycopg://")
    assert bot["env_file"] == ".env"


def test_env_example_defines_every_secret_compose_needs() -> None:
    text = (DEPLOY / "docker-compose.yml").read_text()
    required = set(re.findall(r"\$\{(\w+)(?::\?[^}]*)?\}", text))
    example = (DEPLOY / ".env.example").read_text()
    defined = set(re.findall(r"^(\w+)=", example, re.MULTILINE))
    assert required <= defined, required - defined
    assert {"SLACK_BOT_TOKEN", "SLACK_SIGNING_SECRET"} <= defined
    assert "SLACK_APP_TOKEN" not in defined, "compose runs HTTP mode"
    assert ".env" in (ROOT / ".gitignore").read_text().split()


def k8s_documents() -> dict[str, dict[str, Any]]:
    """kind -> the manifest of that kind in deploy/k8s (one of each)."""
    found: dict[str, dict[str, Any]] = {}
    for path in sorted((DEPLOY / "k8s").glob("*.yaml")):
        for document in yaml.safe_load_all(path.read_text()):
            assert document["kind"] not in found, document["kind"]
            found[document["kind"]] = document
    return found


def test_kubernetes_manifests_are_valid() -> None:
    files = sorted(str(p.relative_to(ROOT)) for p in (DEPLOY / "k8s").glob("*.yaml"))
    assert len(files) >= 4
    done = run(tool("kubernetes-validate"), "--strict", *files)
    assert done.returncode == 0, done.stdout + done.stderr


def test_kubernetes_deployment_is_replicated_probed_and_configured_from_outside() -> None:
    docs = k8s_documents()
    deployment, config = docs["Deployment"], docs["ConfigMap"]["data"]
    assert deployment["spec"]["replicas"] >= 2
    pod = deployment["spec"]["template"]
    (container,) = pod["spec"]["containers"]
    assert container["args"] == ["prdigest", "serve"]
    port = next(p for p in container["ports"] if p["name"] == "http")
    assert str(port["containerPort"]) == config["PRDIGEST_PORT"]
    for probe in ("readinessProbe", "livenessProbe"):
        assert container[probe]["httpGet"] == {"path": "/healthz", "port": "http"}
    sources = {next(iter(s)): next(iter(s.values()))["name"] for s in container["envFrom"]}
    assert sources["configMapRef"] == docs["ConfigMap"]["metadata"]["name"]
    assert "secretRef" in sources
    assert {"cpu", "memory"} <= set(container["resources"]["requests"])
    assert pod["spec"]["securityContext"]["runAsNonRoot"] is True
    service = docs["Service"]["spec"]
    assert service["selector"].items() <= pod["metadata"]["labels"].items()
    assert service["ports"][0]["targetPort"] == "http"


def test_kubernetes_cronjob_ingests_into_the_shared_database() -> None:
    docs = k8s_documents()
    cron = docs["CronJob"]["spec"]
    assert cron["concurrencyPolicy"] == "Forbid"
    pod = cron["jobTemplate"]["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert container["args"][:2] == ["prdigest", "ingest"]
    assert (
        container["image"]
        == docs["Deployment"]["spec"]["template"]["spec"]["containers"][0]["image"]
    )
    secret = {s["secretRef"]["name"] for s in container["envFrom"] if "secretRef" in s}
    deployment_pod = docs["Deployment"]["spec"]["template"]["spec"]["containers"][0]
    assert secret == {s["secretRef"]["name"] for s in deployment_pod["envFrom"] if "secretRef" in s}
    notes = {m["mountPath"] for c in pod["initContainers"] for m in c["volumeMounts"]}
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert container["args"] == ["prdigest", "ingest"]  # the notes folder, with its checks
    assert env["PRDIGEST_DIGESTS_DIR"].split("/$(")[0] in notes
    names = [e["name"] for e in container["env"]]
    assert names.index("NOTES_PATH") < names.index("PRDIGEST_DIGESTS_DIR")  # $(…) needs it first


UNIT_EXEC = "/opt/prdigest/bin/prdigest"


def test_systemd_unit_verifies_with_the_installed_program(tmp_path: Path) -> None:
    """`systemd-analyze verify` needs ExecStart to exist: the unit is checked with its
    documented program path replaced by this environment's `prdigest`."""
    analyze = shutil.which("systemd-analyze") or "/usr/bin/systemd-analyze"
    assert Path(analyze).exists(), "systemd-analyze is missing: install the systemd package"
    unit = (DEPLOY / "prdigest.service").read_text()
    exec_lines = [line for line in unit.splitlines() if line.startswith("ExecStart=")]
    assert exec_lines == [f"ExecStart={UNIT_EXEC} serve"]
    program = BIN / "prdigest"
    assert program.exists()

    def verify(text: str, folder: str) -> list[str]:
        """Exit status and every line about the unit (warnings leave the status at 0)."""
        checked = tmp_path / folder / "prdigest.service"
        checked.parent.mkdir()
        checked.write_text(text.replace(f"ExecStart={UNIT_EXEC}", f"ExecStart={program}"))
        done = run(analyze, "verify", str(checked))
        lines = (done.stdout + done.stderr).splitlines()
        return [f"exit {done.returncode}"] + [line for line in lines if "prdigest" in line]

    assert verify(unit, "as-shipped") == ["exit 0"]
    assert len(verify(unit.replace("Restart=on-failure", "Restart=sometimes"), "bad")) > 1


# ---------------------------------------------------------------- never the samples

SAMPLES = ROOT / "digests"


def deploy_texts() -> dict[str, str]:
    return {
        str(p.relative_to(ROOT)): p.read_text()
        for p in sorted(DEPLOY.rglob("*"))
        if p.is_file() and p.name != "slack-app-manifest.yaml" and p.suffix != ".png"
    }


def test_no_deploy_file_points_at_the_bundled_samples() -> None:
    """The repository's digests/ (the sample notes, bot/sample_digests in the wheel) is never
    a deployment's notes folder: not as a compose default, a mount, a copy into the notes
    folder, or a setting."""
    for name, text in deploy_texts().items():
        assert "sample_digests" not in text, name
        assert "../digests" not in text and "$PWD/digests" not in text, name
    # compose: the notes folder is a variable without a default that fails clearly.
    bot = compose()["services"]["bot"]
    folder = bot["environment"]["PRDIGEST_DIGESTS_DIR"]
    (mount,) = [v for v in bot["volumes"] if f":{folder}:" in v]
    source = re.fullmatch(r"\$\{(\w+):\?([^}]+)\}:" + re.escape(folder) + r":ro", mount)
    assert source, mount
    assert source[1] == "PRDIGEST_NOTES_DIR" and "notes folder" in source[2]
    example = (DEPLOY / ".env.example").read_text()
    (value,) = re.findall(r"^PRDIGEST_NOTES_DIR=(.+)$", example, re.MULTILINE)
    assert (DEPLOY / value).resolve() != SAMPLES.resolve()
    # Dockerfile: the notes folder is an empty volume; digests/ is copied only into the
    # build stage, where the wheel packs it as the samples.
    steps = dockerfile_instructions()
    final = steps[max(i for i, (kind, _) in enumerate(steps) if kind == "FROM") :]
    env = " ".join(args for kind, args in final if kind == "ENV")
    notes = re.search(r"PRDIGEST_DIGESTS_DIR=(\S+)", env)
    assert notes
    copied = [args for kind, args in final if kind == "COPY"]
    assert all(notes[1] not in args and "digests" not in args.split()[0] for args in copied)
    assert all(args.startswith("--from=build /opt/") for args in copied), copied
    # Kubernetes: the bot pods' folder is an emptyDir, the CronJob's the cloned notes.
    docs = k8s_documents()
    pod = docs["Deployment"]["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    config = docs["ConfigMap"]["data"]
    mounted = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
    empty = {v["name"] for v in pod["volumes"] if "emptyDir" in v}
    assert mounted[config["PRDIGEST_DIGESTS_DIR"]] in empty
    # systemd: the team's folder under the service's own state directory.
    unit = (DEPLOY / "prdigest.service").read_text()
    (folder,) = re.findall(r"^Environment=PRDIGEST_DIGESTS_DIR=(\S+)$", unit, re.MULTILINE)
    state = re.search(r"^StateDirectory=(\S+)$", unit, re.MULTILINE)
    assert state and folder.startswith(f"/var/lib/{state[1]}/")
