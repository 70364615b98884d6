import AttestKit
import AttestKitClient
import AttestKitClientSimulator
import AttestKitTesting
import Foundation
import Synchronization
import Testing
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

@Suite("AttestKitClient without a service")
struct UnitTests {
    /// A transport that always answers `status` with `body`, counting requests.
    final class Canned: HTTPTransport {
        let status: Int
        let body: String
        let count = Mutex(0)
        init(_ status: Int, _ body: String) {
            self.status = status
            self.body = body
        }
        func send(_ request: URLRequest) async throws -> (Data, HTTPURLResponse) {
            count.withLock { $0 += 1 }
            let url = try #require(request.url)
            let response = try #require(
                HTTPURLResponse(url: url, statusCode: status, httpVersion: nil, headerFields: nil))
            return (Data(body.utf8), response)
        }
    }

    @Test("the service's error body becomes a typed error")
    func errorMapping() async throws {
        let transport = Canned(429, #"{"error":{"code":"rate_limited","message":"slow down"}}"#)
        let service = AttestKitService(baseURL: try #require(URL(string: "http://127.0.0.1:1")), transport: transport)
        let error = await #expect(throws: AttestKitClientError.self) { try await service.challenge(for: .attest) }
        #expect(error?.code == .httpError && error?.status == 429 && error?.serviceCode == "rate_limited")
        #expect(error?.reason == "slow down")
        #expect(error?.verificationRefusal == nil)
        #expect(transport.count.withLock { $0 } == 1)

        let plain = Canned(502, "bad gateway")
        let client = AttestKitHTTPClient(
            manager: nil, strategy: AttestationStrategy(levels: [.degraded]), transport: plain)
        let other = await #expect(throws: AttestKitClientError.self) {
            try await client.data(for: URLRequest(url: try #require(URL(string: "https://app.example/"))))
        }
        #expect(other?.status == 502 && other?.serviceCode == nil)
    }

    @Test("only the AttestKit verification's exact status and code pairs are refusals the client acts on")
    func verificationRefusals() {
        func error(_ status: Int, _ code: String) -> AttestKitClientError {
            AttestKitClientError(.httpError, status: status, serviceCode: code, reason: "")
        }
        #expect(error(403, "key_not_found").verificationRefusal == .keyNotFound)
        #expect(error(403, "key_revoked").verificationRefusal == .keyRevoked)
        #expect(error(403, "key_expired").verificationRefusal == .keyExpired)
        #expect(error(410, "key_expired").verificationRefusal == nil)
        #expect(error(409, "counter_not_increasing").verificationRefusal == .counterNotIncreasing)
        #expect(error(403, "timestamp_outside_window").verificationRefusal == .timestampOutsideWindow)
        // The same codes with another status came from the app's route.
        #expect(error(404, "key_not_found").verificationRefusal == nil)
        #expect(error(409, "key_revoked").verificationRefusal == nil)
        #expect(error(403, "signature_invalid").verificationRefusal == nil)
        #expect(error(409, "challenge_consumed").verificationRefusal == nil)
        #expect(AttestKitClientError(.transport, serviceCode: "key_revoked", reason: "").verificationRefusal == nil)
    }

    @Test("the file key store keeps the state in an owner-only file")
    func fileStore() throws {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("keystore-\(UUID().uuidString)/key")
        defer { try? FileManager.default.removeItem(at: url.deletingLastPathComponent()) }
        let store = FileKeyIDStore(url: url)
        #expect(try store.load() == nil)
        try store.save(.registered("a2V5"))
        #expect(try store.load() == .registered("a2V5"))
        // What earlier versions wrote: the bare key id.
        try Data("a2V5\n".utf8).write(to: url)
        #expect(try store.load() == .registered("a2V5"))
        try store.save(.registered("a2V5"))
        let attributes = try FileManager.default.attributesOfItem(atPath: url.path)
        #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)
        try store.remove()
        #expect(try store.load() == nil)
        try store.remove()
    }

    @Test("resetKey() clears a key store whose state cannot be read, and a key is attested again")
    func resetUnreadableState() async throws {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("keystore-\(UUID().uuidString)/key")
        defer { try? FileManager.default.removeItem(at: url.deletingLastPathComponent()) }
        let store = FileKeyIDStore(url: url)
        try store.save(KeyState())
        try Data("{not json".utf8).write(to: url)
        let manager = AppAttestManager(
            provider: SimulatedAppAttestProvider(
                device: SimulatedDevice(
                    apple: EndToEndTests.apple,
                    configuration: .init(appID: ServiceProcess.appID, environment: .development))),
            keyStore: store, service: AttestKitService(baseURL: FakeService.serviceURL, transport: FakeService()))
        let unreadable = await #expect(throws: AttestKitClientError.self) { try await manager.attestedKeyID() }
        #expect(unreadable?.code == .keyStore)
        // A key id names a key to forget, so it needs the state; without one, the state is replaced unread.
        await #expect(throws: AttestKitClientError.self) { try await manager.resetKey("a2V5") }
        try await manager.resetKey()
        let keyID = try await manager.attestedKeyID()
        #expect(try store.load()?.keyID == keyID)
    }

    @Test("the session token and the manager's configuration never show a token, printed or dumped")
    func noSecretInDescriptions() {
        let token = SessionToken(token: "aaa.bbb.ccc", expiresAt: Date(timeIntervalSince1970: 0))
        let configuration = AppAttestManager.Configuration(debugToken: "s3cret-debug")
        for (value, secret) in [(token as Any, "aaa.bbb.ccc"), (configuration as Any, "s3cret-debug")] {
            var dumped = ""
            dump(value, to: &dumped)
            for text in [String(describing: value), String(reflecting: value), dumped] {
                #expect(!text.contains(secret), "\(text)")
            }
        }
        #expect(String(describing: configuration).contains("debugToken: set"))
        #expect(String(describing: AppAttestManager.Configuration()).contains("debugToken: none"))
    }

    @Test("a signed request carries the four headers, and the binding keeps the percent-encoded target")
    func signing() async throws {
        let device = SimulatedDevice(
            apple: EndToEndTests.apple, configuration: .init(appID: ServiceProcess.appID, environment: .development))
        let provider = SimulatedAppAttestProvider(device: device)
        let keyID = try await provider.generateKey()
        _ = try await provider.attestKey(keyID, clientDataHash: Data(repeating: 1, count: 32))
        let manager = AppAttestManager(
            provider: provider, keyStore: MemoryKeyIDStore(keyID),
            service: AttestKitService(
                baseURL: try #require(URL(string: "http://127.0.0.1:1")), transport: Canned(500, "")),
            now: { Date(timeIntervalSince1970: 1_763_700_000) })
        let signed = try await manager.sign(AppBackend.order())
        #expect(signed.value(forHTTPHeaderField: "X-AttestKit-Key-Id") == keyID)
        #expect(signed.value(forHTTPHeaderField: "X-AttestKit-Timestamp") == "1763700000000")
        #expect(signed.value(forHTTPHeaderField: "X-AttestKit-Assertion") != nil)
        #expect(signed.value(forHTTPHeaderField: "X-AttestKit-Challenge") == nil)
        #expect(await manager.attestationCount == 0)

        var streamed = AppBackend.order()
        streamed.httpBodyStream = InputStream(data: Data([1]))
        let error = await #expect(throws: AttestKitClientError.self) { try await manager.sign(streamed) }
        #expect(error?.code == .invalidRequest)
    }
}
