import AttestKit
@testable import AttestKitClient
import AttestKitClientSimulator
import AttestKitTesting
import AttestKitWire
import Crypto
import Foundation
import Synchronization
import Testing
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The key ids an install names for the erasure of its data: the current key's and the earlier keys' the manager
/// keeps (``KeyState/retiredKeyIDs``), kept across launches, bounded, forgotten on request; and, against
/// `attestkit serve`, deleting every id listed leaves none of the install's keys.
@Suite("AttestKitClient key ids for erasure", .timeLimit(.minutes(3)))
struct ErasureTests {
    typealias App = AppleRulesTests.App

    /// A manager of its own over `store`, with a simulated device and a scripted service.
    static func manager(_ store: any KeyIDStore, service: FakeService = FakeService()) -> AppAttestManager {
        AppAttestManager(
            provider: SimulatedAppAttestProvider(
                device: SimulatedDevice(
                    apple: EndToEndTests.apple,
                    configuration: .init(appID: ServiceProcess.appID, environment: .development))),
            keyStore: store, service: AttestKitService(baseURL: FakeService.serviceURL, transport: service))
    }

    /// A key store file of its own, in a directory removed by the caller.
    static func temporaryStoreURL() -> URL {
        FileManager.default.temporaryDirectory.appendingPathComponent("erasure-\(UUID().uuidString)/key")
    }

    @Test("after two replacements by the service the list holds the current key and both earlier ones, newest first")
    func twoReplacements() async throws {
        let app = App()
        #expect(try await app.order() == .appAttest)
        let first = try #require(app.keyID)
        #expect(try await app.manager.keyIDsForErasure() == [first])

        app.service.answerApp { $0.keyID == first ? .status(403, "key_expired") : nil }
        #expect(try await app.order() == .appAttest)
        let second = try #require(app.keyID)
        #expect(second != first)

        // Past the backoff's reach since the first replacement, so that the second is attested at once too.
        app.clock.advance(7 * 3600)
        app.service.answerApp { [first, second].contains($0.keyID) ? .status(403, "key_not_found") : nil }
        #expect(try await app.order() == .appAttest)
        let third = try #require(app.keyID)
        #expect(Set([first, second, third]).count == 3 && app.provider.calls.attestKey == 3)

        #expect(try await app.manager.keyIDsForErasure() == [third, second, first])
        let state = try #require(app.store.load())
        #expect(state.keyID == third && state.retiredKeyIDs == [second, first])
        // In the spelling the service's DELETE route takes: standard Base64 with padding.
        for keyID in [first, second, third] { #expect(Data(base64Encoded: keyID)?.count == 32) }
    }

    @Test("resetKey() and attestKey(appData:) retire the key they replace")
    func resetAndAppData() async throws {
        let app = App()
        let first = try await app.manager.attestedKeyID()
        try await app.manager.resetKey()
        #expect(try await app.manager.keyIDsForErasure() == [first])
        let second = try await app.manager.attestedKeyID()
        let bound = try await app.manager.attestKey(appData: Data("user-42".utf8))
        #expect(try await app.manager.keyIDsForErasure() == [bound.keyId, second, first])
        // A key id other than the current one is ignored, and retires nothing.
        try await app.manager.resetKey(first)
        #expect(try await app.manager.keyIDsForErasure() == [bound.keyId, second, first])
    }

    @Test("the earlier keys are bounded: the 16 most recent are kept, the oldest dropped first")
    func bounded() async throws {
        let app = App()
        var replaced: [String] = []
        for _ in 0..<20 {
            replaced.append(try await app.manager.attestedKeyID())
            try await app.manager.resetKey()
        }
        let current = try await app.manager.attestedKeyID()
        let listed = try await app.manager.keyIDsForErasure()
        #expect(KeyState.maximumRetiredKeyIDs == 16)
        #expect(listed.count == 17)
        #expect(listed == [current] + replaced.reversed().prefix(16))
        #expect(try #require(app.store.load()).retiredKeyIDs == Array(replaced.reversed().prefix(16)))

        // A retired key retired again moves to the front, once.
        var state = KeyState(stage: .registered, keyID: "bmV3")
        state.retiredKeyIDs = ["YQ==", "Yg==", "Yw=="]
        state.retire("Yg==")
        #expect(state.retiredKeyIDs == ["Yg==", "YQ==", "Yw=="])
        // A stored list longer than the bound (written by hand) is cut when read.
        state.retiredKeyIDs = (0..<20).map { "k\($0)" }
        #expect(try KeyState.decoded(state.encoded()).retiredKeyIDs == (0..<16).map { "k\($0)" })
    }

    @Test("a key whose attestation was never sent is not listed; one posted and refused is")
    func onlyKeysTheServiceMayHold() async throws {
        let app = App()
        app.provider.fail(.attestKey, with: .invalidKey, times: 1)
        #expect(try await app.order() == .deviceCheck)
        #expect(app.provider.calls.generateKey == 1 && app.service.registrationAttempts.isEmpty)
        #expect(try #require(await app.manager.keyState).retiredKeyIDs.isEmpty)

        app.clock.advance(3)
        app.service.scriptRegistrations([.status(403, "challenge_expired")])
        #expect(try await app.order() == .deviceCheck)
        let refused = try #require(app.service.registrationAttempts.first?.keyID)

        app.clock.advance(5)
        #expect(try await app.order() == .appAttest)
        let current = try #require(app.keyID)
        #expect(app.provider.calls.generateKey == 3)
        #expect(try await app.manager.keyIDsForErasure() == [current, refused])
    }

    @Test("a key attested for an app key is listed among the earlier keys; the assertion key stays current")
    func appKeyAttestation() async throws {
        let app = App()
        #expect(try await app.order() == .appAttest)
        let assertionKey = try #require(app.keyID)
        let answer = try await app.manager.attestAppKey(
            publicKeyDER: P256.Signing.PrivateKey().publicKey.derRepresentation)
        #expect(answer.keyId != assertionKey)
        #expect(try await app.manager.keyIDsForErasure() == [assertionKey, answer.keyId])
        #expect(app.keyID == assertionKey)
    }

    @Test("the list survives a relaunch: a new manager over the same stored file lists the same ids")
    func survivesRelaunch() async throws {
        let url = Self.temporaryStoreURL()
        defer { try? FileManager.default.removeItem(at: url.deletingLastPathComponent()) }
        let listed: [String]
        do {
            let manager = Self.manager(FileKeyIDStore(url: url))
            let first = try await manager.attestedKeyID()
            try await manager.resetKey()
            let second = try await manager.attestedKeyID()
            try await manager.resetKey()
            let third = try await manager.attestedKeyID()
            listed = try await manager.keyIDsForErasure()
            #expect(listed == [third, second, first])
        }
        let relaunched = Self.manager(FileKeyIDStore(url: url))
        #expect(try await relaunched.keyIDsForErasure() == listed)
        #expect(await relaunched.keyState?.retiredKeyIDs == Array(listed.dropFirst()))
        let json = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: url)) as? [String: Any])
        #expect(json["retiredKeyIDs"] as? [String] == Array(listed.dropFirst()))
    }

    @Test("a state stored by an earlier version, without the list, loads with an empty one, and gains it on a reset")
    func earlierVersionState() async throws {
        let earlier = #"{"asserted":true,"failures":0,"keyID":"a2V5","replacedAt":1763700000000,"stage":"registered"}"#
        let decoded = try KeyState.decoded(Data(earlier.utf8))
        #expect(decoded.stage == .registered && decoded.keyID == "a2V5" && decoded.retiredKeyIDs.isEmpty)
        #expect(decoded.replacedAt == Date(timeIntervalSince1970: 1_763_700_000))
        #expect(try KeyState.decoded(Data("a2V5\n".utf8)).retiredKeyIDs.isEmpty)
        var round = decoded
        round.retiredKeyIDs = ["YQ=="]
        #expect(try KeyState.decoded(round.encoded()) == round)

        let url = Self.temporaryStoreURL()
        defer { try? FileManager.default.removeItem(at: url.deletingLastPathComponent()) }
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data(earlier.utf8).write(to: url)
        let manager = Self.manager(FileKeyIDStore(url: url))
        #expect(try await manager.keyIDsForErasure() == ["a2V5"])
        try await manager.resetKey()
        #expect(try await manager.keyIDsForErasure() == ["a2V5"])
        #expect(try FileKeyIDStore(url: url).load()?.retiredKeyIDs == ["a2V5"])
    }

    @Test("forgetting: the ids named, or all of them, leave the earlier keys; the current key is kept and used")
    func forgetting() async throws {
        let app = App()
        let first = try await app.manager.attestedKeyID()
        try await app.manager.resetKey()
        let second = try await app.manager.attestedKeyID()
        try await app.manager.resetKey()
        #expect(try await app.order() == .appAttest)
        let current = try #require(app.keyID)
        #expect(try await app.manager.keyIDsForErasure() == [current, second, first])

        try await app.manager.forgetRetiredKeyIDs([second, current])
        #expect(try await app.manager.keyIDsForErasure() == [current, first])
        try await app.manager.forgetRetiredKeyIDs()
        #expect(try await app.manager.keyIDsForErasure() == [current])
        let stored = try #require(app.store.load())
        #expect(stored.retiredKeyIDs.isEmpty && stored.keyID == current && stored.stage == .registered)
        #expect(try await app.order() == .appAttest)
        #expect(app.keyID == current && app.provider.calls.attestKey == 3)

        // Another manager over the store is refused, as for resetKey().
        let other = AppAttestManager(
            provider: app.provider, keyStore: app.store,
            service: AttestKitService(baseURL: FakeService.serviceURL, transport: app.service))
        let refused = await #expect(throws: AttestKitClientError.self) { try await other.keyIDsForErasure() }
        #expect(refused?.code == .keyStore)
        await #expect(throws: AttestKitClientError.self) { try await other.forgetRetiredKeyIDs() }
    }

    @Test("forgetting and an app key's attestation during the attestation of a new key: neither is undone by it")
    func duringAnAttestation() async throws {
        let app = App()
        let first = try await app.manager.attestedKeyID()
        try await app.manager.resetKey()
        app.service.registrationDelay(milliseconds: 300)
        let attesting = Task { try await app.manager.attestedKeyID() }
        // The new key's attestation is being posted (the state notes the post before it is sent).
        while await app.manager.keyState?.registrationPosted != true { try await Task.sleep(for: .milliseconds(5)) }
        let appKey = Task {
            try await app.manager.attestAppKey(publicKeyDER: P256.Signing.PrivateKey().publicKey.derRepresentation)
        }
        try await app.manager.forgetRetiredKeyIDs([first])
        let second = try await attesting.value
        let appKeyID = try await appKey.value.keyId
        #expect(try await app.manager.keyIDsForErasure() == [second, appKeyID])
        #expect(try #require(app.store.load()).retiredKeyIDs == [appKeyID])
    }

    /// The service's transport of the manager, over ``AppBackend``: records every key the service registered
    /// (answered 201 to `POST /v1/attestations` or `/v1/key-attestations`).
    final class RegisteredKeys: HTTPTransport {
        let inner: AppBackend
        private let registered = Mutex<[String]>([])
        init(_ inner: AppBackend) { self.inner = inner }
        var keyIDs: [String] { registered.withLock { $0 } }

        func send(_ request: URLRequest) async throws -> (Data, HTTPURLResponse) {
            let (data, response) = try await inner.send(request)
            let path = request.url?.path ?? ""
            if response.statusCode == 201, path == "/v1/attestations" || path == "/v1/key-attestations",
                let record = try? WireJSON.decode(KeyRecordResponse.self, from: data)
            {
                registered.withLock { $0.append(record.keyId) }
            }
            return (data, response)
        }
    }

    @Test("end to end: deleting every id the client lists leaves none of the install's keys on the service")
    func erasedEndToEnd() async throws {
        try await ServiceProcess.with(apple: EndToEndTests.apple) { service in
            let provider = SimulatedAppAttestProvider(
                device: SimulatedDevice(
                    apple: EndToEndTests.apple,
                    configuration: .init(appID: ServiceProcess.appID, environment: .development)))
            let backend = AppBackend(service: service)
            let transport = RegisteredKeys(backend)
            let manager = AppAttestManager(
                provider: provider, keyStore: MemoryKeyIDStore(),
                service: AttestKitService(baseURL: service, transport: transport),
                configuration: .init(initialBackoff: 0.01, maximumBackoff: 0.05))
            let client = AttestKitHTTPClient(manager: manager, strategy: .appAttestOnly, transport: backend)
            func order() async throws {
                let answer = try await client.performSecureRequest(AppBackend.order(), as: AssertionResponse.self)
                #expect(answer.status == 200 && answer.level == .appAttest)
            }

            // A key, replaced after the device lost it; a key attested for an app key; a reset; a third key.
            try await order()
            let first = try await manager.attestedKeyID()
            provider.invalidate(first)
            try await order()
            _ = try await manager.attestAppKey(publicKeyDER: P256.Signing.PrivateKey().publicKey.derRepresentation)
            try await manager.resetKey()
            try await order()
            let registered = transport.keyIDs
            #expect(registered.count == 4)

            let listed = try await manager.keyIDsForErasure()
            #expect(Set(listed) == Set(registered) && listed.count == registered.count)
            let base = service.absoluteString.hasSuffix("/") ? service.absoluteString : service.absoluteString + "/"
            func admin(_ method: String, _ keyID: String) async throws -> Int {
                // The key's one spelling, percent-encoded (appendingPathComponent would encode the `%` again).
                let path = "v1/keys/" + (keyID.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")
                var request = URLRequest(url: try #require(URL(string: base + path)))
                request.httpMethod = method
                request.setValue("Bearer \(ServiceProcess.adminToken)", forHTTPHeaderField: "Authorization")
                return try await URLSessionTransport().send(request).1.statusCode
            }
            for keyID in registered { #expect(try await admin("GET", keyID) == 200) }
            for keyID in listed { #expect(try await admin("DELETE", keyID) == 204) }
            for keyID in registered { #expect(try await admin("GET", keyID) == 404) }

            // The app, told the erasure went through, forgets the earlier ids; its next request attests a new key
            // (the current one was deleted), and the deleted key is an earlier one again until forgotten.
            try await manager.forgetRetiredKeyIDs(listed)
            #expect(try await manager.keyIDsForErasure() == [listed[0]])
            try await order()
            let next = try await manager.keyIDsForErasure()
            #expect(next.count == 2 && next[1] == listed[0] && next[0] != listed[0])
        }
    }
}
