"""Fixtures: one `attestkit serve` and one registered simulated device for the session, the Flask app against them."""

from __future__ import annotations

import pathlib

import pytest

# app.py and attestkit_guard.py are in the folder above, which pytest.ini puts on the path with this one.
from app import create_app
from attestkit_guard import AttestKitGuard
from attestkit_service import BACKEND_TOKEN, Device, Service, attestkit_binary


@pytest.fixture(scope="session")
def binary() -> pathlib.Path:
    return attestkit_binary()


@pytest.fixture(scope="session")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    return tmp_path_factory.mktemp("attestkit")


@pytest.fixture(scope="session")
def device(binary: pathlib.Path, workspace: pathlib.Path) -> Device:
    return Device(binary, workspace)


@pytest.fixture(scope="session")
def service(binary: pathlib.Path, workspace: pathlib.Path, device: Device):
    service = Service(binary, workspace, device.roots)
    yield service
    service.stop()


@pytest.fixture(scope="session")
def registered(device: Device, service: Service) -> Device:
    """The device, with a key registered at the service."""
    device.register(service)
    return device


@pytest.fixture()
def client(service: Service):
    """Flask's test client of the app, guarded by the running service."""
    app = create_app(AttestKitGuard(url=service.url, backend_token=BACKEND_TOKEN, timeout=10))
    app.testing = True
    return app.test_client()
