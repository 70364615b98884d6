import AsyncHTTPClient
import AttestKit
import AttestKitApple
import AttestKitAppleMock
import AttestKitTesting
import Crypto
import Foundation
import Synchronization
import Testing

/// What the suites share: one seeded software Apple, a `.p8`-style key, a settable clock, and a mock of Apple's
/// services started per test on a free loopback port.
enum AppleFixture {
    /// 2026-04-12T13:20:00Z, where every test clock starts.
    static let time = Date(timeIntervalSince1970: 1_776_000_000)
    static let keyID = "ABC123DEFG"
    static let teamID = "ABCDE12345"

    static let apple: SoftwareApple = {
        do {
            return try SoftwareApple(seed: Array("AttestKitAppleTests".utf8), at: time)
        } catch {
            preconditionFailure("cannot build the software Apple: \(error)")
        }
    }()

    static let appID: AppID = {
        do { return try AppID("\(teamID).com.example.app") } catch { preconditionFailure("\(error)") }
    }()

    /// The key that signs provider tokens, and its PKCS#8 PEM (what an `AuthKey_KEYID.p8` holds).
    static let signingKey = P256.Signing.PrivateKey()
    static var privateKeyPEM: String { signingKey.pemRepresentation }
    static var publicKeyPEM: String { signingKey.publicKey.pemRepresentation }

    /// A device token: Base64 of random bytes, like `DCDevice.generateToken()`'s.
    static func deviceToken() -> String {
        var generator = SystemRandomNumberGenerator()
        return Data((0..<96).map { _ in UInt8.random(in: 0...255, using: &generator) }).base64EncodedString()
    }

    /// A token provider for the fixture's key, dated by `clock`.
    static func tokens(
        _ clock: TestTime, keyPEM: String = privateKeyPEM, keyID: String = keyID, teamID: String = teamID
    ) throws -> AppleTokenProvider {
        try AppleTokenProvider(privateKeyPEM: keyPEM, keyID: keyID, teamID: teamID, now: clock.closure)
    }

    /// A mock configured for the fixture's key, ids and `clock`.
    static func mock(
        _ clock: TestTime, environment: AppAttestEnvironment = .development, riskMetric: Int = 4,
        faults: [MockAppleFault] = []
    ) throws -> MockAppleServer {
        try MockAppleServer(
            configuration: .init(
                verificationKeyPEM: publicKeyPEM, keyID: keyID, teamID: teamID, environment: environment,
                riskMetric: riskMetric, faults: faults, now: clock.closure),
            softwareApple: apple)
    }

    /// Fast retries: three attempts, 1 ms waits at most, a 5 s deadline.
    /// Instant retries; a deadline generous enough for a loaded 2-core CI machine running every suite at once
    /// (tests about deadlines set their own).
    /// Retries without waiting; a deadline no test reaches (the first minute of a full test run on two cores can
    /// delay a task's resumption by as much: one call ran past 60 s there).
    static let fastTransport = TransportConfiguration(
        timeout: .seconds(600),
        retry: RetryPolicy(maximumAttempts: 3, baseDelay: .milliseconds(1), maximumDelay: .milliseconds(1)))

    /// A DeviceCheck client of the mock at `baseURL`.
    static func deviceCheck(
        _ baseURL: String, tokens: AppleTokenProvider, clock: TestTime,
        transport: TransportConfiguration = fastTransport, sleeps: SleepRecorder = SleepRecorder(),
        httpClient: HTTPClient = .shared
    ) -> DeviceCheckClient {
        DeviceCheckClient(
            configuration: .init(baseURL: baseURL, transport: transport), tokens: tokens, httpClient: httpClient,
            clock: InstantClock(recorder: sleeps), now: clock.closure)
    }

    /// Runs `body` with an HTTP client that reports a refused connection at once instead of retrying it in its
    /// pool until the deadline (AsyncHTTPClient's default), so that the retry policy counts it.
    static func withFailFastClient<Result>(_ body: (HTTPClient) async throws -> Result) async throws -> Result {
        var configuration = HTTPClient.Configuration()
        configuration.connectionPool.retryConnectionEstablishment = false
        return try await HTTPClient.withHTTPClient(configuration: configuration, body)
    }

    /// A receipt exchange client of the mock at `baseURL`, trusting the software Apple's receipt root.
    static func exchange(
        _ baseURL: String, tokens: AppleTokenProvider, clock: TestTime,
        environment: AppAttestEnvironment? = .development, transport: TransportConfiguration = fastTransport,
        anchor: TrustAnchor = apple.trustAnchors.receipt, maximumAge: TimeInterval? = 300
    ) throws -> ReceiptExchangeClient {
        try ReceiptExchangeClient(
            configuration: .init(
                url: baseURL + AppAttestEnvironment.receiptExchangePath, environment: environment, transport: transport,
                receiptAnchor: anchor, maximumAge: maximumAge),
            tokens: tokens, clock: InstantClock(recorder: SleepRecorder()), now: clock.closure)
    }

    /// A new key attested at `clock`'s time on a new simulated device, and its `ATTEST` receipt.
    static func attestReceipt(
        _ clock: TestTime, environment: AppAttestEnvironment = .development, apple: SoftwareApple = apple
    ) throws -> (keyID: KeyID, receipt: [UInt8]) {
        let device = SimulatedDevice(apple: apple, configuration: .init(appID: appID, environment: environment))
        let keyID = device.generateKey()
        _ = try device.attestKey(
            keyID, clientDataHash: Array(SHA256.hash(data: Array("challenge".utf8))), at: clock.now())
        return (keyID, try #require(device.receipt(for: keyID)))
    }

    /// The `AppleServiceError` `body` throws; records an issue when it throws nothing or something else.
    static func failure(
        sourceLocation: SourceLocation = #_sourceLocation, _ body: () async throws -> Void
    ) async -> AppleServiceError? {
        do {
            try await body()
            Issue.record("expected an AppleServiceError, got success", sourceLocation: sourceLocation)
        } catch let error as AppleServiceError {
            return error
        } catch {
            Issue.record("expected an AppleServiceError, got \(error)", sourceLocation: sourceLocation)
        }
        return nil
    }
}

/// A settable clock for token dates, DeviceCheck timestamps and the mock's "now".
final class TestTime: Sendable {
    private let value: Mutex<Date>

    init(_ start: Date = AppleFixture.time) { value = Mutex(start) }

    func now() -> Date { value.withLock { $0 } }
    func advance(by seconds: TimeInterval) { value.withLock { $0 = $0.addingTimeInterval(seconds) } }
    var closure: @Sendable () -> Date { { self.now() } }
}
