"""The Flask app against a real `attestkit serve`: a simulated device signs requests, Flask's test client sends them.

`payments` is enforced, `feed` reported (ATTESTKIT_ENFORCEMENT_GROUPS=payments:enforce,feed:report).
"""

from __future__ import annotations

import http.client
import json
import socket
import threading
import time

import pytest
from werkzeug.serving import make_server

from app import create_app
from attestkit_guard import AttestKitGuard, _is_ip_address, _refusal, request_target
from attestkit_service import BACKEND_TOKEN


def send(client, method: str, target: str, body: bytes = b"", headers: dict | None = None):
    """Sends ``body`` to ``target`` exactly as given (path and query unchanged)."""
    return client.open(target, method=method, data=body, headers=headers or {}, content_type="application/json")


def error_code(response) -> str | None:
    return (response.get_json(silent=True) or {}).get("error", {}).get("code")


# The enforced group: payments.


def test_signed_payment_is_accepted_once_and_its_replay_refused(client, registered):
    # Sent as the app signed it: lower-case escapes in the path, which only the raw target keeps (Flask's decoded
    # path would be spelled again as `caf%C3%A9`, and the assertion would not verify).
    target = "/v1/payments/caf%c3%a9?currency=EUR&note=au%20lait"
    body = json.dumps({"amount": 10}).encode()
    headers = registered.sign("POST", target, body)

    accepted = send(client, "POST", target, body, headers)
    assert accepted.status_code == 200, accepted.get_data(as_text=True)
    answer = accepted.get_json()
    assert answer["accepted"] is True
    assert answer["payee"] == "caf\u00e9"
    assert answer["keyId"] == registered.key_id
    assert answer["trust"] == "app_attest"
    assert isinstance(answer["counter"], int) and answer["counter"] >= 1
    assert answer["stepUp"] is False

    replayed = send(client, "POST", target, body, headers)
    assert replayed.status_code == 409
    assert error_code(replayed) == "counter_not_increasing"


def test_payment_with_a_tampered_body_is_refused(client, registered):
    target = "/v1/payments/alice"
    headers = registered.sign("POST", target, json.dumps({"amount": 10}).encode())

    tampered = send(client, "POST", target, json.dumps({"amount": 10000}).encode(), headers)
    assert tampered.status_code == 403
    assert error_code(tampered) == "signature_invalid"


def test_payment_to_another_payee_is_refused(client, registered):
    body = json.dumps({"amount": 10}).encode()
    headers = registered.sign("POST", "/v1/payments/alice?currency=EUR", body)

    tampered = send(client, "POST", "/v1/payments/mallory?currency=EUR", body, headers)
    assert tampered.status_code == 403
    assert error_code(tampered) == "signature_invalid"


def test_large_payment_is_decided_over_its_body_hash(client, registered):
    # Past 32 KiB the guard sends the body's SHA-256 instead of the body.
    body = json.dumps({"amount": 10, "memo": "x" * 40_000}).encode()
    headers = registered.sign("POST", "/v1/payments/alice", body)

    tampered = send(client, "POST", "/v1/payments/alice", body.replace(b'"amount": 10', b'"amount": 99'), headers)
    assert tampered.status_code == 403
    assert error_code(tampered) == "signature_invalid"
    accepted = send(client, "POST", "/v1/payments/alice", body, headers)
    assert accepted.status_code == 200, accepted.get_data(as_text=True)


def test_payment_without_proof_is_refused(client, service):
    refused = send(client, "POST", "/v1/payments/alice", json.dumps({"amount": 10}).encode())
    assert refused.status_code == 401
    assert error_code(refused) == "assertion_required"


def test_payment_with_a_service_challenge_is_accepted(client, registered, service):
    issued = service.post("/v1/challenges", {"purpose": "assert", "keyId": registered.key_id})
    assert issued.status_code == 201, issued.text
    body = json.dumps({"amount": 25}).encode()
    headers = registered.sign("POST", "/v1/payments/alice", body, challenge_id=issued.json()["challengeId"])

    accepted = send(client, "POST", "/v1/payments/alice", body, headers)
    assert accepted.status_code == 200, accepted.get_data(as_text=True)
    assert accepted.get_json()["keyId"] == registered.key_id

    # The challenge is used up: the same request again is refused (the counter has moved on too).
    assert send(client, "POST", "/v1/payments/alice", body, headers).status_code in (403, 409)


def test_over_a_socket_the_raw_target_is_what_was_sent(service, registered):
    # Werkzeug's own server, as `flask run` uses it, writes the request line's target into RAW_URI; the target is
    # sent with http.client, which sends it as given (requests would upper-case the escapes the app signed).
    app = create_app(AttestKitGuard(url=service.url, backend_token=BACKEND_TOKEN, timeout=10))
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        target = "/v1/payments/caf%c3%a9?note=a%20b"
        body = json.dumps({"amount": 7}).encode()
        headers = registered.sign("POST", target, body)
        for expected in (200, 409):
            connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
            connection.request("POST", target, body=body, headers={**headers, "Content-Type": "application/json"})
            answer = connection.getresponse()
            assert answer.status == expected, answer.read()
            connection.close()
    finally:
        server.shutdown()
        thread.join()


# The reported group: feed.


def test_feed_without_proof_goes_through_reported(client, service):
    answer = send(client, "GET", "/v1/feed")
    assert answer.status_code == 200
    decision = answer.get_json()
    assert decision["trust"] is None
    assert decision["enforced"] is False
    assert decision["reported"] == "assertion_required"


def test_feed_with_an_assertion_is_proved(client, registered):
    headers = registered.sign("GET", "/v1/feed?page=2")

    answer = send(client, "GET", "/v1/feed?page=2", headers=headers)
    assert answer.status_code == 200
    decision = answer.get_json()
    assert decision["trust"] == "app_attest"
    assert decision["keyId"] == registered.key_id
    assert decision["reported"] is None


# No decision: fail closed.


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def guarded_client(url: str, token: str = BACKEND_TOKEN, timeout: float = 10):
    app = create_app(AttestKitGuard(url=url, backend_token=token, timeout=timeout))
    app.testing = True
    return app.test_client()


def test_service_down_refuses_with_503(registered):
    client = guarded_client(f"http://127.0.0.1:{free_port()}")
    body = json.dumps({"amount": 10}).encode()
    headers = registered.sign("POST", "/v1/payments/alice", body)

    refused = send(client, "POST", "/v1/payments/alice", body, headers)
    assert refused.status_code == 503
    assert error_code(refused) == "verification_unavailable"
    # The reported group is not let through without a decision either.
    assert send(client, "GET", "/v1/feed").status_code == 503


def test_service_that_does_not_answer_refuses_with_503_after_the_timeout():
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    accepted: list[socket.socket] = []
    stop = threading.Event()

    def accept():
        listener.settimeout(0.1)
        while not stop.is_set():
            try:
                accepted.append(listener.accept()[0])  # and never answer
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        client = guarded_client(f"http://127.0.0.1:{listener.getsockname()[1]}", timeout=0.5)
        start = time.monotonic()
        refused = send(client, "GET", "/v1/feed")
        assert refused.status_code == 503
        assert error_code(refused) == "verification_unavailable"
        assert time.monotonic() - start < 30  # answered, not hung
    finally:
        stop.set()
        thread.join()
        for connection in accepted:
            connection.close()
        listener.close()


def test_wrong_backend_token_refuses_with_503(service, registered):
    client = guarded_client(service.url, token="not-the-backend-token")
    body = json.dumps({"amount": 10}).encode()
    refused = send(client, "POST", "/v1/payments/alice", body, registered.sign("POST", "/v1/payments/alice", body))
    assert refused.status_code == 503
    assert error_code(refused) == "verification_unavailable"


def test_unknown_route_group_refuses_with_503(service):
    guard = AttestKitGuard(url=service.url, backend_token=BACKEND_TOKEN, timeout=10)
    app = create_app(guard)

    @app.get("/v1/misconfigured")
    @guard.protect("no-such-group")
    def misconfigured():
        return "never"

    refused = app.test_client().get("/v1/misconfigured")
    assert refused.status_code == 503
    assert error_code(refused) == "verification_unavailable"


def test_guard_refuses_to_start_without_configuration(monkeypatch):
    monkeypatch.delenv("ATTESTKIT_URL", raising=False)
    monkeypatch.delenv("ATTESTKIT_BACKEND_TOKEN", raising=False)
    with pytest.raises(ValueError):
        AttestKitGuard()
    with pytest.raises(ValueError):
        AttestKitGuard(url="http://127.0.0.1:8080")
    monkeypatch.setenv("ATTESTKIT_URL", "http://127.0.0.1:8080")
    monkeypatch.setenv("ATTESTKIT_BACKEND_TOKEN", "token")
    assert AttestKitGuard().endpoint == "http://127.0.0.1:8080/v1/requests/verify"


def test_refusal_carries_the_services_status_and_retry_after():
    app = create_app(AttestKitGuard(url="http://127.0.0.1:1", backend_token=BACKEND_TOKEN))
    with app.app_context():
        refused = _refusal(
            {"allowed": False, "group": "payments", "enforced": True, "stepUp": False, "status": 429,
             "retryAfter": 30, "error": {"code": "rate_limited", "message": "Too many requests."}}
        )
        assert refused.status_code == 429
        assert refused.headers["Retry-After"] == "30"
        assert refused.get_json() == {"error": {"code": "rate_limited", "message": "Too many requests."}}
        # A refusal without a usable status is still a refusal.
        assert _refusal({"allowed": False, "status": 200}).status_code == 403


# The request target.


@pytest.mark.parametrize(
    ("environ", "target"),
    [
        ({"RAW_URI": "/v1/a%2Fb?x=%41&y=1+2", "PATH_INFO": "/v1/a/b"}, "/v1/a%2Fb?x=%41&y=1+2"),
        ({"REQUEST_URI": "/v1/feed?page=2", "PATH_INFO": "/v1/feed"}, "/v1/feed?page=2"),
        ({"RAW_URI": "http://example.com:8080/v1/feed?page=2"}, "/v1/feed?page=2"),
        ({"RAW_URI": "http://example.com"}, "/"),
        # Without the raw target: rebuilt from the decoded path (an encoded `/` cannot be recovered).
        ({"SCRIPT_NAME": "/api", "PATH_INFO": "/v1/caf\u00c3\u00a9 au lait", "QUERY_STRING": "x=%41"},
         "/api/v1/caf%C3%A9%20au%20lait?x=%41"),
        ({"PATH_INFO": "/v1/feed", "QUERY_STRING": ""}, "/v1/feed"),
    ],
)
def test_request_target(environ, target):
    assert request_target(environ) == target


def test_the_client_is_named_only_by_an_ip_address():
    # The decision route refuses any other text (400 invalid_field): a Unix socket's peer is named by nothing.
    for address in ("198.51.100.7", "2001:db8::1", "::ffff:198.51.100.7"):
        assert _is_ip_address(address)
    for other in (None, "", "unix:/run/app.sock", "198.51.100.7, 10.0.0.1", "example.com"):
        assert not _is_ip_address(other)
