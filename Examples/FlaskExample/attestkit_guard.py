"""Guards Flask routes with the decision route of a running `attestkit serve`.

For each guarded request the guard sends what the app sent, unchanged, to ``POST /v1/requests/verify`` (backend
audience: ``Authorization: Bearer <backend token>``): the method, the request target (path and query exactly as
received), the exact body bytes (Base64; their SHA-256 for a large body) and the ``X-AttestKit-*`` headers, with the
route group whose enforcement applies. The service answers with the decision the Swift middleware would make.

The request goes on only when the service answers 200 with ``"allowed": true``; the decision is then on
``flask.g.attestkit`` (trust, key id, counter, step-up). A refusal (200, ``"allowed": false``) is answered with the
service's status, error envelope and ``Retry-After``. Anything else (no answer within the timeout, a connection
refused, a 401 for a wrong backend token, a 400, a body that is not a decision) is no decision: the request is
refused with 503 ``verification_unavailable`` (fail closed).

The guard must see the body first. Werkzeug keeps no copy of a body it parsed as a form: once ``request.form`` (or
``request.files``, ``request.values``) was read before the guard, by a ``before_request`` hook or an extension (a
CSRF check, say), or the stream was read without caching, the body's bytes are gone, and a guard sending what is
left (nothing) would let an assertion signed for an empty body carry any form. The guard refuses such a request
when it can tell (fewer bytes left than ``Content-Length`` says; for a chunked body, a form parsed with nothing
left), 503 ``verification_unavailable``, logged as an error: the app is misconfigured. Reading the body through
``request.get_data()`` (cached by default) or ``request.get_json()`` before the guard is fine.

A request target that is not a path starting with ``/`` (the absolute form ``http://host/path``, ``*``, or a path
without its ``/``, which werkzeug routes as if it had one) is refused with 400 ``invalid_target``, as the decision
route refuses it, without asking the service. A repeated ``X-AttestKit-*`` header reaches the app joined with commas
(WSGI joins the lines of a repeated header): it is forwarded as it is, and the service refuses it
(``header_repeated``).

Copy this file into your app; it needs Flask and requests, with urllib3 2.2 or later (its ``read1``), as
requirements.txt pins them.
"""

from __future__ import annotations

import base64
import dataclasses
import functools
import hashlib
import ipaddress
import json
import logging
import os
import time
from typing import Any, Callable
from urllib.parse import quote

import requests
import urllib3
from flask import Response, g, jsonify, request

logger = logging.getLogger("attestkit")

#: The prefix of the headers the app's AttestKit client sends (``X-AttestKit-Key-Id``, ``X-AttestKit-Assertion``,
#: ``X-AttestKit-Challenge`` or ``X-AttestKit-Timestamp``, ``X-AttestKit-Device-Token``, ``X-AttestKit-Debug-Token``).
HEADER_PREFIX = "x-attestkit-"

#: Bodies up to this size are sent as Base64; larger ones as their SHA-256 (the decision route's own request body is
#: bounded by the service's ``http.body-limit``, 64 KiB by default, and Base64 grows a body by a third).
INLINE_BODY_LIMIT = 32 * 1024

#: The longest answer of the decision route read (a decision is a few hundred bytes): a longer one is no decision.
ANSWER_LIMIT = 64 * 1024

#: The status and code of a request refused because no decision could be had.
UNAVAILABLE_STATUS = 503
UNAVAILABLE_CODE = "verification_unavailable"


@dataclasses.dataclass(frozen=True)
class Decision:
    """The service's decision about a request let through, on ``flask.g.attestkit``."""

    #: The route group decided under.
    group: str
    #: Whether the group enforced for this request (``enforce`` mode, in the rollout).
    enforced: bool
    #: What proved the request: ``app_attest``, ``devicecheck``, ``debug``, or ``None`` when nothing did (a request
    #: let through unverified by a group in ``report`` mode).
    trust: str | None
    #: The App Attest key whose assertion was verified (Base64), at trust ``app_attest``.
    key_id: str | None
    #: The key's counter after this request, at trust ``app_attest``.
    counter: int | None
    #: Whether to ask the user for step-up (the key's risk, or a weaker proof).
    step_up: bool
    #: For a request let through unverified: what enforcing would have refused (``{"code", "message"}``).
    reported_error: dict | None


class AttestKitGuard:
    """Asks ``attestkit serve`` about each request of the routes it guards.

    Configure it with arguments, or from the environment: ``ATTESTKIT_URL`` (the service, e.g.
    ``http://127.0.0.1:8080``), ``ATTESTKIT_BACKEND_TOKEN`` (one of the service's ``backend.tokens``) and
    ``ATTESTKIT_TIMEOUT`` (seconds for the call, default 2): the answer must be whole by then, else there is no
    decision. requests' own timeout bounds each step only (connecting, then each wait for data), so the guard reads
    the answer against its deadline itself (``_read_answer``); connecting and waiting for the answer's status line
    and headers are each bounded by requests at this many seconds (``attestkit serve`` sends its headers at once).
    """

    def __init__(
        self,
        url: str | None = None,
        backend_token: str | None = None,
        timeout: float | None = None,
        subject: Callable[[], str | None] | None = None,
        session: requests.Session | None = None,
    ) -> None:
        url = url if url is not None else os.environ.get("ATTESTKIT_URL", "")
        backend_token = backend_token if backend_token is not None else os.environ.get("ATTESTKIT_BACKEND_TOKEN", "")
        if timeout is None:
            timeout = float(os.environ.get("ATTESTKIT_TIMEOUT", "2"))
        if not url.startswith(("http://", "https://")):
            raise ValueError("ATTESTKIT_URL must be the service's http:// or https:// URL")
        if not backend_token:
            raise ValueError("ATTESTKIT_BACKEND_TOKEN must be set: the service refuses the decision route without it")
        if not timeout > 0:
            raise ValueError("ATTESTKIT_TIMEOUT must be a positive number of seconds")
        self.endpoint = url.rstrip("/") + "/v1/requests/verify"
        self._authorization = "Bearer " + backend_token
        self.timeout = timeout
        # The rollout subject (a user id, say); None: the service uses the key id the request sends.
        self.subject = subject
        self.session = session or requests.Session()

    def protect(self, group: str) -> Callable:
        """A decorator that guards a view under the route group ``group`` (``enforcement.groups`` of the service;
        ``default`` is ``enforcement.*``)."""

        def decorator(view: Callable) -> Callable:
            @functools.wraps(view)
            def guarded(*args: Any, **kwargs: Any) -> Any:
                refusal = self.check(group)
                if refusal is not None:
                    return refusal
                return view(*args, **kwargs)

            return guarded

        return decorator

    def check(self, group: str) -> Response | None:
        """Decides about the current request: ``None`` when it may go on (the decision is then on
        ``flask.g.attestkit``), else the response to refuse it with."""
        target = request_target(request.environ)
        if not target.startswith("/"):
            # Not a path: the absolute form (`POST http://host/path`), `*`, or a path without its `/`, which werkzeug
            # routes as if it had one. The app signs paths only, and the decision route refuses any other target
            # (invalid_target): refused here, without asking.
            return _error(400, "invalid_target", "The request target must be a path starting with /.")
        body = _request_body()
        if body is None:
            logger.error(
                "attestkit: no decision: the body was read before the guard (request.form or request.stream in a "
                "before_request hook or an extension?); guard the route before anything reads its body"
            )
            return _error(UNAVAILABLE_STATUS, UNAVAILABLE_CODE, "The request could not be verified.")
        question: dict[str, Any] = {
            "group": group,
            "method": request.method,
            "target": target,
            # As received: a header sent twice arrives joined with a comma (WSGI joins the lines of a repeated
            # header), which the service refuses (header_repeated); neither split nor trimmed here.
            "headers": {
                name: value for name, value in request.headers.items() if name.lower().startswith(HEADER_PREFIX)
            },
        }
        if len(body) <= INLINE_BODY_LIMIT:
            if body:
                question["body"] = base64.b64encode(body).decode("ascii")
        else:
            question["bodySha256"] = hashlib.sha256(body).hexdigest()
        if self.subject is not None:
            subject = self.subject()
            if subject:
                question["subject"] = subject
        client = _client_address(request.remote_addr)
        if client is not None:
            # The address the DeviceCheck fallback budgets by; behind a proxy, let werkzeug's ProxyFix set it. The
            # service takes an IP address only (a Unix socket's peer has none: one shared budget then).
            question["client"] = client

        answer = self._ask(question)
        if answer is None:
            return _error(UNAVAILABLE_STATUS, UNAVAILABLE_CODE, "The request could not be verified; try again later.")
        if answer["allowed"] is not True:
            return _refusal(answer)
        g.attestkit = Decision(
            group=answer["group"],
            enforced=answer["enforced"],
            trust=answer.get("trust"),
            key_id=answer.get("keyId"),
            counter=answer.get("counter"),
            step_up=answer.get("stepUp") is True,
            reported_error=answer.get("error"),
        )
        return None

    def _ask(self, question: dict) -> dict | None:
        """The decision, or ``None`` when the service gave none (logged without the request's headers or the
        token)."""
        deadline = time.monotonic() + self.timeout
        try:
            # Streamed, so that the answer is read against the deadline rather than requests' per-step timeout.
            with self.session.post(
                self.endpoint,
                json=question,
                headers={"Authorization": self._authorization},
                timeout=self.timeout,
                allow_redirects=False,
                stream=True,
            ) as response:
                content = _read_answer(response, deadline)
        except (requests.RequestException, urllib3.exceptions.HTTPError, OSError) as error:
            # requests' errors until the answer's headers arrived; urllib3's and the socket's while reading it.
            logger.warning("attestkit: no decision: %s", type(error).__name__)
            return None
        if content is None:
            logger.warning(
                "attestkit: no decision: no whole answer of at most %d bytes within %g s", ANSWER_LIMIT, self.timeout
            )
            return None
        if response.status_code != 200:
            logger.warning("attestkit: no decision: the service answered %d %s", response.status_code, _code(content))
            return None
        try:
            answer = json.loads(content)
        except ValueError:
            logger.warning("attestkit: no decision: the answer is not JSON")
            return None
        if (
            not isinstance(answer, dict)
            or not isinstance(answer.get("allowed"), bool)
            or not isinstance(answer.get("group"), str)
            or not isinstance(answer.get("enforced"), bool)
        ):
            logger.warning("attestkit: no decision: the answer is not a decision")
            return None
        return answer


def request_target(environ: dict) -> str:
    """The request target as the client sent it on the request line: path and query, percent-encoding and
    parameter order preserved, which is what the app signed.

    ``RAW_URI`` (gunicorn, werkzeug) or ``REQUEST_URI`` (uWSGI, mod_wsgi, werkzeug) hold it, returned unchanged: a
    target that is not a path starting with ``/`` (the absolute form ``http://host/path``, ``*``) is left as it is,
    for the guard to refuse. Cutting a path out of it would hand the service another target than the one werkzeug
    routes (``v1/pay/mallory?x=://h/v1/pay/alice`` is routed as ``v1/pay/mallory``, its "path" after ``://`` is
    ``/v1/pay/alice``). A server that sets neither leaves only the decoded ``PATH_INFO``: the target is then rebuilt
    by percent-encoding it again, which matches what the app signed only when the app encoded the path the same way
    (not for an encoded ``/``, ``%2F``, nor for lower-case or unneeded escapes); such a request is refused (403
    ``signature_invalid``), never let through.
    """
    raw = environ.get("RAW_URI") or environ.get("REQUEST_URI")
    if raw:
        # WSGI strings carry bytes as Latin-1; a target outside printable ASCII is refused by the service.
        return raw
    path = environ.get("SCRIPT_NAME", "") + environ.get("PATH_INFO", "")
    path = quote(path.encode("latin-1"), safe="/:@!$&'()*+,;=-._~")
    query = environ.get("QUERY_STRING", "")
    return path + ("?" + query if query else "")


def _refusal(answer: dict) -> Response:
    """The service's refusal as the app's answer: its status, error envelope and Retry-After."""
    status = answer.get("status")
    if not isinstance(status, int) or isinstance(status, bool) or not 400 <= status <= 599:
        status = 403
    error = answer.get("error")
    if not isinstance(error, dict) or not isinstance(error.get("code"), str):
        error = {"code": "request_refused", "message": "The request was refused."}
    response = _error(status, error["code"], str(error.get("message", "")))
    retry_after = answer.get("retryAfter")
    if isinstance(retry_after, int) and not isinstance(retry_after, bool) and retry_after >= 0:
        response.headers["Retry-After"] = str(retry_after)
    return response


def _error(status: int, code: str, message: str) -> Response:
    """The service's error envelope, ``{"error": {"code", "message"}}``."""
    response = jsonify(error={"code": code, "message": message})
    response.status_code = status
    return response


def _request_body() -> bytes | None:
    """The current request's body, its exact bytes, or ``None`` when something read them before the guard.

    ``get_data(cache=True)`` keeps the bytes for the view. It returns what is left of the stream: nothing once werkzeug
    parsed a form from it (``request.form`` caches the fields, not the bytes) or once someone read
    ``request.stream``; fewer bytes than ``Content-Length`` announced, then. Without a ``Content-Length`` (a chunked
    body), a form parsed (werkzeug's cached ``form``, in ``request.__dict__``) with an empty body left is taken as
    read too. A stream read before the guard of a chunked body that is not a form cannot be told apart: guard the
    route before anything reads its body.
    """
    body = request.get_data(cache=True)
    length = request.content_length
    if length is not None:
        return body if len(body) == length else None
    if not body and "form" in request.__dict__:
        return None
    return body


def _read_answer(response: requests.Response, deadline: float) -> bytes | None:
    """The answer's body, or ``None`` when it is not whole by ``deadline`` (``time.monotonic()``) or is longer than
    ``ANSWER_LIMIT``.

    Read as it arrives (urllib3's ``read1``: what one wait brings), each wait bounded by the time left, so that a
    service trickling its answer, or stalling halfway, is given up on at the deadline. A wait that runs out raises
    urllib3's ``ReadTimeoutError`` (or ``TimeoutError``), which the caller takes as no decision.
    """
    content = bytearray()
    connection = response.raw.connection
    while len(content) <= ANSWER_LIMIT:
        left = deadline - time.monotonic()
        if left <= 0:
            return None
        if connection is not None and connection.sock is not None:
            connection.sock.settimeout(left)
        chunk = response.raw.read1(8192, decode_content=True)
        if not chunk:
            return bytes(content)
        content += chunk
    return None


def _code(content: bytes) -> str:
    """The error code of an error answer, for the log (bounded, never the body)."""
    try:
        code = json.loads(content)["error"]["code"]
    except (ValueError, KeyError, TypeError):
        return ""
    return code if isinstance(code, str) and len(code) <= 64 else ""


def _client_address(text: str | None) -> str | None:
    """``text`` as the decision route's ``client``, an IPv4 or IPv6 address, or ``None`` when it is none.

    A link-local IPv6 peer may carry its zone (``fe80::1%eth0``), which Python's ``ipaddress`` accepts but the
    service refuses (400 ``invalid_field``: every request would be refused, 503): it is sent without it.
    """
    if not text:
        return None
    address = text.split("%", 1)[0]
    try:
        ipaddress.ip_address(address)
    except ValueError:
        return None
    return address
