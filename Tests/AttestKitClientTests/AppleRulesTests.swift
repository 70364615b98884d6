import AttestKit
@testable import AttestKitClient
import AttestKitClientSimulator
import AttestKitTesting
import AttestKitWire
import Foundation
import Synchronization
import Testing
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The client by Apple's rules, with the simulated device and a scripted service: how many attestations each
/// failure costs, the fallback levels, counters across a key change, revocation, clock skew.
@Suite("AttestKitClient by Apple's rules (simulated device, scripted service)")
struct AppleRulesTests {
    /// A simulated app over a scripted service.
    struct App {
        let provider: SimulatedAppAttestProvider
        let deviceCheck: SimulatedDeviceCheckProvider
        let store: MemoryKeyIDStore
        let service = FakeService()
        let clock = TestClock()
        let manager: AppAttestManager
        let client: AttestKitHTTPClient

        init(
            supported: Bool = true, deviceCheckSupported: Bool = true, store: MemoryKeyIDStore = MemoryKeyIDStore(),
            configuration: AppAttestManager.Configuration = .init(),
            strategy: AttestationStrategy = .standard
        ) {
            provider = SimulatedAppAttestProvider(
                device: SimulatedDevice(
                    apple: EndToEndTests.apple,
                    configuration: .init(appID: ServiceProcess.appID, environment: .development)),
                supported: supported)
            deviceCheck = SimulatedDeviceCheckProvider(supported: deviceCheckSupported)
            self.store = store
            let clock = clock
            manager = AppAttestManager(
                provider: provider, keyStore: store,
                service: AttestKitService(baseURL: FakeService.serviceURL, transport: service),
                configuration: configuration, now: { clock.now }, random: { 0.999 })
            client = AttestKitHTTPClient(
                manager: manager, deviceCheck: deviceCheck, strategy: strategy, transport: service,
                now: { clock.now })
        }

        /// Sends an order; returns the level it was served at.
        @discardableResult
        func order() async throws -> AttestationLevel {
            try await client.performSecureRequest(URLRequest(url: FakeService.appURL), as: Accepted.self).level
        }

        var keyID: String? { store.registeredKeyID }
    }

    struct Accepted: Decodable, Sendable {
        let ok: Bool
    }

    @Test("serverUnavailable keeps the key and the client data hash, backs off, and falls back meanwhile")
    func serverUnavailable() async throws {
        let app = App()
        app.provider.fail(.attestKey, with: .serverUnavailable)
        // Five requests while Apple is unavailable: one attestation attempt, then the backoff; all served.
        for _ in 0..<5 { #expect(try await app.order() == .deviceCheck) }
        #expect(app.provider.calls.generateKey == 1)
        #expect(app.provider.calls.attestKey == 1)
        #expect(app.service.challenges("attest") == 1)
        let pending = try #require(await app.manager.keyState)
        #expect(pending.stage == .generated && pending.failures == 1)
        #expect(try #require(pending.notBefore) > app.clock.now)

        // After the backoff: the same key, the same client data hash.
        app.clock.advance(3)
        #expect(try await app.order() == .deviceCheck)
        #expect(app.provider.calls.attestKey == 2)
        let keyID = try #require(pending.keyID)
        let hashes = app.provider.attestationHashes(for: keyID)
        #expect(hashes.count == 2 && Set(hashes).count == 1)
        // The backoff doubles: 3 seconds later is too early.
        app.clock.advance(3)
        #expect(try await app.order() == .deviceCheck)
        #expect(app.provider.calls.attestKey == 2)

        app.provider.stopFailing(.attestKey)
        app.clock.advance(2)
        #expect(try await app.order() == .appAttest)
        #expect(app.provider.calls.generateKey == 1)
        #expect(app.provider.calls.attestKey == 3)
        #expect(Set(app.provider.attestationHashes(for: keyID)).count == 1)
        #expect(app.keyID == keyID)
        #expect(await app.manager.attestationCount == 1)
        #expect(app.service.challenges("attest") == 1)
    }

    @Test("the backoff is kept in the store: a relaunch during it makes no device call")
    func persistedBackoff() async throws {
        let store = MemoryKeyIDStore()
        let clock: TestClock
        let provider: SimulatedAppAttestProvider
        do {
            let app = App(store: store)
            app.provider.fail(.attestKey, with: .serverUnavailable)
            #expect(try await app.order() == .deviceCheck)
            #expect(app.provider.calls.attestKey == 1)
            clock = app.clock
            provider = app.provider
        }
        let state = try #require(store.load())
        #expect(state.stage == .generated && state.notBefore != nil && state.clientDataHash != nil)
        // The next launch, same device, same store, one second later.
        let service = FakeService()
        clock.advance(1)
        let manager = AppAttestManager(
            provider: provider, keyStore: store,
            service: AttestKitService(baseURL: FakeService.serviceURL, transport: service), now: { clock.now })
        let error = await #expect(throws: AttestKitClientError.self) { try await manager.attestedKeyID() }
        #expect(error?.code == .unavailable && error?.retryAfter == state.notBefore)
        #expect(provider.calls.attestKey == 1 && provider.calls.generateKey == 1)
        #expect(service.challenges("attest") == 0)
    }

    @Test("a failed registration (503, lost connection, 429) keeps the attested key and sends the same attestation")
    func registrationRetried() async throws {
        let app = App()
        app.service.scriptRegistrations([.status(503, "unavailable"), .drop, .status(429, "rate_limited")])
        #expect(try await app.order() == .deviceCheck)
        for _ in 0..<2 {
            app.clock.advance(60)
            #expect(try await app.order() == .deviceCheck)
        }
        app.clock.advance(60)
        #expect(try await app.order() == .appAttest)
        #expect(app.provider.calls.generateKey == 1)
        #expect(app.provider.calls.attestKey == 1)
        let attempts = app.service.registrationAttempts
        #expect(attempts.count == 4)
        #expect(Set(attempts.map { $0.keyID }).count == 1 && Set(attempts.map { $0.attestation }).count == 1)
        #expect(await app.manager.attestationCount == 1)
    }

    @Test("a registration refused for good makes a new key, after the backoff, never in a loop")
    func registrationRefused() async throws {
        let app = App()
        app.service.scriptRegistrations([.status(403, "challenge_expired")])
        #expect(try await app.order() == .deviceCheck)
        #expect(try await app.order() == .deviceCheck)
        #expect(app.provider.calls.generateKey == 1 && app.provider.calls.attestKey == 1)
        app.clock.advance(3)
        #expect(try await app.order() == .appAttest)
        #expect(app.provider.calls.generateKey == 2 && app.provider.calls.attestKey == 2)
        #expect(Set(app.service.registrationAttempts.map { $0.keyID }).count == 2)
    }

    @Test(
        "a lost registration answer: the retry's challenge_consumed (or challenge_not_found, key_exists) means it registered",
        arguments: [(409, "challenge_consumed"), (403, "challenge_not_found"), (409, "key_exists")])
    func registrationAnswerLost(status: Int, code: String) async throws {
        // challenge_not_found: the service deleted the consumed challenge once it expired (a re-post minutes later).
        // key_exists: the service stored the key but answered 503 and gave the challenge back.
        let app = App()
        app.service.scriptRegistrations([.drop, .status(status, code)])
        #expect(try await app.order() == .deviceCheck)
        app.clock.advance(400)
        #expect(try await app.order() == .appAttest)
        #expect(app.provider.calls.attestKey == 1 && app.provider.calls.generateKey == 1)
    }

    @Test("a persistent invalidKey costs at most one attestation per key and no loop")
    func persistentInvalidKey() async throws {
        let app = App()
        #expect(try await app.order() == .appAttest)
        app.provider.fail(.generateAssertion, with: .invalidKey)
        // The key had worked: it is replaced at once; the new key fails before ever working: backoff.
        #expect(try await app.order() == .deviceCheck)
        #expect(app.provider.calls.attestKey == 2)
        for _ in 0..<5 { #expect(try await app.order() == .deviceCheck) }
        #expect(app.provider.calls.attestKey == 2)
        #expect(app.provider.calls.generateKey == app.provider.calls.attestKey)
        app.clock.advance(3)
        #expect(try await app.order() == .deviceCheck)
        #expect(app.provider.calls.attestKey == 3)
        #expect(app.provider.calls.generateKey == app.provider.calls.attestKey)
    }

    @Test("a service that refuses every new key at its first assertion meets a growing backoff, not a loop")
    func refusedAtFirstAssertion() async throws {
        let app = App()
        // A backend that verifies against another deployment: every key is unknown there.
        app.service.answerApp { $0.hasAssertion ? .status(403, "key_not_found") : nil }
        #expect(try await app.order() == .deviceCheck)
        #expect(app.provider.calls.attestKey == 1)
        // 1 to 2 s (the jitter is fixed at its top here), then 2 to 4 s, then 4 to 8 s.
        app.clock.advance(2.1)
        #expect(try await app.order() == .deviceCheck)
        #expect(app.provider.calls.attestKey == 2)
        app.clock.advance(2.1)
        #expect(try await app.order() == .deviceCheck)
        #expect(app.provider.calls.attestKey == 2, "the second refused key doubled the wait")
        app.clock.advance(2)
        #expect(try await app.order() == .deviceCheck)
        #expect(app.provider.calls.attestKey == 3)
        app.clock.advance(4.1)
        #expect(try await app.order() == .deviceCheck)
        #expect(app.provider.calls.attestKey == 3, "and the third doubled it again")
        #expect(try #require(await app.manager.keyState).failures == 3)

        // Once an assertion is accepted, the failures are over, once the backoff's reach (6 h) has passed since the
        // last replacement: an answer 2xx soon after one proves little (see the next test).
        app.service.answerApp { _ in nil }
        app.clock.advance(4)
        #expect(try await app.order() == .appAttest)
        #expect(try #require(await app.manager.keyState).failures == 3)
        app.clock.advance(6 * 3600)
        #expect(try await app.order() == .appAttest)
        #expect(try #require(await app.manager.keyState).failures == 0)
        #expect(app.provider.calls.attestKey == 4)
    }

    @Test("routes that verify nothing answering 2xx do not reset the backoff of a service that refuses every key")
    func openRoutesDoNotResetTheBackoff() async throws {
        let app = App()
        // The protected route checks against another deployment (every key unknown there); the open one verifies
        // nothing and answers 200 whatever the request carries.
        app.service.answerApp { $0.path == "/protected" && $0.hasAssertion ? .status(403, "key_not_found") : nil }
        let open = URLRequest(url: try #require(URL(string: "https://app.example/open")))
        let protected = URLRequest(url: try #require(URL(string: "https://app.example/protected")))
        for _ in 0..<10 {
            _ = try await app.client.performSecureRequest(open, as: Accepted.self)
            _ = try? await app.client.performSecureRequest(protected, as: Accepted.self)
            app.clock.advance(2.1)
        }
        // Two attestations at the first round (the proven key replaced at once, its successor refused), then one
        // after each doubling wait: 2, 4, 8 s (16 s is past the 21 s the rounds take). Before, every round reset
        // the failures and cost two attestations: 20.
        #expect(app.provider.calls.attestKey <= 6, "\(app.provider.calls.attestKey) attestations")
        #expect(try #require(await app.manager.keyState).failures >= 3)
    }

    @Test("a relaunch after the post: challenge_consumed means registered; on the first post it is a refusal")
    func relaunchAfterPost() async throws {
        let device = App()
        let keyID = try await device.provider.generateKey()
        let attestation = try await device.provider.attestKey(keyID, clientDataHash: Data(repeating: 7, count: 32))
        var posted = KeyState(stage: .attested, keyID: keyID)
        posted.challengeID = "c1"
        posted.attestation = attestation
        posted.registrationPosted = true  // saved before the post; the app was killed before its answer

        let relaunched = App(store: MemoryKeyIDStore(state: posted))
        relaunched.service.scriptRegistrations([.status(409, "challenge_consumed")])
        #expect(try await relaunched.manager.attestedKeyID() == keyID)
        #expect(relaunched.provider.calls.attestKey == 0 && relaunched.provider.calls.generateKey == 0)

        // Never posted before: a consumed challenge is not this attestation's, so the key is not registered.
        var unposted = posted
        unposted.registrationPosted = nil
        let fresh = App(store: MemoryKeyIDStore(state: unposted))
        fresh.service.scriptRegistrations([.status(409, "challenge_consumed")])
        let refused = await #expect(throws: AttestKitClientError.self) { try await fresh.manager.attestedKeyID() }
        #expect(refused?.code == .unavailable)
        let after = try #require(await fresh.manager.keyState)
        #expect(after.stage == .none && after.failures == 1)
    }

    @Test("a registration answered by a proxy (a 4xx without the service's error body) keeps the attestation")
    func registrationAnsweredByProxy() async throws {
        let app = App()
        app.service.scriptRegistrations([.status(403, nil), .status(404, nil)])
        #expect(try await app.order() == .deviceCheck)
        app.clock.advance(3)
        #expect(try await app.order() == .deviceCheck)
        app.clock.advance(5)
        #expect(try await app.order() == .appAttest)
        let attempts = app.service.registrationAttempts
        #expect(attempts.count == 3 && Set(attempts.map(\.attestation)).count == 1)
        #expect(app.provider.calls.generateKey == 1 && app.provider.calls.attestKey == 1)
    }

    @Test("a registration answered 2xx with a page that is not the service's record keeps the attestation")
    func registrationAnsweredByAPage() async throws {
        let app = App()
        app.service.scriptRegistrations([.page(200, "<html>down for maintenance</html>")])
        #expect(try await app.order() == .deviceCheck)
        let kept = try #require(await app.manager.keyState)
        #expect(kept.stage == .attested && kept.attestation != nil)
        app.clock.advance(3)
        #expect(try await app.order() == .appAttest)
        let attempts = app.service.registrationAttempts
        #expect(attempts.count == 2 && Set(attempts.map(\.attestation)).count == 1)
        #expect(app.provider.calls.attestKey == 1)
    }

    @Test("a challenge answer whose id is not a challenge id costs no attestation and falls back")
    func malformedChallengeID() async throws {
        for id in ["c+1=", String(repeating: "c", count: 129), ""] {
            let app = App()
            app.service.answerChallengeIDs(id)
            #expect(try await app.order() == .deviceCheck, "\(id)")
            #expect(app.provider.calls.attestKey == 0, "\(id)")
            #expect(app.service.registrationAttempts.isEmpty, "\(id)")
        }
    }

    @Test("featureUnsupported where isSupported says yes (app extensions) falls back for a long while")
    func featureUnsupported() async throws {
        let observed = LevelLog()
        let app = App(strategy: AttestationStrategy(onLevelChange: { observed.append($0) }))
        app.provider.fail(.generateKey, with: .featureUnsupported)
        for _ in 0..<3 { #expect(try await app.order() == .deviceCheck) }
        #expect(app.provider.calls.generateKey == 1)
        #expect(app.deviceCheck.tokenCount == 3)
        #expect(observed.levels == [.deviceCheck])
        #expect(app.client.currentLevel == .deviceCheck)
        app.clock.advance(25 * 3600)
        app.provider.stopFailing(.generateKey)
        #expect(try await app.order() == .appAttest)
        #expect(observed.levels == [.deviceCheck, .appAttest])
    }

    @Test("the levels: DeviceCheck, then risk-based with the app's hook, then degraded, else unavailable")
    func levels() async throws {
        let hooked = App(
            supported: false, deviceCheckSupported: false,
            strategy: AttestationStrategy(additionalVerification: { request, level in
                var request = request
                request.setValue(level.rawValue, forHTTPHeaderField: "X-Risk-Signal")
                return request
            }))
        #expect(try await hooked.order() == .riskBased)
        #expect(hooked.service.requests.last?.extra == "riskBased")
        #expect(hooked.service.requests.last?.keyID == nil && hooked.service.requests.last?.deviceToken == nil)

        let degraded = App(
            supported: false, deviceCheckSupported: false,
            strategy: AttestationStrategy(levels: [.appAttest, .deviceCheck, .degraded]))
        #expect(try await degraded.order() == .degraded)

        let strict = App(supported: false, strategy: .appAttestOnly)
        let error = await #expect(throws: AttestKitClientError.self) { try await strict.order() }
        #expect(error?.code == .unavailable && error?.deviceError == .featureUnsupported)
        #expect(strict.service.requests.isEmpty)

        // DeviceCheck failing is skipped for its backoff, then tried again.
        let flaky = App(supported: false, strategy: AttestationStrategy(levels: [.deviceCheck, .degraded]))
        flaky.deviceCheck.failNextCalls(1)
        #expect(try await flaky.order() == .degraded)
        #expect(try await flaky.order() == .degraded)
        flaky.clock.advance(301)
        #expect(try await flaky.order() == .deviceCheck)
        #expect(flaky.deviceCheck.tokenCount == 1)
    }

    @Test("an assertion the app makes itself and sends on its own overtakes a request: no key is replaced")
    func directAssertionOvertakes() async throws {
        let app = App()
        #expect(try await app.order() == .appAttest)
        let keyID = try #require(app.keyID)
        // A request of the client on its way; meanwhile the app signs one for its own stack (a WebSocket), which the
        // service accepts first: the request's counter is then not above the last accepted one.
        let (_, overtaken) = try await app.manager.signed(URLRequest(url: FakeService.appURL))
        let own = try await app.manager.assertion(method: "GET", target: "/socket", body: Data())
        #expect(own.keyID == keyID)
        #expect(await app.manager.answered(overtaken, refusal: .counterNotIncreasing) == .resend(replacedKey: false))
        #expect(app.keyID == keyID && app.provider.calls.attestKey == 1)
        // A refusal with no assertion signed after it, twice (the request, then its fresh assertion): a counter gone
        // back, and the key is replaced.
        let (_, behind) = try await app.manager.signed(URLRequest(url: FakeService.appURL))
        #expect(await app.manager.answered(behind, refusal: .counterNotIncreasing) == .resend(replacedKey: false))
        let (_, again) = try await app.manager.signed(URLRequest(url: FakeService.appURL))
        #expect(await app.manager.answered(again, refusal: .counterNotIncreasing) == .resend(replacedKey: true))
    }

    @Test("counters per key: late answers for an old key neither reset the new key nor count for it")
    func countersAcrossKeyChange() async throws {
        let app = App()
        #expect(try await app.order() == .appAttest)
        let oldKey = try #require(app.keyID)
        let request = URLRequest(url: FakeService.appURL)
        // An assertion of the old key on its way while the service reports the key unknown: replaced.
        let (_, late) = try await app.manager.signed(request)
        let (_, refused) = try await app.manager.signed(request)
        #expect(await app.manager.answered(refused, refusal: .keyNotFound) == .resend(replacedKey: true))
        let (_, fresh) = try await app.manager.signed(request)
        let newKey = try #require(app.keyID)
        #expect(newKey != oldKey && fresh.keyID == newKey)
        #expect(app.provider.calls.attestKey == 2)
        // The late answer for the old key is a counter refusal: sent again, the new key kept.
        #expect(await app.manager.answered(late, refusal: .counterNotIncreasing) == .resend(replacedKey: false))
        #expect(app.keyID == newKey)
        // A new-key request overtaken by a later new-key one that was accepted: sent again, not replaced.
        let (_, later) = try await app.manager.signed(request)
        #expect(await app.manager.answered(later, refusal: nil, accepted: true) == .done)
        #expect(await app.manager.answered(fresh, refusal: .counterNotIncreasing) == .resend(replacedKey: false))
        #expect(app.keyID == newKey)
        #expect(app.provider.calls.attestKey == 2)
        // With nothing later of the new key, the refusal is sent again with a fresh assertion; refused too, the
        // key's counter went back: replaced.
        let (_, alone) = try await app.manager.signed(request)
        #expect(await app.manager.answered(alone, refusal: .counterNotIncreasing) == .resend(replacedKey: false))
        #expect(app.keyID == newKey)
        let (_, resent) = try await app.manager.signed(request)
        #expect(await app.manager.answered(resent, refusal: .counterNotIncreasing) == .resend(replacedKey: true))
        #expect(app.keyID == nil)
    }

    @Test("a counter that went back is seen while an older request of the key is still on its way")
    func rollbackBesideAnOlderRequest() async throws {
        let app = App()
        #expect(try await app.order() == .appAttest)
        let request = URLRequest(url: FakeService.appURL)
        // Signed first and left unanswered (a slow upload): its counter is below the next one's, so it cannot be
        // the assertion that overtook it.
        let (_, older) = try await app.manager.signed(request)
        let (_, newer) = try await app.manager.signed(request)
        #expect(await app.manager.answered(newer, refusal: .counterNotIncreasing) == .resend(replacedKey: false))
        let (_, fresh) = try await app.manager.signed(request)
        #expect(await app.manager.answered(fresh, refusal: .counterNotIncreasing) == .resend(replacedKey: true))
        #expect(app.keyID == nil)
        _ = older
    }

    @Test("a copy of an accepted request refused as not increasing: sent again with a fresh assertion, key kept")
    func duplicatedRequest() async throws {
        let app = App()
        #expect(try await app.order() == .appAttest)
        let keyID = try #require(app.keyID)
        // A proxy sent the next request twice: the service accepted the first copy, and the only answer to reach
        // the app was the second copy's, 409 counter_not_increasing. No other assertion of the key explains it.
        final class Script: Sendable {
            let answers = Mutex<[FakeService.Answer]>([.status(409, "counter_not_increasing")])
        }
        let script = Script()
        app.service.answerApp { _ in script.answers.withLock { $0.isEmpty ? nil : $0.removeFirst() } }
        #expect(try await app.order() == .appAttest)
        let sent = app.service.requests.suffix(2)
        #expect(sent.count == 2 && sent.allSatisfy { $0.keyID == keyID })
        #expect(app.keyID == keyID)
        #expect(app.provider.calls.generateKey == 1 && app.provider.calls.attestKey == 1)
        #expect(await app.manager.attestationCount == 1)

        // Refused again, with nothing to explain it, and again once more: the counter went back; a new key.
        script.answers.withLock {
            $0 = [.status(409, "counter_not_increasing"), .status(409, "counter_not_increasing")]
        }
        #expect(try await app.order() == .appAttest)
        #expect(app.keyID != keyID && app.provider.calls.attestKey == 2)
        #expect(app.service.requests.suffix(3).map(\.keyID) == [keyID, keyID, app.keyID])
    }

    @Test("a second manager over the key store cannot reset the first's key")
    func resetBySecondManager() async throws {
        let app = App()
        #expect(try await app.order() == .appAttest)
        let keyID = try #require(app.keyID)
        let second = AppAttestManager(
            provider: app.provider, keyStore: app.store,
            service: AttestKitService(baseURL: FakeService.serviceURL, transport: app.service))
        let refused = await #expect(throws: AttestKitClientError.self) { try await second.resetKey() }
        #expect(refused?.code == .keyStore)
        let named = await #expect(throws: AttestKitClientError.self) { try await second.resetKey(keyID) }
        #expect(named?.code == .keyStore)
        #expect(app.keyID == keyID && app.store.registeredKeyID == keyID)
        #expect(try await app.order() == .appAttest)
        #expect(app.service.requests.last?.keyID == keyID && app.provider.calls.attestKey == 1)
    }

    @Test("key_revoked is reported, not answered with a new attestation, unless the app opts in")
    func revocation() async throws {
        let app = App()
        #expect(try await app.order() == .appAttest)
        let revoked = try #require(app.keyID)
        app.service.answerApp { $0.keyID == revoked ? .status(403, "key_revoked") : nil }
        for _ in 0..<2 {
            let error = await #expect(throws: AttestKitClientError.self) { try await app.order() }
            #expect(error?.code == .keyRevoked)
        }
        // The second request was not even sent, no key was made, no fallback undid the revocation.
        #expect(app.service.requests.count == 2)
        #expect(app.provider.calls.generateKey == 1 && app.provider.calls.attestKey == 1)
        #expect(app.deviceCheck.tokenCount == 0)
        #expect(await app.manager.keyState?.stage == .revoked)
        // The app decides to start over.
        try await app.manager.resetKey()
        #expect(try await app.order() == .appAttest)
        #expect(app.provider.calls.attestKey == 2)

        let optedIn = App(configuration: .init(reattestAfterRevocation: true))
        #expect(try await optedIn.order() == .appAttest)
        let first = try #require(optedIn.keyID)
        optedIn.service.answerApp { $0.keyID == first ? .status(403, "key_revoked") : nil }
        #expect(try await optedIn.order() == .appAttest)
        #expect(optedIn.provider.calls.attestKey == 2 && optedIn.keyID != first)

        // The same code from the app's route (another status) is not the verification's: passed on untouched.
        let route = App()
        route.service.answerApp { _ in .status(400, "key_revoked") }
        let error = await #expect(throws: AttestKitClientError.self) { try await route.order() }
        #expect(error?.code == .httpError && error?.status == 400)
        #expect(await route.manager.keyState?.stage == .registered)
    }

    @Test("re-attesting after revocation: a key revoked at its first assertion waits for the backoff, not a request")
    func revokedNewKeysBackOff() async throws {
        let app = App(configuration: .init(reattestAfterRevocation: true))
        app.service.answerApp { $0.hasAssertion ? .status(403, "key_revoked") : nil }
        for _ in 0..<5 { _ = try? await app.order() }
        // One new key, then the backoff: not two attestations a request.
        #expect(app.provider.calls.attestKey == 1, "\(app.provider.calls.attestKey)")
        #expect(await app.manager.keyState?.notBefore != nil)
    }

    @Test("a device clock set back after a failure does not keep App Attest off for as long as it was ahead")
    func clockSetBackEndsTheWait() async throws {
        let app = App()
        let start = app.clock.now
        // The clock is a month ahead when the service cannot be reached: a backoff from that month.
        app.clock.set(start.addingTimeInterval(30 * 86_400))
        app.service.answerAttestChallenges { _ in .drop }
        #expect(try await app.order() == .deviceCheck)
        let notBefore = try #require(await app.manager.keyState?.notBefore)
        #expect(notBefore > start.addingTimeInterval(29 * 86_400))
        // Corrected, and the service back: past the longest backoff, App Attest serves again, and so does an
        // attestation over the app's bytes (it waited out the month before).
        app.clock.set(start)
        app.service.answerAttestChallenges { _ in nil }
        let bound = try await app.manager.attestKey(appData: Data("user-42".utf8))
        #expect(bound.appData == Data("user-42".utf8).base64EncodedString())
        #expect(try await app.order() == .appAttest)
    }

    @Test("a clock set back ends a DeviceCheck backoff and a kept key's deferral set while it was a year ahead")
    func clockSetBackEndsOtherWaits() async throws {
        let flaky = App(supported: false, strategy: AttestationStrategy(levels: [.deviceCheck, .degraded]))
        let start = flaky.clock.now
        flaky.clock.set(start.addingTimeInterval(365 * 86_400))
        flaky.deviceCheck.failNextCalls(1)
        #expect(try await flaky.order() == .degraded)
        flaky.clock.set(start)
        #expect(try await flaky.order() == .deviceCheck)

        // The service's ramp defers an attestation over the app's bytes for an hour, a year ahead.
        let app = App()
        app.clock.set(start.addingTimeInterval(365 * 86_400))
        app.service.answerAttestChallenges { _ in .deferred("3600") }
        let deferred = await #expect(throws: AttestKitClientError.self) {
            try await app.manager.attestKey(appData: Data("user-42".utf8))
        }
        #expect(deferred?.code == .attestationDeferred)
        app.clock.set(start)
        app.service.answerAttestChallenges { _ in nil }
        let bound = try await app.manager.attestKey(appData: Data("user-42".utf8))
        #expect(bound.appData == Data("user-42".utf8).base64EncodedString())
    }

    @Test("a key the service let expire (403 key_expired) is discarded: a new key attested, the request sent again")
    func expiredKey() async throws {
        let app = App()
        #expect(try await app.order() == .appAttest)
        let expired = try #require(app.keyID)
        app.service.answerApp { $0.keyID == expired ? .status(403, "key_expired") : nil }
        #expect(try await app.order() == .appAttest)
        let replaced = try #require(app.keyID)
        #expect(replaced != expired && app.provider.calls.attestKey == 2)
        #expect(app.service.requests.count == 3 && app.service.requests.last?.keyID == replaced)
        #expect(await app.manager.keyState?.stage == .registered)

        // The same code from the app's route (another status) is not the verification's: passed on untouched.
        let route = App()
        route.service.answerApp { _ in .status(410, "key_expired") }
        let error = await #expect(throws: AttestKitClientError.self) { try await route.order() }
        #expect(error?.code == .httpError && error?.status == 410)
        #expect(route.provider.calls.attestKey == 1)
    }

    @Test("a key attested by a build of another category (403 policy_validation_category_changed) is replaced")
    func categoryChangedKey() async throws {
        let app = App()
        #expect(try await app.order() == .appAttest)
        let inherited = try #require(app.keyID)
        app.service.answerApp { $0.keyID == inherited ? .status(403, "policy_validation_category_changed") : nil }
        #expect(try await app.order() == .appAttest)
        let replaced = try #require(app.keyID)
        #expect(replaced != inherited && app.provider.calls.attestKey == 2)
        #expect(app.service.requests.last?.keyID == replaced)
        #expect(await app.manager.keyState?.stage == .registered)
    }

    @Test("a device clock outside the service's window switches to service challenges")
    func clockSkew() async throws {
        let app = App()
        app.service.answerApp { $0.timestamp != nil ? .status(403, "timestamp_outside_window") : nil }
        #expect(try await app.order() == .appAttest)
        #expect(await app.manager.usesServiceChallenges)
        #expect(try await app.order() == .appAttest)
        let requests = app.service.requests
        #expect(requests.count == 3)
        #expect(requests[0].timestamp != nil && requests[1].challenge != nil && requests[2].challenge != nil)
        #expect(app.service.challenges("assert") == 2)
        #expect(app.provider.calls.attestKey == 1)

        let fixed = App(configuration: .init(switchToChallengesOnClockSkew: false))
        fixed.service.answerApp { _ in .status(403, "timestamp_outside_window") }
        let error = await #expect(throws: AttestKitClientError.self) { try await fixed.order() }
        #expect(error?.verificationRefusal == .timestampOutsideWindow)
    }

    @Test("two managers over one key store: the second is refused; system errors arrive wrapped")
    func storesAndErrors() async throws {
        let app = App()
        let second = AppAttestManager(
            provider: app.provider, keyStore: app.store,
            service: AttestKitService(baseURL: FakeService.serviceURL, transport: app.service))
        let refused = await #expect(throws: AttestKitClientError.self) { try await second.attestedKeyID() }
        #expect(refused?.code == .keyStore)
        #expect(try await app.order() == .appAttest)

        struct Broken: KeyIDStore {
            var identity: String { "broken" }
            func load() throws -> KeyState? { throw CocoaError(.fileReadNoPermission) }
            func save(_ state: KeyState) throws { throw CocoaError(.fileWriteNoPermission) }
            func remove() throws {}
        }
        let broken = AppAttestManager(
            provider: app.provider, keyStore: Broken(),
            service: AttestKitService(baseURL: FakeService.serviceURL, transport: app.service))
        let wrapped = await #expect(throws: AttestKitClientError.self) { try await broken.attestedKeyID() }
        #expect(wrapped?.code == .keyStore)

        let dropped = AttestKitService(baseURL: FakeService.serviceURL, transport: app.service)
        app.service.scriptRegistrations([.drop])
        let network = await #expect(throws: AttestKitClientError.self) {
            try await dropped.registerAttestation(keyID: "a2V5", attestation: Data([1]), challengeID: "c1")
        }
        #expect(network?.code == .transport)
    }

    @Test("performSecureRequest decodes the answer and refuses one of another shape")
    func typedRequest() async throws {
        let app = App()
        let answer = try await app.client.performSecureRequest(URLRequest(url: FakeService.appURL), as: Accepted.self)
        #expect(answer.value.ok && answer.level == .appAttest && answer.status == 200)
        struct Order: Decodable, Sendable { let id: Int }
        let error = await #expect(throws: AttestKitClientError.self) {
            try await app.client.performSecureRequest(URLRequest(url: FakeService.appURL), as: Order.self)
        }
        #expect(error?.code == .invalidResponse)
    }

    @Test("the key state: stored as JSON, a bare key id (earlier versions) read as registered, garbage refused")
    func keyState() throws {
        var state = KeyState(stage: .attested, keyID: "a2V5")
        state.attestation = Data([1, 2, 3])
        state.notBefore = Date(timeIntervalSince1970: 1_763_700_000.5)
        #expect(try KeyState.decoded(state.encoded()) == state)
        #expect(try KeyState.decoded(Data("a2V5\n".utf8)) == .registered("a2V5"))
        #expect(throws: DecodingError.self) { try KeyState.decoded(Data("not base64!".utf8)) }
        #expect(Backoff(initial: 2, maximum: 60).delay(failures: 1, random: 0) == 1)
        #expect(Backoff(initial: 2, maximum: 60).delay(failures: 3, random: 0.999_999) <= 8)
        #expect(Backoff(initial: 2, maximum: 60).delay(failures: 40, random: 1) == 60)
    }
}

/// The levels an ``AttestationStrategy/onLevelChange`` hook saw.
final class LevelLog: @unchecked Sendable {
    private let lock = NSLock()
    private var seen: [AttestationLevel] = []
    var levels: [AttestationLevel] {
        lock.lock()
        defer { lock.unlock() }
        return seen
    }
    func append(_ level: AttestationLevel) {
        lock.lock()
        defer { lock.unlock() }
        seen.append(level)
    }
}
