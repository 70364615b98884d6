import AttestKit
import AttestKitApple
import AttestKitFlows
import AttestKitStore
import AttestKitWire
import Foundation
import Synchronization
import Testing

/// What a client must not be able to steer in the ``RouteGuard``: whether Apple is asked about its DeviceCheck token,
/// how often, whether a lifted token opens more than one request, whether a weaker proof sheds a step-up, and where
/// a key falls in the rollout (issue #28, items 2 to 4).
@Suite("Enforcement a client cannot steer")
struct SteeringTests {
    /// A fake of Apple's DeviceCheck validation: counts calls, calls tokens starting with `bad` invalid, and can be
    /// held until released (to overlap calls).
    final class FakeApple: Sendable {
        let calls = Mutex(0)
        let held = Mutex<[CheckedContinuation<Void, Never>]>([])
        let holding = Mutex(false)

        var count: Int { calls.withLock { $0 } }

        func validate(_ token: String) async throws(AppleServiceError) {
            calls.withLock { $0 += 1 }
            if holding.withLock({ $0 }) {
                await withCheckedContinuation { continuation in held.withLock { $0.append(continuation) } }
            }
            let text = Data(base64Encoded: token).map { String(decoding: $0, as: UTF8.self) } ?? token
            if text.hasPrefix("bad") { throw AppleServiceError(.badDeviceToken, "bad") }
        }

        /// A validator over this fake, on a clock that stands still (a budget must not refill while a loaded
        /// machine runs the test slowly).
        func validator(perClient: Int = 30) -> DeviceTokenValidator {
            let instant = Date(timeIntervalSince1970: 1_800_000_000)
            return DeviceTokenValidator(validationsPerClient: perClient, now: { instant }) {
                (token: String) async throws(AppleServiceError) in
                try await self.validate(token)
            }
        }

        /// Releases every held call.
        func release() {
            holding.withLock { $0 = false }
            for continuation in held.withLock({ calls in
                defer { calls = [] }
                return calls
            }) {
                continuation.resume()
            }
        }
    }

    static func token(_ text: String) -> String { Data(text.utf8).base64EncodedString() }

    static func deviceHeaders(_ text: String) -> [String: String] {
        [AttestKitHeaderNames.deviceToken: token(text)]
    }

    // MARK: Decide before asking Apple

    @Test("Apple is asked only when its answer can change the outcome: not for an App Attest group, report mode or outside the rollout")
    func decideFirst() async throws {
        let bench = try FlowBench()
        let apple = FakeApple()
        let validator = apple.validator()
        let metrics = RecordingMetrics()
        func check(_ policy: EnforcementPolicy, _ token: String, subject: String? = nil) async throws(FlowError)
            -> RequestAttestation
        {
            try await EnforcementTests.check(
                RouteGuard(
                    gate: bench.gate, policy: policy, deviceTokens: validator, metrics: FlowMetrics(factory: metrics)),
                Self.deviceHeaders(token), subject: subject)
        }
        // The group needs App Attest: refused at once.
        let insufficient = await #expect(throws: FlowError.self) {
            try await check(try EnforcementPolicy(), "random-1")
        }
        #expect(insufficient?.code == .trustInsufficient)
        // Report mode: let through, reported as unchecked.
        let reported = try await check(try EnforcementPolicy(mode: .report, minimumTrust: .deviceCheck), "random-2")
        #expect(!reported.enforced && reported.trust == nil && reported.refusal?.code == .deviceTokenUnchecked)
        // Outside the rollout (the application's subject): the same.
        let rollout = try Rollout(fraction: 0.5)
        let outside = try #require((0..<100).map { "user-\($0)" }.first { !rollout.includes($0) })
        let outsider = try await check(
            try EnforcementPolicy(rollout: rollout, minimumTrust: .deviceCheck), "random-3", subject: outside)
        #expect(!outsider.enforced && outsider.refusal?.code == .deviceTokenUnchecked)
        #expect(apple.count == 0, "Apple was asked about a token whose answer could not matter")
        #expect(metrics.count("attestkit_guard_requests_total", ["code": "device_token_unchecked"]) == 2)
        // Enforced and DeviceCheck accepted: now Apple is asked.
        let accepted = try await check(try EnforcementPolicy(minimumTrust: .deviceCheck), "good-1")
        #expect(accepted.trust == .deviceCheck && apple.count == 1)
    }

    @Test("device-token validations have a per-client budget: spent, 429 without asking Apple; other clients unaffected")
    func perClientBudget() async throws {
        let bench = try FlowBench()
        let apple = FakeApple()
        let metrics = RecordingMetrics()
        let routeGuard = RouteGuard(
            gate: bench.gate, policy: try EnforcementPolicy(minimumTrust: .deviceCheck),
            deviceTokens: apple.validator(perClient: 3), metrics: FlowMetrics(factory: metrics))
        func check(_ token: String, client: String) async throws(FlowError) -> RequestAttestation {
            try await routeGuard.check(
                lookup: { $0 == AttestKitHeaderNames.deviceToken ? .value(Self.token(token)) : .absent },
                method: "POST", target: "/orders", body: [UInt8](), client: client)
        }
        // Random strings, each a cache miss: three reach Apple, the fourth is refused before it.
        for index in 0..<3 {
            let refused = await #expect(throws: FlowError.self) { try await check("bad-\(index)", client: "192.0.2.1") }
            #expect(refused?.code == .deviceTokenInvalid)
        }
        let limited = await #expect(throws: FlowError.self) { try await check("bad-3", client: "192.0.2.1") }
        #expect(limited?.code == .rateLimited)
        guard case .rateLimited(let wait) = limited?.kind else {
            Issue.record("not rate limited: \(String(describing: limited))")
            return
        }
        #expect(wait >= 1)
        #expect(apple.count == 3)
        #expect(metrics.count("attestkit_rate_limited_total", ["limit": DeviceTokenValidator.budgetName]) == 1)
        // Another client has its own budget.
        #expect(try await check("good-0", client: "192.0.2.2").trust == .deviceCheck)
        #expect(apple.count == 4)
    }

    @Test("concurrent validations of one token share one call to Apple, and exactly one request is proved by it")
    func singleFlight() async throws {
        let bench = try FlowBench()
        let apple = FakeApple()
        apple.holding.withLock { $0 = true }
        let routeGuard = RouteGuard(
            gate: bench.gate, policy: try EnforcementPolicy(minimumTrust: .deviceCheck),
            deviceTokens: apple.validator(perClient: 0))
        let outcomes = await withTaskGroup(of: FlowError.Code?.self) { group in
            for _ in 0..<16 {
                group.addTask {
                    do throws(FlowError) {
                        _ = try await EnforcementTests.check(routeGuard, Self.deviceHeaders("good-shared"))
                        return nil
                    } catch {
                        return error.code
                    }
                }
            }
            // Let the calls pile up on the held one, then release Apple's answer.
            while apple.count == 0 { await Task.yield() }
            try? await Task.sleep(for: .milliseconds(50))
            apple.release()
            var codes: [FlowError.Code?] = []
            for await code in group { codes.append(code) }
            return codes
        }
        #expect(apple.count == 1, "one call to Apple for one token")
        #expect(outcomes.filter { $0 == nil }.count == 1, "\(outcomes)")
        #expect(outcomes.filter { $0 == .deviceTokenUsed }.count == 15, "\(outcomes)")
    }

    @Test("a DeviceCheck token respelt (other alphabet, no padding, other unused bits) is the same token: used once")
    func respeltDeviceTokens() async throws {
        let bench = try FlowBench()
        let apple = FakeApple()
        let routeGuard = RouteGuard(
            gate: bench.gate, policy: try EnforcementPolicy(minimumTrust: .deviceCheck),
            deviceTokens: apple.validator(perClient: 0))
        // 16 bytes: the canonical spelling ends in one character of 2 used bits and `==`; `?` and `>` make `/` and `+`
        // in it, which base64url writes `_` and `-`.
        let canonical = Self.token("good-token-?>?>?")
        #expect(canonical.hasSuffix("==") && (canonical.contains("+") || canonical.contains("/")))
        let last = canonical.dropLast(2).last.map(String.init) ?? ""
        let values = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")
        let index = try #require(values.firstIndex(of: Character(last)))
        let otherBits = String(canonical.dropLast(3)) + String(values[index ^ 1]) + "=="
        let spellings = [
            canonical.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_"),
            String(canonical.dropLast(2)), otherBits,
        ]
        #expect(Set(spellings).count == 3 && !spellings.contains(canonical))
        _ = try await EnforcementTests.check(routeGuard, [AttestKitHeaderNames.deviceToken: canonical])
        for spelling in spellings {
            do throws(FlowError) {
                _ = try await EnforcementTests.check(routeGuard, [AttestKitHeaderNames.deviceToken: spelling])
                Issue.record("\(spelling): a second use of the token got through")
            } catch {
                #expect(error.code == .deviceTokenUsed, "\(spelling): \(error.code)")
            }
        }
        #expect(apple.count == 1, "every spelling is the cached answer of the one token")
    }

    // MARK: Weaker proof never lowers the bar

    @Test("with a risk threshold, a debug token, a DeviceCheck token or no proof (report, rollout) asks for step-up")
    func weakerProofStepsUp() async throws {
        let bench = try FlowBench()
        let tokens = try DebugTokens([EnforcementTests.debugToken], environments: .development)
        let apple = FakeApple()
        let risk = RiskPolicy(threshold: 5)
        func routeGuard(_ policy: EnforcementPolicy, _ riskPolicy: RiskPolicy = risk) -> RouteGuard {
            RouteGuard(
                gate: bench.gate, policy: policy, debugTokens: tokens, deviceTokens: apple.validator(),
                riskPolicy: riskPolicy)
        }
        let lowest = try EnforcementPolicy(minimumTrust: .debug)
        let debug = try await EnforcementTests.check(
            routeGuard(lowest), [AttestKitHeaderNames.debugToken: EnforcementTests.debugToken])
        #expect(debug.trust == .debug && debug.stepUp)
        let device = try await EnforcementTests.check(routeGuard(lowest), Self.deviceHeaders("good-step-up"))
        #expect(device.trust == .deviceCheck && device.stepUp)
        let reported = try await EnforcementTests.check(routeGuard(try EnforcementPolicy(mode: .report)), [:])
        #expect(!reported.isVerified && reported.stepUp)
        let rollout = try Rollout(fraction: 0.5)
        let outside = try #require((0..<100).map { "user-\($0)" }.first { !rollout.includes($0) })
        let outsider = try await EnforcementTests.check(
            routeGuard(try EnforcementPolicy(rollout: rollout)), [:], subject: outside)
        #expect(!outsider.enforced && outsider.stepUp)
        // An App Attest key of unknown risk keeps the policy's answer for unknown risk (allow here) ...
        let registered = try await bench.registeredDevice()
        let attested = try await EnforcementTests.check(routeGuard(lowest), EnforcementTests.headers(registered))
        #expect(attested.trust == .appAttest && !attested.stepUp)
        // ... and without any risk policy nothing steps up.
        let relaxed = try await EnforcementTests.check(
            routeGuard(lowest, RiskPolicy()), [AttestKitHeaderNames.debugToken: EnforcementTests.debugToken])
        #expect(!relaxed.stepUp)
    }

    @Test("a DeviceCheck token buys one session token at trust devicecheck; it stops verifying once they are refused")
    func deviceTokenSessionToken() async throws {
        let bench = try FlowBench()
        let apple = FakeApple()
        let configuration = try TokenServiceTests.configuration()
        let selling = TokenService(
            configuration: configuration, store: bench.store, riskPolicy: RiskPolicy(threshold: 5),
            deviceTokens: apple.validator())
        let token = Self.token("good-session")
        let issued = try await selling.issue(
            deviceToken: token, client: "192.0.2.1", appIDs: [FlowBench.appID], environment: .production)
        #expect(issued.claims.trust == "devicecheck" && issued.claims.sub.hasPrefix("devicecheck:"))
        #expect(issued.claims.stepUp && issued.claims.riskMetric == nil)
        #expect(!issued.claims.sub.contains(token), "the subject names no device token")
        let reused = await #expect(throws: FlowError.self) {
            try await selling.issue(
                deviceToken: token, client: "192.0.2.1", appIDs: [FlowBench.appID], environment: .production)
        }
        #expect(reused?.code == .deviceTokenUsed)
        #expect(try selling.verify(issued.token).jti == issued.claims.jti)
        // The same signing key, no longer selling: its devicecheck tokens stop verifying, and none is sold.
        let refusing = TokenService(configuration: configuration, store: bench.store)
        #expect(throws: FlowError.self) { try refusing.verify(issued.token) }
        let unsold = await #expect(throws: FlowError.self) {
            try await refusing.issue(
                deviceToken: Self.token("good-other"), client: nil, appIDs: [FlowBench.appID], environment: .production)
        }
        #expect(unsold?.code == .deviceCheckNotConfigured)
        #expect(apple.count == 1)
    }

    // MARK: One spelling per key, and no subject is no escape

    @Test("a key id is accepted in its one canonical spelling only; another spelling cannot leave the rollout")
    func oneSpelling() async throws {
        let bench = try FlowBench()
        let device = try await bench.registeredDevice()
        let canonical = device.keyID.base64
        let spellings = Self.spellings(of: device.keyID)
        #expect(spellings.count >= 3)
        for spelling in spellings {
            #expect(spelling != canonical)
            #expect(try KeyID(string: spelling) == device.keyID, "the library still reads \(spelling)")
        }
        // A rollout that leaves the canonical key out: every other spelling is enforced (refused), never let through.
        var salt = 0
        while try Rollout(fraction: 0.5, salt: "\(salt)").includes(canonical) { salt += 1 }
        let rollout = try Rollout(fraction: 0.5, salt: "\(salt)")
        let routeGuard = RouteGuard(gate: bench.gate, policy: try EnforcementPolicy(rollout: rollout))
        for spelling in spellings {
            var headers = try EnforcementTests.headers(device)
            headers[AttestKitHeaderNames.keyID] = spelling
            let refused = await #expect(throws: FlowError.self) { try await EnforcementTests.check(routeGuard, headers) }
            #expect(refused?.code == .keyIdMalformed, "\(spelling)")
        }
        // The canonical spelling is outside the rollout: reported, still verified.
        let verified = try await EnforcementTests.check(routeGuard, try EnforcementTests.headers(device))
        #expect(!verified.enforced && verified.trust == .appAttest)
        // A group that reports requests without a subject: another spelling is not "no subject", it is enforced.
        let lenient = RouteGuard(
            gate: bench.gate, policy: try EnforcementPolicy(rollout: rollout, enforcesWithoutSubject: false))
        for spelling in spellings {
            var headers = try EnforcementTests.headers(device)
            headers[AttestKitHeaderNames.keyID] = spelling
            let refused = await #expect(throws: FlowError.self) { try await EnforcementTests.check(lenient, headers) }
            #expect(refused?.code == .keyIdMalformed, "\(spelling)")
        }
    }

    @Test("a request that names no subject is enforced below a rollout of 1, unless the group reports it")
    func noSubject() async throws {
        let bench = try FlowBench()
        let rollout = try Rollout(fraction: 0.01)
        let enforced = RouteGuard(gate: bench.gate, policy: try EnforcementPolicy(rollout: rollout))
        await #expect(throws: FlowError.assertionRequired) { try await EnforcementTests.check(enforced, [:]) }
        let lenient = RouteGuard(
            gate: bench.gate, policy: try EnforcementPolicy(rollout: rollout, enforcesWithoutSubject: false))
        let reported = try await EnforcementTests.check(lenient, [:])
        #expect(!reported.enforced && reported.refusal?.code == .assertionRequired)
        #expect(try EnforcementPolicy(rollout: .everyone, enforcesWithoutSubject: false).enforces(nil))
        #expect(try !EnforcementPolicy(mode: .report).enforces(nil))
    }

    /// Other spellings of `keyID` that the Base64 reader decodes to the same 32 bytes: base64url, unpadded, both,
    /// and with non-zero unused bits.
    static func spellings(of keyID: KeyID) -> [String] {
        let standard = keyID.base64
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")
        var unusedBits = Array(standard)
        if let index = alphabet.firstIndex(of: unusedBits[42]) { unusedBits[42] = alphabet[index | 1] }
        let url = standard.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
        let candidates = [
            String(standard.dropLast()), url, String(url.dropLast()), String(unusedBits),
            String(String(unusedBits).dropLast()),
        ]
        var seen: Set<String> = [standard]
        return candidates.filter { seen.insert($0).inserted }
    }
}
