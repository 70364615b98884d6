import AttestKitWire
public import Foundation
#if canImport(FoundationNetworking)
    public import FoundationNetworking
#endif

/// Sends the app's requests with the strongest proof its ``AttestationStrategy`` allows that the device can make
/// now, and maps refusals to ``AttestKitClientError``.
///
/// For every request it tries the strategy's levels in order:
/// - ``AttestationLevel/appAttest``: the assertion headers of its ``AppAttestManager`` (`X-AttestKit-Key-Id`,
///   `X-AttestKit-Assertion`, `X-AttestKit-Timestamp` or `X-AttestKit-Challenge`). When the manager cannot sign
///   now (``AttestKitClientError/Code/unavailable``: unsupported, Apple unavailable, a registration backing off;
///   ``AttestKitClientError/Code/attestationDeferred``: the service's ramp defers this install's attestation)
///   the next level serves the request.
/// - ``AttestationLevel/deviceCheck``: a fresh DeviceCheck token in `X-AttestKit-Device-Token`; a failure skips
///   DeviceCheck for ``AttestationStrategy/deviceCheckBackoff``.
/// - ``AttestationLevel/riskBased``, ``AttestationLevel/degraded``: the request as it is, through
///   ``AttestationStrategy/additionalVerification``.
///
/// Refusals by the AttestKit verification (exact status and code, see
/// ``AttestKitClientError/VerificationRefusal``) are handled by the manager: a request overtaken by a later
/// assertion is sent again (at most ten times), a key the service does not know or whose counter went back is
/// replaced (at most once per request), a clock outside the service's window switches to service challenges, and
/// `key_revoked` is reported as ``AttestKitClientError/Code/keyRevoked``. Any other answer other than 2xx throws
/// ``AttestKitClientError/Code/httpError`` with the status and, when the body is the service's
/// `{"error": {"code", "message"}}`, its code and message; it is never re-sent with a weaker proof.
///
/// Where the manager's ``AppAttestManager/Configuration/debugToken`` is sent (a Simulator build, or enabled for
/// tests), the App Attest level carries only `X-AttestKit-Debug-Token`: nothing is attested or asserted.
/// ``sessionToken()`` gets, caches and shares the service's session tokens.
public struct AttestKitHTTPClient: Sendable {
    /// The strategy applied to every request.
    public let strategy: AttestationStrategy
    /// How long before its expiry a cached session token is replaced (``sessionToken()``).
    public let tokenRefreshMargin: TimeInterval
    let manager: AppAttestManager?
    private let deviceCheck: (any DeviceCheckTokenProvider)?
    let transport: any HTTPTransport
    let now: @Sendable () -> Date
    private let levels = LevelRecord()
    let sessionTokens = SessionTokenCache()

    /// Creates a client.
    ///
    /// - Parameters:
    ///   - manager: The App Attest manager, for ``AttestationLevel/appAttest`` (skipped without one).
    ///   - deviceCheck: The DeviceCheck provider, for ``AttestationLevel/deviceCheck`` (skipped without one).
    ///   - strategy: The levels and hooks; ``AttestationStrategy/standard`` by default.
    ///   - transport: The transport (URLSession by default).
    ///   - tokenRefreshMargin: How long before its expiry a cached session token is replaced (60 seconds).
    ///   - now: The clock of the DeviceCheck backoff and of session tokens' expiry (injectable for tests).
    public init(
        manager: AppAttestManager?,
        deviceCheck: (any DeviceCheckTokenProvider)? = nil,
        strategy: AttestationStrategy = .standard,
        transport: any HTTPTransport = URLSessionTransport(),
        tokenRefreshMargin: TimeInterval = 60,
        now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.tokenRefreshMargin = max(0, tokenRefreshMargin)
        self.strategy = strategy
        self.manager = manager
        self.deviceCheck = deviceCheck
        self.transport = transport
        self.now = now
    }

    /// The level the last answered request was served at, `nil` before the first.
    public var currentLevel: AttestationLevel? { levels.current }

    /// Sends `request` with the strongest proof available.
    /// - Returns: The body and the response of a 2xx answer.
    /// - Throws: ``AttestKitClientError``.
    public func data(for request: URLRequest) async throws -> (Data, HTTPURLResponse) {
        let (data, response, _) = try await serve(request)
        return (data, response)
    }

    /// Sends `request` with the strongest proof available and decodes the 2xx answer's JSON body as `T`.
    ///
    /// ```swift
    /// let order = try await client.performSecureRequest(request, as: Order.self)
    /// if order.level > .deviceCheck { showLimitedMode() }
    /// ```
    /// - Parameters:
    ///   - request: The request.
    ///   - type: The type of the answer's body.
    ///   - decoder: The JSON decoder.
    /// - Returns: The decoded body, the level the request was served at, and the answer's status and headers.
    /// - Throws: ``AttestKitClientError``; ``AttestKitClientError/Code/invalidResponse`` when the body is not a `T`.
    public func performSecureRequest<T: Decodable>(
        _ request: URLRequest, as type: T.Type = T.self, decoder: JSONDecoder = JSONDecoder()
    ) async throws -> SecureResponse<T> {
        let (data, response, level) = try await serve(request)
        let value: T
        do {
            value = try decoder.decode(T.self, from: data)
        } catch {
            throw AttestKitClientError(.invalidResponse, reason: "the answer is not a \(T.self)")
        }
        var headers: [String: String] = [:]
        for case (let name as String, let field as String) in response.allHeaderFields { headers[name] = field }
        return SecureResponse(value: value, level: level, status: response.statusCode, headers: headers)
    }

    // MARK: The levels

    private func serve(_ request: URLRequest) async throws -> (Data, HTTPURLResponse, AttestationLevel) {
        var unavailable: AttestKitClientError?
        for level in strategy.levels {
            let answer: (Data, HTTPURLResponse)?
            switch level {
            case .appAttest:
                guard let manager else { continue }
                do {
                    answer = try await sendWithAssertion(request, manager, over: transport)
                } catch let error as AttestKitClientError
                    where error.code == .unavailable || error.code == .attestationDeferred || error.code == .keyStore
                {
                    unavailable = error
                    answer = nil
                }
            case .deviceCheck:
                answer = try await sendWithDeviceCheck(request, &unavailable)
            case .riskBased, .degraded:
                let verified = try await strategy.additionalVerification?(request, level) ?? request
                answer = try await send(verified, over: transport)
            }
            guard let answer else { continue }
            if levels.record(level), let onLevelChange = strategy.onLevelChange { onLevelChange(level) }
            return (answer.0, answer.1, level)
        }
        throw unavailable
            ?? AttestKitClientError(
                .unsupported, reason: "no level of the strategy has what it needs to prove the request")
    }

    private func sendWithDeviceCheck(
        _ request: URLRequest, _ unavailable: inout AttestKitClientError?
    ) async throws -> (Data, HTTPURLResponse)? {
        guard let deviceCheck, deviceCheck.isSupported,
            !levels.deviceCheckBackingOff(now(), atMost: strategy.deviceCheckBackoff)
        else { return nil }
        let token: Data
        do {
            token = try await deviceCheck.generateToken()
        } catch {
            levels.deviceCheckFailed(until: now().addingTimeInterval(strategy.deviceCheckBackoff))
            let deviceError = error as? DeviceServiceError ?? .unknown
            unavailable = AttestKitClientError(
                .unavailable, deviceError: deviceError, reason: "no DeviceCheck token: \(deviceError)")
            return nil
        }
        var request = request
        request.setValue(token.base64EncodedString(), forHTTPHeaderField: AttestKitHeaderNames.deviceToken)
        return try await send(request, over: transport)
    }

    /// Sends `request` over `transport` with an assertion of `manager` (or, where it is enabled, the debug token
    /// instead), handling the AttestKit verification's refusals.
    func sendWithAssertion(
        _ request: URLRequest, _ manager: AppAttestManager, over transport: any HTTPTransport
    ) async throws -> (Data, HTTPURLResponse) {
        let (data, response, _) = try await sendAsserted(request, manager, over: transport)
        return (data, response)
    }

    /// ``sendWithAssertion(_:_:over:)``, with the key whose assertion the service accepted (`nil` where the debug
    /// token was sent).
    func sendAsserted(
        _ request: URLRequest, _ manager: AppAttestManager, over transport: any HTTPTransport
    ) async throws -> (data: Data, response: HTTPURLResponse, keyID: String?) {
        if let debugToken = manager.configuration.activeDebugToken {
            var request = request
            request.setValue(debugToken, forHTTPHeaderField: AttestKitHeaderNames.debugToken)
            let (data, response) = try await send(request, over: transport)
            return (data, response, nil)
        }
        var resends = 0
        var replaced = false
        while true {
            let (signed, ticket) = try await manager.signed(request)
            let refused: AttestKitClientError
            do {
                let (data, response) = try await send(signed, over: transport)
                _ = await manager.answered(ticket, refusal: nil, accepted: true)
                return (data, response, ticket.keyID)
            } catch let error as AttestKitClientError {
                refused = error
            } catch {
                _ = await manager.answered(ticket, refusal: nil)
                throw AttestKitClientError.wrapping(error, as: .transport, "the request failed")
            }
            switch await manager.answered(ticket, refusal: refused.verificationRefusal) {
            case .done:
                throw refused
            case .revoked:
                throw Self.keyRevoked(refused)
            case .resend(let replacedKey):
                if replacedKey {
                    guard !replaced else { throw refused }
                    replaced = true
                }
                guard resends < Self.maximumResends else { throw refused }
                resends += 1
            }
        }
    }

    /// The service's refusal `refused` of a revoked key, as ``AttestKitClientError/Code/keyRevoked``.
    static func keyRevoked(_ refused: AttestKitClientError) -> AttestKitClientError {
        AttestKitClientError(
            .keyRevoked, status: refused.status, serviceCode: refused.serviceCode, reason: refused.reason)
    }

    /// The most times one request is sent again (overtaken by later assertions, a clock switch, a new key).
    private static let maximumResends = 10

    func send(_ request: URLRequest, over transport: any HTTPTransport) async throws -> (Data, HTTPURLResponse) {
        let (data, response): (Data, HTTPURLResponse)
        do {
            (data, response) = try await transport.send(request)
        } catch {
            throw AttestKitClientError.wrapping(error, as: .transport, "the request failed")
        }
        try AttestKitService.check(data, response)
        return (data, response)
    }
}

/// A decoded answer of ``AttestKitHTTPClient/performSecureRequest(_:as:decoder:)``.
public struct SecureResponse<T> {
    /// The decoded body.
    public let value: T
    /// The level the request was served at.
    public let level: AttestationLevel
    /// The HTTP status (2xx).
    public let status: Int
    /// The answer's headers.
    public let headers: [String: String]
}

extension SecureResponse: Sendable where T: Sendable {}

/// The client's memory across requests: the last level used, and until when DeviceCheck is skipped.
private final class LevelRecord: @unchecked Sendable {
    // NSLock rather than `Mutex`: the client builds for iOS 14, `Mutex` needs iOS 18.
    private let lock = NSLock()
    private var last: AttestationLevel?
    private var deviceCheckNotBefore: Date?

    var current: AttestationLevel? { locked { last } }

    /// Records `level`; `true` when it differs from the previous one (the first App Attest level excepted).
    func record(_ level: AttestationLevel) -> Bool {
        locked {
            defer { last = level }
            return last.map { $0 != level } ?? (level != .appAttest)
        }
    }

    /// Whether DeviceCheck is skipped at `now`: its wait is ahead, by no more than `longest` (the backoff it was set
    /// with). One further ahead was set while the device's clock was ahead, and is over.
    func deviceCheckBackingOff(_ now: Date, atMost longest: TimeInterval) -> Bool {
        locked {
            guard let remaining = deviceCheckNotBefore?.timeIntervalSince(now) else { return false }
            return remaining > 0 && remaining <= longest
        }
    }

    func deviceCheckFailed(until date: Date) { locked { deviceCheckNotBefore = date } }

    private func locked<Value>(_ body: () -> Value) -> Value {
        lock.lock()
        defer { lock.unlock() }
        return body()
    }
}
