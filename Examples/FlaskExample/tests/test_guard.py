"""The Flask app against a real `attestkit serve`: a simulated device signs requests, Flask's test client sends them.

`payments` is enforced, `feed` reported (ATTESTKIT_ENFORCEMENT_GROUPS=payments:enforce,feed:report). Where the real
service cannot play the part (an answer that is not a decision, one trickling in), a stub answers instead.
"""

from __future__ import annotations

import contextlib
import http.client
import http.server
import io
import json
import socket
import threading
import time
from typing import Callable, Iterator

import pytest
import requests
from flask import g, jsonify, request
from werkzeug.serving import make_server

from app import create_app
from attestkit_guard import AttestKitGuard, _client_address, _refusal, _request_body, request_target
from attestkit_service import BACKEND_TOKEN


def send(client, method: str, target: str, body: bytes = b"", headers: dict | None = None):
    """Sends ``body`` to ``target`` exactly as given (path and query unchanged)."""
    return client.open(target, method=method, data=body, headers=headers or {}, content_type="application/json")


def error_code(response) -> str | None:
    return (response.get_json(silent=True) or {}).get("error", {}).get("code")


class RecordingSession(requests.Session):
    """A requests session that keeps each question the guard asks (the JSON it posts), then asks it."""

    def __init__(self) -> None:
        super().__init__()
        self.questions: list[dict] = []

    def post(self, url, **kwargs):
        self.questions.append(kwargs.get("json"))
        return super().post(url, **kwargs)


def recording_guard(url: str, timeout: float = 10) -> tuple[AttestKitGuard, RecordingSession]:
    session = RecordingSession()
    return AttestKitGuard(url=url, backend_token=BACKEND_TOKEN, timeout=timeout, session=session), session


@contextlib.contextmanager
def serving(app) -> Iterator[int]:
    """``app`` on werkzeug's own server (as `flask run` uses it, which writes the request line's target into
    ``RAW_URI``) on a free port, yielded."""
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.port
    finally:
        server.shutdown()
        thread.join()


def raw_request(
    port: int, method: str, target: str, body: bytes = b"", headers: list[tuple[str, str]] = ()
) -> tuple[int, dict | None]:
    """Sends a request with http.client, the target as given (requests would upper-case escapes, and cannot send a
    target that is not a path) and each header line as given, a name twice included; its status and JSON answer."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        connection.putrequest(method, target, skip_accept_encoding=True)
        for name, value in [*headers, ("Content-Length", str(len(body)))]:
            connection.putheader(name, value)
        connection.endheaders(body)
        answer = connection.getresponse()
        content = answer.read()
        try:
            return answer.status, json.loads(content)
        except ValueError:
            return answer.status, None
    finally:
        connection.close()


def within(seconds: float, call: Callable):
    """``call()`` in a thread: what it returns, or the test failed when it has not returned within ``seconds`` (a
    guard without a bound on its call would hang the test otherwise)."""
    outcome: dict = {}

    def run() -> None:
        try:
            outcome["value"] = call()
        except BaseException as error:  # handed to the test's thread
            outcome["error"] = error

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        pytest.fail(f"no answer within {seconds} s: the guard's call to the service is not bounded")
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


@contextlib.contextmanager
def stub_service(answer: Callable[[http.server.BaseHTTPRequestHandler], None]) -> Iterator[str]:
    """A stand-in for the decision route on a free port, whose POST is answered by ``answer(handler)`` once the
    question was read; its URL, yielded."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length", "0")))
            try:
                answer(self)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the guard gave up

        def log_message(self, *arguments) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        thread.join()
        server.server_close()


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
    # Werkzeug's own server writes the request line's target into RAW_URI; http.client sends it as given.
    app = create_app(AttestKitGuard(url=service.url, backend_token=BACKEND_TOKEN, timeout=10))
    target = "/v1/payments/caf%c3%a9?note=a%20b"
    body = json.dumps({"amount": 7}).encode()
    headers = [*registered.sign("POST", target, body).items(), ("Content-Type", "application/json")]
    with serving(app) as port:
        for expected in (200, 409):
            status, answer = raw_request(port, "POST", target, body, headers)
            assert status == expected, answer


def test_a_target_that_is_not_a_path_is_refused_over_a_socket(service, registered):
    # Werkzeug routes `v1/payments/mallory?...` (no leading `/`) as /v1/payments/mallory; a guard that took the
    # "path" after `://` in its query would ask about /v1/payments/alice, whose assertion the attacker replays.
    guard, session = recording_guard(service.url)
    app = create_app(guard)

    @app.post("/v1/x")
    @guard.protect("payments")
    def reached():
        return jsonify(reached=True)

    body = json.dumps({"amount": 10}).encode()
    signed = {target: [*registered.sign("POST", target, body).items(), ("Content-Type", "application/json")]
              for target in ("/v1/payments/alice", "/z")}
    with serving(app) as port:
        for target, signed_for in [
            ("v1/payments/mallory?x=://h/v1/payments/alice", "/v1/payments/alice"),
            ("v1/x?y=://h/z", "/z"),
            ("http://h/v1/payments/alice", "/v1/payments/alice"),  # the absolute form, refused as the route does
        ]:
            status, answer = raw_request(port, "POST", target, body, signed[signed_for])
            assert status == 400, (target, answer)
            assert answer["error"]["code"] == "invalid_target"
        # Refused without asking the service: the assertions are not spent, the genuine request still passes.
        assert session.questions == []
        status, answer = raw_request(port, "POST", "/v1/payments/alice", body, signed["/v1/payments/alice"])
        assert status == 200, answer
        assert session.questions[-1]["target"] == "/v1/payments/alice"


def test_a_repeated_attestkit_header_is_forwarded_joined_and_refused(service, registered):
    # WSGI joins the lines of a header sent twice with a comma; the guard forwards that value as it is (neither
    # split nor trimmed), and the service takes a comma as the repeated header it was: 400 header_repeated.
    guard, session = recording_guard(service.url)
    body = json.dumps({"amount": 10}).encode()
    headers = [*registered.sign("POST", "/v1/payments/alice", body).items(), ("Content-Type", "application/json")]
    with serving(create_app(guard)) as port:
        status, answer = raw_request(
            port, "POST", "/v1/payments/alice", body,
            [*headers, ("X-AttestKit-Device-Token", "token-a"), ("x-attestkit-device-token", "token-b")],
        )
        sent = {name.lower(): value for name, value in session.questions[-1]["headers"].items()}
        assert sent["x-attestkit-device-token"] == "token-a,token-b"
        assert status == 400, answer
        assert answer["error"]["code"] == "header_repeated"
        # Refused before verification: the assertion is not spent.
        status, answer = raw_request(port, "POST", "/v1/payments/alice", body, headers)
        assert status == 200, answer


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
    # Bounded: the call runs in a thread the test stops waiting for, so that a guard without a timeout fails the test
    # rather than hanging it.
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
        refused = within(10, lambda: send(client, "GET", "/v1/feed"))
        assert refused.status_code == 503
        assert error_code(refused) == "verification_unavailable"
    finally:
        stop.set()
        thread.join()
        for connection in accepted:
            connection.close()
        listener.close()


def test_service_that_trickles_its_answer_refuses_with_503_at_the_deadline():
    # Headers at once, then an allowing decision a byte every 50 ms (7 s in all): each wait is far below requests'
    # per-read timeout, so only the guard's deadline over the whole call stops it.
    decision = json.dumps({"allowed": True, "group": "feed", "enforced": False, "stepUp": False}).encode()
    decision += b" " * (140 - len(decision))

    def trickle(handler: http.server.BaseHTTPRequestHandler) -> None:
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(decision)))
        handler.end_headers()
        for byte in decision:
            handler.wfile.write(bytes([byte]))
            handler.wfile.flush()
            time.sleep(0.05)

    with stub_service(trickle) as url:
        client = guarded_client(url, timeout=1)
        start = time.monotonic()
        refused = within(10, lambda: send(client, "GET", "/v1/feed"))
        assert refused.status_code == 503
        assert error_code(refused) == "verification_unavailable"
        assert time.monotonic() - start < 4  # the 1 s deadline, with room for a loaded machine, not the 7 s trickle


@pytest.mark.parametrize(
    "content",
    [
        b'{"allowed": true}',  # no group, no enforced
        b'{"allowed": "true", "group": "feed", "enforced": false}',
        b'{"allowed": true, "group": "feed", "enforced": "no"}',
        b'[{"allowed": true, "group": "feed", "enforced": false}]',
        b"allowed",
        b"",
    ],
)
def test_a_200_answer_that_is_not_a_decision_refuses_with_503(content):
    def answer(handler: http.server.BaseHTTPRequestHandler) -> None:
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(content)))
        handler.end_headers()
        handler.wfile.write(content)

    with stub_service(answer) as url:
        client = guarded_client(url)
        for method, target in (("GET", "/v1/feed"), ("POST", "/v1/payments/alice")):
            refused = within(10, lambda: send(client, method, target, b"{}"))
            assert refused.status_code == 503, (target, refused.get_data(as_text=True))
            assert error_code(refused) == "verification_unavailable"


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
        # Not a path: left as it is, for the guard to refuse (never a path cut out of it).
        ({"RAW_URI": "http://example.com:8080/v1/feed?page=2"}, "http://example.com:8080/v1/feed?page=2"),
        ({"RAW_URI": "v1/payments/mallory?x=://h/v1/payments/alice"}, "v1/payments/mallory?x=://h/v1/payments/alice"),
        ({"REQUEST_URI": "v1/x?y=://h/z", "PATH_INFO": "v1/x"}, "v1/x?y=://h/z"),
        ({"RAW_URI": "*"}, "*"),
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
        assert _client_address(address) == address
    # A link-local peer's zone: accepted by Python's ipaddress, refused by the route; sent without it.
    assert _client_address("fe80::1%eth0") == "fe80::1"
    assert _client_address("fe80::1%25") == "fe80::1"
    for other in (None, "", "unix:/run/app.sock", "198.51.100.7, 10.0.0.1", "example.com", "%eth0"):
        assert _client_address(other) is None


def test_a_scoped_ipv6_client_is_sent_without_its_zone(service):
    # Sent as it is, every request from such a peer would be refused by the route (400 invalid_field), so 503.
    guard, session = recording_guard(service.url)
    app = create_app(guard)
    answer = app.test_client().get("/v1/feed", environ_overrides={"REMOTE_ADDR": "fe80::1%eth0"})
    assert answer.status_code == 200, answer.get_data(as_text=True)
    assert session.questions[-1]["client"] == "fe80::1"


# The body: the guard must see it first.


def guarded_transfers(service_url: str, before: Callable[[], None]):
    """The app with a guarded form route, ``POST /v1/transfers`` (group `payments`, echoing the form), and ``before``
    run as a ``before_request`` hook; its test client and its guard's recording session."""
    guard, session = recording_guard(service_url)
    app = create_app(guard)
    app.before_request(before)

    @app.post("/v1/transfers")
    @guard.protect("payments")
    def transfer():
        return jsonify(form=request.form.to_dict(), keyId=g.attestkit.key_id)

    app.testing = True
    return app.test_client(), session


def read_form() -> None:
    """A hook reading the form, as a CSRF extension reads its token."""
    request.form.get("csrf_token")


def read_data_then_form() -> None:
    """A hook reading the body's bytes (cached), then the form (parsed from them)."""
    request.get_data()
    request.form.get("csrf_token")


def test_a_form_read_before_the_guard_is_refused(service, registered):
    # A before_request hook (a CSRF extension, say) parses the form: werkzeug keeps the fields, not the bytes, and
    # the guard would have sent no body, so that an assertion signed for an empty body would carry any form.
    client, session = guarded_transfers(service.url, read_form)
    form = {"Content-Type": "application/x-www-form-urlencoded"}
    for signed_body in (b"", b"to=mallory&amount=1000"):
        headers = {**registered.sign("POST", "/v1/transfers", signed_body), **form}
        refused = client.post("/v1/transfers", data=b"to=mallory&amount=1000", headers=headers)
        assert refused.status_code == 503, refused.get_data(as_text=True)
        assert error_code(refused) == "verification_unavailable"
    assert session.questions == []  # refused without asking: nothing spent


def test_a_body_read_through_get_data_before_the_guard_is_fine(service, registered):
    # get_data() caches the bytes (and a form parsed afterwards is parsed from them): the guard sees them all.
    client, session = guarded_transfers(service.url, read_data_then_form)
    body = b"to=alice&amount=10"
    headers = {**registered.sign("POST", "/v1/transfers", body), "Content-Type": "application/x-www-form-urlencoded"}
    accepted = client.post("/v1/transfers", data=body, headers=headers)
    assert accepted.status_code == 200, accepted.get_data(as_text=True)
    assert accepted.get_json() == {"form": {"to": "alice", "amount": "10"}, "keyId": registered.key_id}


@pytest.mark.parametrize(
    ("content_type", "body", "read_before", "expected"),
    [
        # A Content-Length: fewer bytes left than it says is a body read before.
        ("application/x-www-form-urlencoded", b"to=mallory", read_form, None),
        ("application/json", b'{"a": 1}', lambda: request.stream.read(), None),
        ("application/json", b'{"a": 1}', lambda: request.get_json(), b'{"a": 1}'),
        ("application/json", b'{"a": 1}', read_form, b'{"a": 1}'),  # not a form: the stream is left
        ("application/x-www-form-urlencoded", b"", read_form, b""),
    ],
)
def test_request_body_with_a_content_length(content_type, body, read_before, expected):
    app = create_app(AttestKitGuard(url="http://127.0.0.1:1", backend_token=BACKEND_TOKEN))
    with app.test_request_context("/v1/transfers", method="POST", data=body, content_type=content_type):
        read_before()
        assert _request_body() == expected


@pytest.mark.parametrize(
    ("content_type", "read_before", "expected"),
    [
        # Chunked, no Content-Length: a form parsed with nothing left is a body read before.
        ("application/x-www-form-urlencoded", read_form, None),
        ("application/x-www-form-urlencoded", lambda: None, b"to=mallory"),
        ("application/x-www-form-urlencoded", read_data_then_form, b"to=mallory"),
    ],
)
def test_request_body_of_a_chunked_request(content_type, read_before, expected):
    app = create_app(AttestKitGuard(url="http://127.0.0.1:1", backend_token=BACKEND_TOKEN))
    with app.test_request_context(
        "/v1/transfers", method="POST", input_stream=io.BytesIO(b"to=mallory"), content_type=content_type,
        headers={"Transfer-Encoding": "chunked"}, environ_overrides={"wsgi.input_terminated": True},
    ):
        assert request.content_length is None
        read_before()
        assert _request_body() == expected
