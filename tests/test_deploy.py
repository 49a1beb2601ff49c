"""The files in deploy/, checked offline by the validators of the dev extra."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).parents[1]
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
    and fails on 503 or when nothing listens."""
    check = next(args for kind, args in dockerfile_instructions() if kind == "HEALTHCHECK")
    command = json.loads(check[check.index("CMD") + 3 :])
    assert command[:2] == ["python", "-c"]
    port = str(health_server.server_address[1])

    def healthcheck(port: str) -> int:
        env = {"PRDIGEST_PORT": port, "PATH": ""}
        return subprocess.run([sys.executable, "-c", command[2]], env=env, timeout=30).returncode

    assert healthcheck(port) == 0
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
