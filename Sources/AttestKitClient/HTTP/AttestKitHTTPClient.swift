import AttestKitWire
public import Foundation
#if canImport(FoundationNetworking)
    public import FoundationNetworking
#endif

/// Sends the app's requests with the proof its ``IntegrityStrategy`` calls for, and maps refusals to
/// ``AttestKitClientError``.
///
/// With ``IntegrityStrategy/appAttest`` every request gets the assertion headers of its ``AppAttestManager``
/// (`X-AttestKit-Key-Id`, `X-AttestKit-Assertion`, `X-AttestKit-Timestamp` or `X-AttestKit-Challenge`). When the
/// answer says the service no longer accepts the key (`key_not_found`, `key_revoked`), the client resets the key,
/// attests a new one and sends the request again. A `409 counter_not_increasing` means one of two things:
/// concurrent requests of one key reached the server out of order (another assertion of this app, signed later,
/// is on its way or was accepted: the request is sent again with a fresh assertion), or, when there is no such
/// assertion, the device's counter is behind the server's, as after restoring a backup: the key is replaced. A
/// request replaces the key at most once and is sent again after being overtaken at most ten times.
///
/// With ``IntegrityStrategy/deviceCheck`` every request gets a fresh DeviceCheck token in
/// `X-AttestKit-Device-Token`; with ``IntegrityStrategy/riskBased`` and ``IntegrityStrategy/limited`` requests
/// are sent as they are.
///
/// Any answer other than 2xx throws ``AttestKitClientError/Code/httpError`` with the status and, when the body is
/// the service's `{"error": {"code", "message"}}`, its code and message.
public struct AttestKitHTTPClient: Sendable {
    /// The strategy applied to every request.
    public let strategy: IntegrityStrategy
    private let manager: AppAttestManager?
    private let deviceCheck: (any DeviceCheckTokenProvider)?
    private let transport: any HTTPTransport

    /// Creates a client that signs every request with App Attest.
    public init(manager: AppAttestManager, transport: any HTTPTransport = URLSessionTransport()) {
        self.init(strategy: .appAttest, manager: manager, deviceCheck: nil, transport: transport)
    }

    /// Creates a client for `strategy` (usually from
    /// ``IntegrityStrategy/choose(appAttest:deviceCheck:riskSignalsAvailable:)``).
    ///
    /// - Parameters:
    ///   - strategy: The strategy.
    ///   - manager: Required for ``IntegrityStrategy/appAttest``.
    ///   - deviceCheck: Required for ``IntegrityStrategy/deviceCheck``.
    ///   - transport: The transport (URLSession by default).
    public init(
        strategy: IntegrityStrategy,
        manager: AppAttestManager?,
        deviceCheck: (any DeviceCheckTokenProvider)?,
        transport: any HTTPTransport = URLSessionTransport()
    ) {
        self.strategy = strategy
        self.manager = manager
        self.deviceCheck = deviceCheck
        self.transport = transport
    }

    /// Sends `request` with the strategy's proof.
    /// - Returns: The body and the response of a 2xx answer.
    /// - Throws: ``AttestKitClientError``.
    public func data(for request: URLRequest) async throws -> (Data, HTTPURLResponse) {
        switch strategy {
        case .appAttest:
            guard let manager else {
                throw AttestKitClientError(.unsupported, reason: "the App Attest strategy needs a manager")
            }
            var overtaken = 0
            var resets = 0
            while true {
                let (signed, ticket) = try await manager.signed(request)
                let answer: (Data, HTTPURLResponse)
                do {
                    answer = try await send(signed)
                } catch let error as AttestKitClientError
                    where error.status == 409 && error.serviceCode == Self.counterNotIncreasing
                {
                    // Overtaken by a later assertion of the same key (send again), or the device's counter is
                    // behind the server's (replace the key).
                    if await manager.finish(ticket, counterRefused: true) {
                        guard resets < Self.maximumResets else { throw error }
                        resets += 1
                        await manager.resetKey(ticket.keyID)
                    } else {
                        guard overtaken < Self.maximumOvertaken else { throw error }
                        overtaken += 1
                    }
                    continue
                } catch {
                    _ = await manager.finish(ticket, counterRefused: false)
                    guard let refusal = error as? AttestKitClientError, refusal.invalidatesKey,
                        resets < Self.maximumResets
                    else { throw error }
                    resets += 1
                    await manager.resetKey(ticket.keyID)
                    continue
                }
                _ = await manager.finish(ticket, counterRefused: false)
                return answer
            }
        case .deviceCheck:
            guard let deviceCheck else {
                throw AttestKitClientError(.unsupported, reason: "the DeviceCheck strategy needs a token provider")
            }
            let token: Data
            do {
                token = try await deviceCheck.generateToken()
            } catch let error as DeviceServiceError {
                throw AttestKitClientError(.device, deviceError: error, reason: "no DeviceCheck token: \(error)")
            }
            var request = request
            request.setValue(token.base64EncodedString(), forHTTPHeaderField: AttestKitHeaderNames.deviceToken)
            return try await send(request)
        case .riskBased, .limited:
            return try await send(request)
        }
    }

    private static let counterNotIncreasing = "counter_not_increasing"
    /// The most times one request is sent again because other assertions of the key overtook it.
    private static let maximumOvertaken = 10
    /// The most times one request makes the client replace the key.
    private static let maximumResets = 1

    private func send(_ request: URLRequest) async throws -> (Data, HTTPURLResponse) {
        let (data, response) = try await transport.send(request)
        try AttestKitService.check(data, response)
        return (data, response)
    }
}
