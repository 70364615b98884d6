import AttestKit
import AttestKitClient
import AttestKitClientSimulator
import AttestKitWire
import Foundation
import Testing

/// `attestKey(appData:)` by Apple's rules, with the simulated device and a scripted service: what each failure costs
/// (nothing a passing one), the ramp's deferral, concurrent calls.
@Suite("AttestKitClient attestation with app data (simulated device, scripted service)")
struct ClientDataTests {
    typealias App = AppleRulesTests.App

    static let appData = Data(#"{"user":"42"}"#.utf8)

    @Test("serverUnavailable and a lost post burn nothing: the same key, client data and attestation are reused")
    func nothingBurnt() async throws {
        let app = App()
        app.provider.fail(.attestKey, with: .serverUnavailable, times: 1)
        let unavailable = await #expect(throws: AttestKitClientError.self) {
            try await app.manager.attestKey(appData: Self.appData)
        }
        #expect(unavailable?.code == .unavailable && unavailable?.deviceError == .serverUnavailable)

        app.service.scriptRegistrations([.drop])
        let lost = await #expect(throws: AttestKitClientError.self) {
            try await app.manager.attestKey(appData: Self.appData)
        }
        #expect(lost?.code == .unavailable)
        #expect(app.keyID == nil)

        let answer = try await app.manager.attestKey(appData: Self.appData)
        let sent = app.service.registrationAttempts
        #expect(sent.count == 2)
        #expect(sent.allSatisfy { $0.keyID == answer.keyId })
        // The same attestation, over the same client data.
        #expect(Set(sent.map(\.attestation)).count == 1 && Set(sent.map(\.clientData)).count == 1)
        #expect(answer.appData == Self.appData.base64EncodedString() && app.keyID == answer.keyId)
        // One key, attested twice with one client data hash (after serverUnavailable, as Apple asks), one challenge.
        #expect(app.provider.calls.generateKey == 1 && app.provider.calls.attestKey == 2)
        let hashes = app.provider.attestationHashes(for: answer.keyId)
        #expect(hashes.count == 2 && hashes[0] == hashes[1])
        #expect(app.service.challenges("attest") == 1)
        #expect(await app.manager.attestationCount == 1)
    }

    @Test(
        "a lost answer: the post again's challenge_consumed (challenge_not_found, key_exists) means registered",
        arguments: [(409, "challenge_consumed"), (403, "challenge_not_found"), (409, "key_exists")])
    func answerLost(status: Int, code: String) async throws {
        let app = App()
        // The service registers the first post, and its answer is lost; the second post finds it registered.
        app.service.scriptRegistrations([.drop, .status(status, code)])
        let lost = await #expect(throws: AttestKitClientError.self) {
            try await app.manager.attestKey(appData: Self.appData)
        }
        #expect(lost?.code == .unavailable)
        let registered = await #expect(throws: AttestKitClientError.self) {
            try await app.manager.attestKey(appData: Self.appData)
        }
        // Not a refusal: no record to return, but nothing attested again, and the key is the manager's.
        #expect(registered?.code == .answerLost)
        let sent = app.service.registrationAttempts
        #expect(sent.count == 2 && sent[0].keyID == sent[1].keyID && sent[0].attestation == sent[1].attestation)
        #expect(app.provider.calls.generateKey == 1 && app.provider.calls.attestKey == 1)
        #expect(app.keyID == sent[0].keyID && app.service.challenges("attest") == 1)
        #expect(await app.manager.attestationCount == 1)
        #expect(try await app.order() == .appAttest)
        #expect(app.service.requests.last?.keyID == sent[0].keyID && app.provider.calls.attestKey == 1)
    }

    @Test("a posted attestation outlives its challenge: posted again, it registers or the call starts over at once")
    func postedPastExpiry() async throws {
        let app = ServiceClockTests.app(serviceAhead: 0)
        app.service.scriptRegistrations([.drop, .status(409, "challenge_consumed")])
        _ = try? await app.manager.attestKey(appData: Self.appData)
        app.clock.advance(400)  // the challenge's 300 s are over, but the service still has it, consumed
        let registered = await #expect(throws: AttestKitClientError.self) {
            try await app.manager.attestKey(appData: Self.appData)
        }
        #expect(registered?.code == .answerLost)
        #expect(app.provider.calls.generateKey == 1 && app.provider.calls.attestKey == 1)
        #expect(app.service.registrationAttempts.count == 2 && app.keyID == app.service.registrationAttempts[0].keyID)

        // The lost post had not registered it (the challenge expired unconsumed), or nothing tells (the service's
        // cleanup deletes expired challenges, consumed or not): a new key, in the same call.
        for code in ["challenge_expired", "challenge_not_found"] {
            let other = ServiceClockTests.app(serviceAhead: 0)
            other.service.scriptRegistrations([.drop, .status(403, code)])
            _ = try? await other.manager.attestKey(appData: Self.appData)
            other.clock.advance(400)
            let answer = try await other.manager.attestKey(appData: Self.appData)
            let sent = other.service.registrationAttempts
            #expect(sent.count == 3 && sent[1].keyID == sent[0].keyID && sent[2].keyID == answer.keyId, "\(code)")
            #expect(answer.keyId != sent[0].keyID && other.keyID == answer.keyId, "\(code)")
            #expect(other.provider.calls.generateKey == 2 && other.provider.calls.attestKey == 2, "\(code)")
        }
    }

    @Test("a refusal for good, or a key the device cannot attest, starts over with a new key and challenge")
    func refused() async throws {
        let app = App()
        app.service.scriptRegistrations([.status(403, "attestation_invalid")])
        let refused = await #expect(throws: AttestKitClientError.self) {
            try await app.manager.attestKey(appData: Self.appData)
        }
        #expect(refused?.code == .httpError && refused?.serviceCode == "attestation_invalid")

        app.provider.fail(.attestKey, with: .invalidKey, times: 1)
        let invalid = await #expect(throws: AttestKitClientError.self) {
            try await app.manager.attestKey(appData: Self.appData)
        }
        #expect(invalid?.code == .unavailable && invalid?.deviceError == .invalidKey)

        let answer = try await app.manager.attestKey(appData: Self.appData)
        let sent = app.service.registrationAttempts
        #expect(sent.count == 2 && sent[0].keyID != sent[1].keyID && sent[0].clientData != sent[1].clientData)
        #expect(sent[1].keyID == answer.keyId)
        #expect(app.provider.calls.generateKey == 3 && app.service.challenges("attest") == 3)
    }

    @Test("a deferral keeps the key: the service is not asked again before Retry-After, then the same key attests")
    func deferred() async throws {
        let app = App()
        app.service.answerAttestChallenges { _ in .deferred("600") }
        let deferral = await #expect(throws: AttestKitClientError.self) {
            try await app.manager.attestKey(appData: Self.appData)
        }
        #expect(deferral?.code == .attestationDeferred)
        let early = await #expect(throws: AttestKitClientError.self) {
            try await app.manager.attestKey(appData: Self.appData)
        }
        #expect(early?.code == .attestationDeferred)
        #expect(app.service.attestChallengeKeyIDs.count == 1 && app.provider.calls.attestKey == 0)

        app.service.answerAttestChallenges { _ in nil }
        app.clock.advance(601)
        let answer = try await app.manager.attestKey(appData: Self.appData)
        // The key the ramp drew first asked again: a new key would have been a new draw.
        #expect(app.service.attestChallengeKeyIDs == [answer.keyId, answer.keyId])
        #expect(app.provider.calls.generateKey == 1 && app.provider.calls.attestKey == 1)
    }

    @Test("concurrent calls with the same bytes share one attestation; other bytes attest a key of their own")
    func concurrent() async throws {
        let app = App()
        // The post is held, and the second call starts once the first has asked for its challenge: it arrives while
        // the first is under way, whatever the machine's load (no race between two calls started together).
        app.service.registrationDelay(milliseconds: 1_000)
        let first = Task { try await app.manager.attestKey(appData: Self.appData) }
        for _ in 0..<2_000 where app.service.challenges("attest") == 0 { try await Task.sleep(for: .milliseconds(5)) }
        let two = try await app.manager.attestKey(appData: Self.appData)
        let one = try await first.value
        #expect(one.keyId == two.keyId)
        #expect(app.provider.calls.attestKey == 1 && app.service.registrationAttempts.count == 1)

        let other = try await app.manager.attestKey(appData: Data("user-43".utf8))
        #expect(other.keyId != one.keyId && app.keyID == other.keyId)
        #expect(app.provider.calls.attestKey == 2)
    }

    @Test("calls with the same bytes made while the manager obtains its own key still share one attestation")
    func concurrentWhileObtaining() async throws {
        let app = App()
        app.service.registrationDelay(milliseconds: 1_000)
        let manager = app.manager
        // The launch's attestedKeyID() is under way (its post held) when two calls with the same bytes arrive.
        let launch = Task { try await manager.attestedKeyID() }
        for _ in 0..<2_000 where app.service.challenges("attest") == 0 { try await Task.sleep(for: .milliseconds(5)) }
        async let one = manager.attestKey(appData: Self.appData)
        async let two = manager.attestKey(appData: Self.appData)
        let (first, second) = try await (one, two)
        _ = try await launch.value
        #expect(first.keyId == second.keyId && app.keyID == first.keyId)
        // The launch's key and one key for the bytes: two attestations, not three.
        #expect(app.provider.calls.attestKey == 2 && app.service.registrationAttempts.count == 2)
    }

    @Test("a request waiting for the key while the bytes' attestation is refused gets unavailable, and falls back")
    func waiterOfARefusal() async throws {
        let app = App()
        app.service.registrationDelay(milliseconds: 1_000)
        app.service.scriptRegistrations([.status(403, "attestation_invalid")])
        let manager = app.manager
        let attesting = Task { try await manager.attestKey(appData: Self.appData) }
        for _ in 0..<2_000 where app.service.challenges("attest") == 0 { try await Task.sleep(for: .milliseconds(5)) }
        // A request's assertion waits for the key the bytes' attestation is obtaining.
        let waiting = await #expect(throws: AttestKitClientError.self) { try await manager.attestedKeyID() }
        // `unavailable` is what makes the strategy try its next level (DeviceCheck); the refusal is the caller's.
        #expect(waiting?.code == .unavailable)
        let refused = await #expect(throws: AttestKitClientError.self) { try await attesting.value }
        #expect(refused?.code == .httpError && refused?.serviceCode == "attestation_invalid")
        #expect(app.service.registrationAttempts.count == 1 && app.keyID == nil)
    }

    @Test("a revoked key stays revoked, and a backoff holds, for attestations with app data too")
    func revokedAndBackingOff() async throws {
        var revoked = KeyState(stage: .revoked, keyID: "a2V5")
        let app = App(store: MemoryKeyIDStore(state: revoked))
        let refused = await #expect(throws: AttestKitClientError.self) {
            try await app.manager.attestKey(appData: Self.appData)
        }
        #expect(refused?.code == .keyRevoked)
        // The app accepts the revocation: a new key, bound to its bytes.
        try await app.manager.resetKey()
        #expect(try await app.manager.attestKey(appData: Self.appData).keyId == app.keyID)

        revoked = KeyState()
        revoked.failures = 2
        revoked.notBefore = TestClock().now.addingTimeInterval(60)
        let waiting = App(store: MemoryKeyIDStore(state: revoked))
        let early = await #expect(throws: AttestKitClientError.self) {
            try await waiting.manager.attestKey(appData: Self.appData)
        }
        #expect(early?.code == .unavailable && early?.retryAfter == revoked.notBefore)
        #expect(waiting.provider.calls.generateKey == 0 && waiting.service.challenges("attest") == 0)
        waiting.clock.advance(61)
        #expect(try await waiting.manager.attestKey(appData: Self.appData).keyId == waiting.keyID)
    }
}
