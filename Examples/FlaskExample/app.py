"""A small Flask app whose routes are guarded by `attestkit serve` (see README.md).

- ``POST /v1/payments/<payee>`` is in the route group ``payments``, which the service enforces
  (``ATTESTKIT_ENFORCEMENT_GROUPS=payments:enforce,feed:report``): a payment goes through only with a valid App
  Attest assertion bound to this request.
- ``GET /v1/feed`` is in the group ``feed``, which the service only reports on: every request goes through, and the
  handler sees whether it was proved (``g.attestkit.trust``) or what enforcing would have refused.
- ``GET /health`` is not guarded.

Run it with ``ATTESTKIT_URL=http://127.0.0.1:8080 ATTESTKIT_BACKEND_TOKEN=... flask --app app run --port 5000``.
"""

from __future__ import annotations

from flask import Flask, g, jsonify, request

from attestkit_guard import AttestKitGuard


def create_app(guard: AttestKitGuard | None = None) -> Flask:
    """The app, guarded by ``guard`` (default: configured from the environment, ``ATTESTKIT_URL`` and
    ``ATTESTKIT_BACKEND_TOKEN``)."""
    app = Flask(__name__)
    # A guarded body is read whole (its bytes are what the app signed): bound it.
    app.config["MAX_CONTENT_LENGTH"] = 1024 * 1024
    attestkit = guard or AttestKitGuard()

    @app.get("/health")
    def health():
        return jsonify(status="ok")

    @app.post("/v1/payments/<payee>")
    @attestkit.protect("payments")
    def pay(payee: str):
        payment = request.get_json(silent=True)
        if not isinstance(payment, dict) or not isinstance(payment.get("amount"), int):
            return jsonify(error={"code": "invalid_payment", "message": "amount must be an integer"}), 400
        decision = g.attestkit
        return jsonify(
            accepted=True,
            payee=payee,
            amount=payment["amount"],
            keyId=decision.key_id,
            counter=decision.counter,
            trust=decision.trust,
            stepUp=decision.step_up,
        )

    @app.get("/v1/feed")
    @attestkit.protect("feed")
    def feed():
        decision = g.attestkit
        return jsonify(
            items=["welcome"],
            trust=decision.trust,
            keyId=decision.key_id,
            enforced=decision.enforced,
            reported=decision.reported_error["code"] if decision.reported_error else None,
        )

    return app
