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

Copy this file into your app; it needs Flask and requests.
"""

from __future__ import annotations

import base64
import dataclasses
import functools
import hashlib
import ipaddress
import logging
import os
from typing import Any, Callable
from urllib.parse import quote

import requests
from flask import Response, g, jsonify, request

logger = logging.getLogger("attestkit")

#: The prefix of the headers the app's AttestKit client sends (``X-AttestKit-Key-Id``, ``X-AttestKit-Assertion``,
#: ``X-AttestKit-Challenge`` or ``X-AttestKit-Timestamp``, ``X-AttestKit-Device-Token``, ``X-AttestKit-Debug-Token``).
HEADER_PREFIX = "x-attestkit-"

#: Bodies up to this size are sent as Base64; larger ones as their SHA-256 (the decision route's own request body is
#: bounded by the service's ``http.body-limit``, 64 KiB by default, and Base64 grows a body by a third).
INLINE_BODY_LIMIT = 32 * 1024

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
    ``ATTESTKIT_TIMEOUT`` (seconds for the whole call, default 2).
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
        body = request.get_data(cache=True)
        question: dict[str, Any] = {
            "group": group,
            "method": request.method,
            "target": request_target(request.environ),
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
        if _is_ip_address(request.remote_addr):
            # The address the DeviceCheck fallback budgets by; behind a proxy, let werkzeug's ProxyFix set it. The
            # service takes an IP address only (a Unix socket's peer has none: one shared budget then).
            question["client"] = request.remote_addr

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
        try:
            response = self.session.post(
                self.endpoint,
                json=question,
                headers={"Authorization": self._authorization},
                timeout=self.timeout,
                allow_redirects=False,
            )
        except requests.RequestException as error:
            logger.warning("attestkit: no decision: %s", type(error).__name__)
            return None
        if response.status_code != 200:
            logger.warning("attestkit: no decision: the service answered %d %s", response.status_code, _code(response))
            return None
        try:
            answer = response.json()
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

    ``RAW_URI`` (gunicorn, werkzeug) or ``REQUEST_URI`` (uWSGI, mod_wsgi, werkzeug) hold it. A server that sets
    neither leaves only the decoded ``PATH_INFO``: the target is then rebuilt by percent-encoding it again, which
    matches what the app signed only when the app encoded the path the same way (not for an encoded ``/``, ``%2F``,
    nor for lower-case or unneeded escapes); such a request is refused (403 ``signature_invalid``), never let
    through.
    """
    raw = environ.get("RAW_URI") or environ.get("REQUEST_URI")
    if raw:
        # WSGI strings carry bytes as Latin-1; a target outside printable ASCII is refused by the service.
        target = raw
        if not target.startswith("/") and "://" in target:
            # Absolute form (`GET http://host/path HTTP/1.1`): the path and query are what the app signed.
            rest = target.split("://", 1)[1]
            slash = rest.find("/")
            target = rest[slash:] if slash >= 0 else "/"
        return target
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


def _code(response: requests.Response) -> str:
    """The error code of an error answer, for the log (bounded, never the body)."""
    try:
        code = response.json()["error"]["code"]
    except (ValueError, KeyError, TypeError):
        return ""
    return code if isinstance(code, str) and len(code) <= 64 else ""


def _is_ip_address(text: str | None) -> bool:
    """Whether ``text`` is an IPv4 or IPv6 address, as the decision route's ``client`` must be."""
    if not text:
        return False
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True
