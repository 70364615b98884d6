"""A real `attestkit serve` and a simulated device, driven through the `attestkit` command line, for the tests.

The service trusts the software Apple of `attestkit simulate device` (TEST roots, never Apple's), accepts the
development environment of one app, keeps its keys in a throwaway SQLite file and listens on a free port. The
device registers an App Attest key through the service's own routes (`POST /v1/challenges`, `attestkit simulate
attestation`, `POST /v1/attestations`) and signs requests with `attestkit simulate assertion` over AttestKit's
canonical client data, as the app's `AttestKitClient` does.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import pathlib
import subprocess
import time

import requests

APP_ID = "ABCDE12345.com.example.flask"
BACKEND_TOKEN = "flask-example-backend-token-0123456789"
GROUPS = "payments:enforce,feed:report"
REPOSITORY = pathlib.Path(__file__).resolve().parents[3]


def attestkit_binary() -> pathlib.Path:
    """``ATTESTKIT_BINARY``, else the ``attestkit`` that ``swift build --traits Hummingbird`` built in this repository."""
    configured = os.environ.get("ATTESTKIT_BINARY")
    if configured:
        binary = pathlib.Path(configured)
    else:
        shown = subprocess.run(
            ["swift", "build", "--show-bin-path"], cwd=REPOSITORY, capture_output=True, text=True, check=True
        )
        binary = pathlib.Path(shown.stdout.strip()) / "attestkit"
    if not os.access(binary, os.X_OK):
        raise RuntimeError(f"no attestkit binary at {binary}: run `swift build --traits Hummingbird` at the repository's root first")
    return binary


class Service:
    """`attestkit serve` on 127.0.0.1, a free port."""

    def __init__(self, binary: pathlib.Path, workspace: pathlib.Path, roots: pathlib.Path) -> None:
        self.workspace = workspace
        port_file = workspace / "port"
        self.log = workspace / "serve.log"
        environment = dict(os.environ)
        environment.update(
            ATTESTKIT_BACKEND_TOKENS=BACKEND_TOKEN,
            ATTESTKIT_ENFORCEMENT_GROUPS=GROUPS,
        )
        with open(self.log, "wb") as log:
            self.process = subprocess.Popen(
                [
                    str(binary), "serve", "--host", "127.0.0.1", "--port", "0", "--port-file", str(port_file),
                    "--storage", "sqlite:" + str(workspace / "attestkit.sqlite"),
                    "--app", APP_ID, "--environments", "development",
                    "--trust-attestation-root", str(roots / "attestation-root.pem"),
                    "--trust-receipt-root", str(roots / "receipt-root.pem"),
                    "--log-level", "error",
                    "--set", "rate-limit.attestations-per-ip=0", "--set", "rate-limit.challenges-per-ip=0",
                ],
                env=environment, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
            )
        deadline = time.monotonic() + 60
        while True:
            text = port_file.read_text().strip() if port_file.exists() else ""
            if text.isdigit():
                self.url = f"http://127.0.0.1:{text}"
                break
            if self.process.poll() is not None:
                output = self.log.read_text()[-2000:]
                raise RuntimeError(f"attestkit serve exited ({self.process.returncode}): {output}")
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError("attestkit serve did not listen within 60 s")
            time.sleep(0.1)

    def post(self, path: str, body: dict) -> requests.Response:
        """POSTs ``body`` as JSON to an app route of the service."""
        return requests.post(self.url + path, json=body, timeout=10)

    def stop(self) -> None:
        """SIGTERM, then SIGKILL after 10 s."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


class Device:
    """A simulated device of `APP_ID` (development), saved in a state file between `attestkit simulate` calls."""

    def __init__(self, binary: pathlib.Path, workspace: pathlib.Path) -> None:
        self.binary = binary
        self.state = workspace / "device.json"
        self.out = workspace / "simulated"
        self.key_id: str | None = None
        self._simulate("device", "--app-id", APP_ID, "--environment", "development", "--state", str(self.state))

    @property
    def roots(self) -> pathlib.Path:
        """The folder of the software Apple's two roots, ``attestation-root.pem`` and ``receipt-root.pem``."""
        return self.out

    def register(self, service: Service) -> str:
        """Attests a new key over a challenge of ``service`` and registers it there; returns its key id."""
        challenge = service.post("/v1/challenges", {"purpose": "attest"})
        assert challenge.status_code == 201, challenge.text
        issued = challenge.json()
        vector = self._simulate(
            "attestation", "--app-id", APP_ID, "--environment", "development", "--challenge", issued["challenge"],
            "--state", str(self.state), "--json",
        )
        registered = service.post(
            "/v1/attestations",
            {"keyId": vector["keyId"], "attestation": vector["data"], "challengeId": issued["challengeId"]},
        )
        assert registered.status_code == 201, registered.text
        self.key_id = vector["keyId"]
        return self.key_id

    def sign(
        self, method: str, target: str, body: bytes = b"", challenge_id: str | None = None
    ) -> dict[str, str]:
        """The ``X-AttestKit-*`` headers of a request: an assertion over its canonical client data (method, target,
        SHA-256 of the body, and a service challenge or the time now), as the app's AttestKitClient sends it."""
        assert self.key_id is not None, "register a key first"
        if challenge_id is not None:
            freshness = "challenge:" + challenge_id
            headers = {"X-AttestKit-Challenge": challenge_id}
        else:
            milliseconds = str(int(time.time() * 1000))
            freshness = "timestamp:" + milliseconds
            headers = {"X-AttestKit-Timestamp": milliseconds}
        client_data = "\n".join(
            ["attestkit-assertion-v1", method.upper(), target, hashlib.sha256(body).hexdigest(), freshness]
        ).encode()
        vector = self._simulate(
            "assertion", "--state", str(self.state), "--key-id", self.key_id,
            "--client-data-b64", base64.b64encode(client_data).decode(), "--json",
        )
        headers.update({"X-AttestKit-Key-Id": self.key_id, "X-AttestKit-Assertion": vector["data"]})
        return headers

    def _simulate(self, command: str, *arguments: str) -> dict | None:
        """Runs ``attestkit simulate COMMAND ARGUMENTS --out OUT``; the vector it prints with ``--json``."""
        done = subprocess.run(
            [str(self.binary), "simulate", command, *arguments, "--out", str(self.out)],
            capture_output=True, text=True, timeout=60,
        )
        if done.returncode != 0:
            raise RuntimeError(f"attestkit simulate {command} failed: {done.stderr.strip()}")
        return json.loads(done.stdout) if "--json" in arguments else None
