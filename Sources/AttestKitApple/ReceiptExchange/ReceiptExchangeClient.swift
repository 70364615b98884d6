public import AsyncHTTPClient
public import AttestKit
public import Foundation
public import Logging

/// A client of Apple's App Attest receipt exchange (docs/apple-formats.md §5): trades a stored receipt for a new
/// `RECEIPT` carrying the fraud risk metric.
///
/// ```swift
/// let exchange = try ReceiptExchangeClient(configuration: .init(environment: .production), tokens: tokens)
/// switch try await exchange.exchange(storedReceipt, appID: appID, keyID: keyID) {
/// case .refreshed(let receipt): store(receipt.bytes); record(receipt.riskMetric)
/// case .notModified(let retryAfter): scheduleNextExchange(after: retryAfter)
/// }
/// ```
///
/// The body is the Base64 receipt and the header `Authorization: <provider token>` (no `Bearer`, unlike
/// DeviceCheck). A 200 answer is decoded and verified with `ReceiptVerifier` before it is returned:
/// type `RECEIPT`, the same App ID and attested key, the configured environment when known, and a creation time
/// no older than ``Configuration/maximumAge``. 304 is ``ReceiptExchangeResult/notModified(retryAfter:)``; 400, 401,
/// 404 (``AppleServiceError/Code/noData``: Apple keeps data for 30 days), 429 and 5xx are typed errors, and 429,
/// 5xx and connection failures are retried within the call's deadline. Receipts are never logged.
public struct ReceiptExchangeClient: Sendable {
    /// Where and how to call, and how to judge the answer.
    public struct Configuration: Sendable, Hashable {
        /// The full URL of the exchange endpoint.
        public var url: String
        /// The environment the receipts belong to, checked against a new receipt's field 7; `nil` skips the check.
        public var environment: AppAttestEnvironment?
        /// Deadline, size cap and retries.
        public var transport: TransportConfiguration
        /// The root new receipts must chain to; `nil` for Apple Root CA - G3 (a test CA only for tests).
        public var receiptAnchor: TrustAnchor?
        /// How old a new receipt's creation time may be. Apple creates the receipt it returns at the time of the
        /// call, so any age beyond clock skew means a stale or replayed answer; the default of one day is generous
        /// so that a lagging clock or a cached answer never discards a genuine receipt. `nil` skips the check.
        public var maximumAge: TimeInterval?
        /// Seconds of clock skew tolerated on the creation time and the signer's validity.
        public var leeway: TimeInterval

        /// Apple's exchange in `environment` (`AppAttestEnvironment.receiptExchangeURL`).
        public init(
            environment: AppAttestEnvironment,
            transport: TransportConfiguration = .init(),
            receiptAnchor: TrustAnchor? = nil,
            maximumAge: TimeInterval? = 86_400,
            leeway: TimeInterval = 300
        ) {
            self.init(
                url: environment.receiptExchangeURL, environment: environment, transport: transport,
                receiptAnchor: receiptAnchor, maximumAge: maximumAge, leeway: leeway)
        }

        /// Another URL, such as `attestkit mock-apple`'s `http://127.0.0.1:PORT/v1/attestationData`.
        public init(
            url: String,
            environment: AppAttestEnvironment? = nil,
            transport: TransportConfiguration = .init(),
            receiptAnchor: TrustAnchor? = nil,
            maximumAge: TimeInterval? = 86_400,
            leeway: TimeInterval = 300
        ) {
            self.url = url
            self.environment = environment
            self.transport = transport
            self.receiptAnchor = receiptAnchor
            self.maximumAge = maximumAge
            self.leeway = leeway
        }
    }

    /// The configuration in use.
    public let configuration: Configuration
    /// The Team ID of the provider tokens this client sends: Apple answers 401 to a receipt of another team's app,
    /// and to every receipt when it refuses this team's key.
    public var teamID: String { tokens.teamID }
    private let tokens: AppleTokenProvider
    private let http: AppleHTTPTransport
    private let verifier: ReceiptVerifier
    private let now: @Sendable () -> Date

    /// Creates a client.
    ///
    /// - Parameters:
    ///   - configuration: URL, environment, deadline, size cap, retries and the new receipts' checks.
    ///   - tokens: The provider token source, shared with DeviceCheck.
    ///   - httpClient: The HTTP client; the shared one by default.
    ///   - clock: The clock retries wait on; inject one in tests.
    ///   - now: The time new receipts are verified at, and that `Retry-After` dates are measured from.
    /// - Throws: ``AppleServiceError/Code/invalidConfiguration`` if Apple's embedded root fails its pin.
    public init(
        configuration: Configuration,
        tokens: AppleTokenProvider,
        httpClient: HTTPClient = .shared,
        clock: any Clock<Duration> = ContinuousClock(),
        now: @escaping @Sendable () -> Date = { Date() }
    ) throws(AppleServiceError) {
        let anchor: TrustAnchor
        if let configured = configuration.receiptAnchor {
            anchor = configured
        } else {
            do {
                anchor = try TrustAnchor.appleRootCAG3()
            } catch {
                throw AppleServiceError(.invalidConfiguration, "Apple Root CA - G3 is unusable: \(error.code)")
            }
        }
        self.configuration = configuration
        self.tokens = tokens
        self.http = AppleHTTPTransport(
            client: httpClient, configuration: configuration.transport, clock: clock, now: now)
        self.verifier = ReceiptVerifier(anchor: anchor, leeway: configuration.leeway)
        self.now = now
    }

    /// Trades `receipt` for a new one.
    ///
    /// - Parameters:
    ///   - receipt: The stored receipt's bytes (from an attestation, or from a previous exchange).
    ///   - appID: The App ID the new receipt must name.
    ///   - keyID: The attested key the new receipt must hold.
    ///   - logger: Receives debug messages about the call; none by default.
    ///   - retry: The retries of this call in place of the configuration's (``RetryPolicy/none`` when each request
    ///     to Apple must be counted, as against a ceiling of calls a second); `nil`, the configuration's.
    /// - Returns: ``ReceiptExchangeResult/refreshed(_:)`` with the verified receipt, or
    ///   ``ReceiptExchangeResult/notModified(retryAfter:)``.
    /// - Throws: ``AppleServiceError``; ``AppleServiceError/Code/receiptInvalid`` when the new receipt does not
    ///   verify.
    public func exchange(
        _ receipt: some Collection<UInt8>, appID: AppID, keyID: KeyID, logger: Logger? = nil,
        retry: RetryPolicy? = nil
    ) async throws(AppleServiceError) -> ReceiptExchangeResult {
        let sent = Array(receipt)
        // One token for the call and its retries, so that a 401 drops that token and no other.
        let token = try await tokens.token()
        let request = AppleHTTPTransport.Request(
            endpoint: "attestation_data", url: configuration.url, contentType: nil,
            body: Array(Base64.encode(sent).utf8),
            authorization: { () async throws(AppleServiceError) -> String in token },
            retry: retry)
        let response = try await http.send(request, logger: logger ?? DeviceCheckClient.silent)
        switch response.status {
        case 200:
            return .refreshed(try await verify(response))
        case 304:
            let notBefore = try? Receipt.parseUnverified(sent).1.notBefore
            return .notModified(retryAfter: notBefore ?? nil)
        default:
            if response.status == 401 { await tokens.invalidate(token) }
            throw AppleStatusClassifier.error(
                status: response.status, text: response.text, service: .receiptExchange, attempts: response.attempts,
                retryAfter: response.retryAfter)
        }

        func verify(_ response: AppleHTTPTransport.Response) async throws(AppleServiceError) -> Receipt {
            let text = String(decoding: response.body, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            guard let bytes = Base64.decode(text), !bytes.isEmpty else {
                throw AppleServiceError(
                    .unexpectedResponse, "the answer is not a Base64 receipt", status: response.status,
                    attempts: response.attempts)
            }
            do {
                return try await verifier.verify(
                    bytes, appID: appID, keyID: keyID, expectedType: .receipt, environment: configuration.environment,
                    maximumAge: configuration.maximumAge, at: now())
            } catch {
                throw AppleServiceError(
                    .receiptInvalid, "the new receipt does not verify: \(error)", status: response.status,
                    attempts: response.attempts)
            }
        }
    }
}
