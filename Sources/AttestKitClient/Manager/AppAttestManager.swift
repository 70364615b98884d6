public import AttestKitWire
import Crypto
public import Foundation
#if canImport(FoundationNetworking)
    public import FoundationNetworking
#endif

/// The app side of App Attest: one attested key, and an assertion for every protected request.
///
/// - **Attest once per key.** The first call that needs a key generates one, asks the service for a challenge
///   (`POST /v1/challenges`), attests the key with SHA-256 of the challenge and registers the attestation
///   (`POST /v1/attestations`). Only then is the key identifier saved in the ``KeyIDStore``, so a stored
///   identifier always names a registered key; later launches reuse it without attesting again.
/// - **Single flight.** Callers that need a key while an attestation is under way wait for that one attestation
///   instead of starting their own: ten concurrent first requests make one attestation, not ten.
/// - **Assertions bound to requests.** ``assertion(method:target:body:)`` and ``sign(_:)`` build the canonical
///   client data of `AttestKitWire.RequestBinding` (method, path and query, SHA-256 of the body, and a
///   timestamp or a challenge of the service, see ``Configuration/freshness``) and sign its hash.
/// - **Reset and re-attest** when the device says the key is unusable (``DeviceServiceError/invalidKey``,
///   ``DeviceServiceError/invalidInput``) or the service no longer accepts it (``resetKey(_:)``, called by
///   ``AttestKitHTTPClient`` for `key_not_found`, `key_revoked` and `counter_not_increasing`).
/// - **Backoff** on ``DeviceServiceError/serverUnavailable``: bounded exponential retries.
///
/// The manager is an actor because it owns mutable shared state (the current key and the attestation under
/// way); share one instance per app.
public actor AppAttestManager {
    /// How the manager behaves.
    public struct Configuration: Sendable {
        /// How assertions prove they are fresh:
        /// - `.timestamp` (the default): the device's clock in Unix milliseconds (`X-AttestKit-Timestamp`), which
        ///   the service accepts within a window: no extra round trip;
        /// - `.challenge`: a one-time challenge of the service (`POST /v1/challenges` with purpose `assert`, bound
        ///   to the key; `X-AttestKit-Challenge`): one more round trip, no dependence on the device's clock;
        /// - `.vouched` names no freshness an app can send: signing fails with ``AttestKitClientError/Code/invalidRequest``.
        public var freshness: AttestKitWire.Freshness.Kind
        /// How many times a device call failing with ``DeviceServiceError/serverUnavailable`` is retried.
        public var maximumRetries: Int
        /// The wait before the first retry; it doubles on every retry, up to ``maximumBackoff``.
        public var initialBackoff: Duration
        /// The longest wait between retries.
        public var maximumBackoff: Duration

        /// Creates a configuration.
        public init(
            freshness: AttestKitWire.Freshness.Kind = .timestamp,
            maximumRetries: Int = 3,
            initialBackoff: Duration = .milliseconds(500),
            maximumBackoff: Duration = .seconds(8)
        ) {
            self.freshness = freshness
            self.maximumRetries = max(0, maximumRetries)
            self.initialBackoff = initialBackoff
            self.maximumBackoff = maximumBackoff
        }
    }

    /// An assertion made for one request, and the headers that carry it.
    public struct SignedRequest: Sendable, Hashable {
        /// The key identifier, Base64.
        public let keyID: String
        /// The assertion object.
        public let assertion: Data
        /// The freshness proof the client data names.
        public let freshness: Freshness

        /// `X-AttestKit-Key-Id`, `X-AttestKit-Assertion` and `X-AttestKit-Timestamp` or `X-AttestKit-Challenge`.
        public var headers: [String: String] {
            var headers = [
                AttestKitHeaderNames.keyID: keyID, AttestKitHeaderNames.assertion: assertion.base64EncodedString(),
            ]
            if let header = AttestKitHeaderNames.header(of: freshness) { headers[header.name] = header.value }
            return headers
        }
    }

    private let provider: any AppAttestProvider
    private let keyStore: any KeyIDStore
    private let service: AttestKitService
    private let configuration: Configuration
    private let now: @Sendable () -> Date

    /// The attested key, once known.
    private var keyID: String?
    /// Whether ``keyStore`` has been read.
    private var loaded = false
    /// The attestation under way, which concurrent callers share.
    private var attestation: Task<String, any Error>?

    /// A logical clock of the actor, stamping when each tracked signing starts and ends.
    private var clock = 0
    /// The tracked assertions sent and not answered yet: their start stamp, and their key ("" while unknown).
    private var pending: [Int: String] = [:]
    /// The key, and the latest signing end stamp, of the assertions the server did not refuse as not increasing.
    private var latestAccepted: (keyID: String, signed: Int)?

    /// How many attestations this manager has registered with the service (for diagnostics and tests).
    public private(set) var attestationCount = 0

    /// Creates a manager.
    ///
    /// - Parameters:
    ///   - provider: The device's App Attest.
    ///   - keyStore: Where the attested key's identifier is kept between launches.
    ///   - service: The AttestKit service that issues challenges and registers attestations.
    ///   - configuration: Freshness and retries.
    ///   - now: The clock of timestamps (injectable for tests).
    public init(
        provider: any AppAttestProvider,
        keyStore: any KeyIDStore,
        service: AttestKitService,
        configuration: Configuration = Configuration(),
        now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.provider = provider
        self.keyStore = keyStore
        self.service = service
        self.configuration = configuration
        self.now = now
    }

    // MARK: The key

    /// The identifier of the attested key, attesting a new key first when there is none.
    ///
    /// Concurrent callers share one attestation. The key store is read on the first call; when it cannot be read
    /// (a Keychain not unlocked since boot, say) its error is thrown rather than a new key attested, so that an
    /// unreadable store never causes attestations.
    /// - Throws: The key store's error, or ``AttestKitClientError`` when the device or the service fails.
    public func attestedKeyID() async throws -> String {
        if let keyID { return keyID }
        if !loaded {
            let stored = try keyStore.load()
            loaded = true
            if let stored {
                keyID = stored
                return stored
            }
        }
        if let attestation { return try await attestation.value }
        let task = Task { try await self.attestNewKey() }
        attestation = task
        defer { if attestation == task { attestation = nil } }
        return try await task.value
    }

    /// Forgets the key `keyID` (or the current key, for `nil`), so that the next request attests a new one.
    ///
    /// Call it when the service refuses the key. A `keyID` other than the current one is ignored: another caller
    /// has already replaced it.
    public func resetKey(_ keyID: String? = nil) {
        guard keyID == nil || keyID == self.keyID || self.keyID == nil else { return }
        self.keyID = nil
        latestAccepted = nil
        loaded = true
        try? keyStore.remove()
    }

    private func attestNewKey() async throws -> String {
        var attempt = 0
        while true {
            attempt += 1
            do {
                let keyID = try await retrying { try await self.provider.generateKey() }
                let challenge = try await service.challenge(for: .attest)
                let hash = Data(SHA256.hash(data: challenge.bytes))
                let object = try await retrying { try await self.provider.attestKey(keyID, clientDataHash: hash) }
                try await service.registerAttestation(keyID: keyID, attestation: object, challengeID: challenge.id)
                // A key that cannot be saved still serves this run; the next launch attests a new one.
                try? keyStore.save(keyID)
                self.keyID = keyID
                attestationCount += 1
                return keyID
            } catch let error as AttestKitClientError where error.deviceError?.invalidatesKey == true && attempt < 2 {
                continue
            }
        }
    }

    // MARK: Assertions

    /// An assertion for the request `method target` with `body`, bound with `RequestBinding`.
    ///
    /// When the device refuses the key (``DeviceServiceError/invalidKey`` or ``DeviceServiceError/invalidInput``)
    /// the key is reset, a new one attested and the assertion made again, once.
    /// - Parameters:
    ///   - method: The HTTP method.
    ///   - target: The path and query exactly as sent, starting with `/`.
    ///   - body: The exact body bytes.
    /// - Throws: ``AttestKitClientError``.
    public func assertion(method: String, target: String, body: Data) async throws -> SignedRequest {
        var attempt = 0
        while true {
            attempt += 1
            let keyID = try await attestedKeyID()
            do {
                let freshness = try await freshness(for: keyID)
                let binding: RequestBinding
                do {
                    binding = try RequestBinding(method: method, target: target, body: body, freshness: freshness)
                } catch {
                    throw AttestKitClientError(.invalidRequest, reason: "the request cannot be bound: \(error)")
                }
                let hash = Data(binding.clientDataHash)
                let assertion = try await retrying {
                    try await self.provider.generateAssertion(keyID, clientDataHash: hash)
                }
                return SignedRequest(keyID: keyID, assertion: assertion, freshness: freshness)
            } catch let error as AttestKitClientError
                where attempt < 2 && (error.deviceError?.invalidatesKey == true || error.invalidatesKey)
            {
                resetKey(keyID)
            }
        }
    }

    /// `request` with the assertion headers added (``SignedRequest/headers``).
    /// - Throws: ``AttestKitClientError/Code/invalidRequest`` for a request without a URL or with a streamed body,
    ///   then as ``assertion(method:target:body:)``.
    public func sign(_ request: URLRequest) async throws -> URLRequest {
        let (request, ticket) = try await signed(request)
        // Not sent by this manager: its answer is unknown, so count it as accepted.
        _ = finish(ticket, counterRefused: false)
        return request
    }

    /// A signed request on its way: when its signing started and ended on the actor's clock.
    struct Ticket: Sendable {
        /// The key that signed.
        let keyID: String
        /// The stamp taken before the device was asked to sign.
        let started: Int
        /// The stamp taken once the device had signed.
        let finished: Int
    }

    /// `request` with the assertion headers and its ticket; call ``finish(_:counterRefused:)`` with the ticket
    /// once the answer is known.
    func signed(_ request: URLRequest) async throws -> (request: URLRequest, ticket: Ticket) {
        guard request.httpBodyStream == nil else {
            throw AttestKitClientError(.invalidRequest, reason: "a streamed body cannot be bound; set httpBody")
        }
        guard let url = request.url, let target = Self.target(of: url) else {
            throw AttestKitClientError(.invalidRequest, reason: "the request has no usable URL")
        }
        clock += 1
        let started = clock
        pending[started] = ""
        let signedRequest: SignedRequest
        do {
            signedRequest = try await assertion(
                method: request.httpMethod ?? "GET", target: target, body: request.httpBody ?? Data())
        } catch {
            pending[started] = nil
            throw error
        }
        pending[started] = signedRequest.keyID
        clock += 1
        var request = request
        for (name, value) in signedRequest.headers { request.setValue(value, forHTTPHeaderField: name) }
        return (request, Ticket(keyID: signedRequest.keyID, started: started, finished: clock))
    }

    /// Notes the answer to a signed request, and says whether a refusal as `counter_not_increasing` means that the
    /// device's counter is behind the server's (as after restoring a backup), so that the key must be replaced.
    ///
    /// The server refuses an assertion whose counter is not above the last one it accepted. When that last one
    /// came from this app, it was signed by an assertion whose signing ended after this one's started (its counter
    /// is higher), and which is either still on its way or was answered otherwise than with this refusal: then
    /// the request was merely overtaken, and is sent again with a fresh assertion. When there is no such
    /// assertion, the server's counter is ahead of the device's: the counter went back.
    ///
    /// An answer that is not a counter refusal (acceptance, another refusal, a lost connection) counts as
    /// accepted: the server may have advanced the counter.
    /// - Returns: `true` when the key's counter is behind the server's.
    func finish(_ ticket: Ticket, counterRefused: Bool) -> Bool {
        pending[ticket.started] = nil
        guard counterRefused else {
            if let latestAccepted, latestAccepted.keyID == ticket.keyID, latestAccepted.signed >= ticket.finished {
                return false
            }
            latestAccepted = (ticket.keyID, ticket.finished)
            return false
        }
        let laterPending = pending.values.contains { $0 == ticket.keyID || $0.isEmpty }
        let laterAccepted =
            latestAccepted.map { $0.keyID == ticket.keyID && $0.signed > ticket.started } ?? false
        return !laterPending && !laterAccepted
    }

    /// The origin-form request target of `url`: the percent-encoded path (`/` when empty) and query.
    static func target(of url: URL) -> String? {
        guard let components = URLComponents(url: url, resolvingAgainstBaseURL: true) else { return nil }
        let path = components.percentEncodedPath.isEmpty ? "/" : components.percentEncodedPath
        guard let query = components.percentEncodedQuery else { return path }
        return path + "?" + query
    }

    private func freshness(for keyID: String) async throws -> Freshness {
        switch configuration.freshness {
        case .timestamp:
            let milliseconds = (now().timeIntervalSince1970 * 1_000).rounded(.down)
            return .timestamp(milliseconds: Int64(max(0, milliseconds)))
        case .challenge:
            return .challenge(try await service.challenge(for: .assert, keyID: keyID).id)
        case .vouched:
            throw AttestKitClientError(.invalidRequest, reason: "an app's assertion names a challenge or a timestamp")
        }
    }

    /// Runs a device call, retrying ``DeviceServiceError/serverUnavailable`` with a bounded exponential backoff;
    /// device errors come out as ``AttestKitClientError/Code/device``.
    private func retrying<Value: Sendable>(_ call: @Sendable () async throws -> Value) async throws -> Value {
        var delay = configuration.initialBackoff
        var retries = 0
        while true {
            do {
                return try await call()
            } catch let error as DeviceServiceError {
                guard error == .serverUnavailable, retries < configuration.maximumRetries else {
                    throw AttestKitClientError(.device, deviceError: error, reason: "the device refused: \(error)")
                }
                retries += 1
                try await Task.sleep(for: delay)
                delay = min(delay * 2, configuration.maximumBackoff)
            }
        }
    }
}
