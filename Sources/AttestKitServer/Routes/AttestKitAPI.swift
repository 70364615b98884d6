import AttestKit
import AttestKitApple
import AttestKitStore
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore

/// The HTTP API's handlers and what they share. Each group of routes lives in its own extension file.
struct AttestKitAPI: Sendable {
    let configuration: ServerConfiguration
    let store: any AttestationStore
    let registrar: AttestationRegistrar
    let gate: AssertionGate
    let apple: AppleServices?
    let metrics: ServerMetrics
    let attestationsPerIP: RateLimiter
    let attestationsPerApp: RateLimiter
    let challengesPerIP: RateLimiter
    let now: @Sendable () -> Date

    var riskPolicy: RiskPolicy { RiskPolicy(threshold: configuration.policy.riskMetricThreshold) }

    /// Every route of the API, as `METHOD /path` (path parameters as `{name}`), in registration order. The
    /// OpenAPI document must list the same.
    static let routes: [String] = [
        "POST /v1/challenges", "POST /v1/attestations", "POST /v1/assertions/verify",
        "POST /v1/devicecheck/query", "POST /v1/devicecheck/update", "POST /v1/devicecheck/validate",
        "GET /v1/keys/{keyId}", "POST /v1/keys/{keyId}/revoke", "GET /health", "GET /ready", "GET /metrics",
    ]

    /// Registers every route on `router`.
    func register(on router: Router<ServerRequestContext>) {
        router.post("/v1/challenges") { request, context in try await issueChallenge(request, context) }
        router.post("/v1/attestations") { request, context in try await attest(request, context) }
        router.post("/v1/assertions/verify") { request, context in try await verifyAssertion(request, context) }
        router.post("/v1/devicecheck/query") { request, context in try await deviceCheckQuery(request, context) }
        router.post("/v1/devicecheck/update") { request, context in try await deviceCheckUpdate(request, context) }
        router.post("/v1/devicecheck/validate") { request, context in
            try await deviceCheckValidate(request, context)
        }
        router.get("/v1/keys/{keyId}") { request, context in try await adminKey(request, context) }
        router.post("/v1/keys/{keyId}/revoke") { request, context in try await adminRevoke(request, context) }
        router.get("/health") { _, _ in JSONResponse.make(.ok, ["status": "ok"]) }
        router.get("/ready") { _, _ in try await ready() }
        router.get("/metrics") { _, _ in try await metricsExposition() }
    }

    /// Takes one request from a limiter, or throws 429.
    func limit(_ limiter: RateLimiter, _ key: String, name: String) throws {
        if let wait = limiter.acquire(key, now: now()) {
            metrics.rateLimited(name)
            throw APIError(
                .tooManyRequests, "rate_limited", "too many requests (\(name)); retry later", retryAfter: wait)
        }
    }

    /// 200 `{"status": "ready"}` when the store answers, 503 otherwise.
    private func ready() async throws -> Response {
        do {
            _ = try await store.keyCounts()
        } catch {
            throw APIError(.serviceUnavailable, "storage_unavailable", "storage is unavailable")
        }
        return JSONResponse.make(.ok, ["status": "ready"])
    }

    /// The Prometheus exposition, with the key gauges refreshed from the store.
    private func metricsExposition() async throws -> Response {
        if let counts = try? await store.keyCounts() { metrics.keys(counts) }
        var headers = HTTPFields()
        headers[.contentType] = "text/plain; version=0.0.4; charset=utf-8"
        return Response(
            status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: metrics.exposition())))
    }
}

/// JSON answers.
enum JSONResponse {
    /// Encodes `value` as the body of a response with `status`.
    static func make(_ status: HTTPResponse.Status, _ value: some Encodable) -> Response {
        var headers = HTTPFields()
        headers[.contentType] = "application/json; charset=utf-8"
        headers[.cacheControl] = "no-store"
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        guard let data = try? encoder.encode(value) else {
            return Response(status: .internalServerError, headers: headers)
        }
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }
}
