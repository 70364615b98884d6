import AttestKit
import AttestKitApple
import AttestKitFlows
import AttestKitStore
import AttestKitWire
import CoreMetrics
import Foundation
import Synchronization
import Testing

/// Enforcement modes, rollout, trust levels, the DeviceCheck fallback and debug tokens: the decisions of
/// ``RouteGuard``, without a framework (both middlewares call it).
@Suite("Enforcement")
struct EnforcementTests {
    static let debugToken = "debug-token-of-at-least-thirty-two-characters"

    /// The headers of a `POST /orders` request of `device` (timestamp freshness), as a lookup.
    static func headers(
        _ device: FlowBench.Device, extra: [String: String] = [:], body: [UInt8] = Array("{}".utf8)
    ) throws -> [String: String] {
        let milliseconds = FlowBench.milliseconds()
        let (assertion, _) = try device.assertion(freshness: .timestamp(milliseconds: milliseconds), body: body)
        return [
            AttestKitHeaderNames.keyID: device.keyID.base64,
            AttestKitHeaderNames.assertion: Data(assertion).base64EncodedString(),
            AttestKitHeaderNames.timestamp: String(milliseconds),
        ].merging(extra) { $1 }
    }

    static func check(
        _ routeGuard: RouteGuard, _ headers: [String: String], subject: String? = nil
    ) async throws(FlowError) -> RequestAttestation {
        try await routeGuard.check(
            lookup: { name in headers[name].map { .value($0) } ?? .absent }, method: "POST", target: "/orders",
            body: Array("{}".utf8), subject: subject)
    }

    // MARK: Rollout

    @Test(
        "a rollout enforces a fixed share of many keys, within tolerance", arguments: [0.0, 0.01, 0.1, 0.5, 0.9, 1.0])
    func rolloutShare(fraction: Double) throws {
        let rollout = try Rollout(fraction: fraction, salt: "orders")
        let subjects = (0..<20_000).map { "key-\($0)" }
        let share = Double(subjects.filter { rollout.includes($0) }.count) / Double(subjects.count)
        // Binomial: 4 standard deviations of 20 000 draws is at most 0.0142.
        #expect(abs(share - fraction) <= 0.0142, "share \(share) for \(fraction)")
    }

    @Test("a subject's place is stable: the same answer every time, and raising the fraction only adds subjects")
    func rolloutStable() throws {
        let low = try Rollout(fraction: 0.2)
        let high = try Rollout(fraction: 0.6)
        for index in 0..<2_000 {
            let subject = "device-\(index)"
            #expect(low.includes(subject) == low.includes(subject))
            #expect(low.place(of: subject) == (try Rollout(fraction: 0.2)).place(of: subject))
            if low.includes(subject) { #expect(high.includes(subject)) }
        }
        let salted = try Rollout(fraction: 0.5, salt: "other")
        let differing = (0..<1_000).filter {
            salted.includes("d\($0)") != (try? Rollout(fraction: 0.5))?.includes("d\($0)")
        }
        #expect(differing.count > 300, "another salt draws another sample")
    }

    @Test("without a subject a request is in the rollout only at 1; fractions outside 0...1 are refused")
    func rolloutEdges() throws {
        #expect(try !Rollout(fraction: 0.99).includes(nil))
        #expect(Rollout.everyone.includes(nil))
        #expect(try !Rollout(fraction: 0).includes("anyone"))
        for bad in [-0.1, 1.01, Double.nan, .infinity] {
            #expect(throws: FlowError.self) { try Rollout(fraction: bad) }
        }
    }

    // MARK: Modes

    @Test("enforce: a verified assertion passes at app_attest; a missing or bad one is thrown")
    func enforce() async throws {
        let bench = try FlowBench()
        let device = try await bench.registeredDevice()
        let metrics = RecordingMetrics()
        let routeGuard = RouteGuard(gate: bench.gate, metrics: FlowMetrics(factory: metrics))
        let accepted = try await Self.check(routeGuard, Self.headers(device))
        #expect(accepted.trust == .appAttest && accepted.enforced && accepted.key?.keyID == device.keyID)
        await #expect(throws: FlowError.assertionRequired) { try await Self.check(routeGuard, [:]) }
        var forged = try Self.headers(device)
        forged[AttestKitHeaderNames.assertion] = Data(repeating: 7, count: 90).base64EncodedString()
        await #expect(throws: FlowError.self) { try await Self.check(routeGuard, forged) }
        #expect(metrics.count("attestkit_guard_requests_total", ["mode": "enforce", "outcome": "accepted"]) == 1)
        #expect(metrics.count("attestkit_guard_requests_total", ["mode": "enforce", "outcome": "rejected"]) == 2)
        #expect(metrics.count("attestkit_guard_requests_total", ["mode": "report"]) == 0)
    }

    @Test("report: refusals are let through unverified, carried on the decision and counted apart")
    func report() async throws {
        let bench = try FlowBench()
        let device = try await bench.registeredDevice()
        let metrics = RecordingMetrics()
        let policy = try EnforcementPolicy(group: "orders", mode: .report)
        let routeGuard = RouteGuard(gate: bench.gate, policy: policy, metrics: FlowMetrics(factory: metrics))
        let missing = try await Self.check(routeGuard, [:])
        #expect(!missing.isVerified && !missing.enforced && missing.refusal?.code == .assertionRequired)
        let headers = try Self.headers(device)
        let verified = try await Self.check(routeGuard, headers)
        #expect(verified.trust == .appAttest && !verified.enforced && verified.refusal == nil)
        let replay = try await Self.check(routeGuard, headers)
        #expect(!replay.isVerified && replay.refusal?.code.rawValue == "counter_not_increasing")
        #expect(metrics.count("attestkit_guard_requests_total", ["group": "orders", "mode": "report"]) == 3)
        #expect(
            metrics.count(
                "attestkit_guard_requests_total", ["mode": "report", "code": "counter_not_increasing"]) == 1)
        #expect(metrics.count("attestkit_guard_requests_total", ["mode": "enforce"]) == 0)
        #expect(throws: FlowError.self) { try replay.require(.debug) }
    }

    @Test("off: nothing is read, nothing counted, nothing verified")
    func off() async throws {
        let bench = try FlowBench()
        let metrics = RecordingMetrics()
        let policy = try EnforcementPolicy(mode: .off)
        let routeGuard = RouteGuard(gate: bench.gate, policy: policy, metrics: FlowMetrics(factory: metrics))
        #expect(!routeGuard.readsRequests)
        let decision = try await Self.check(routeGuard, [:])
        #expect(!decision.isVerified && decision.refusal == nil)
        #expect(metrics.total == 0)
        #expect(!decision.stepUp)
        // Nothing proved under an active risk policy: a step-up, as for every request that proves nothing.
        let asking = RouteGuard(
            gate: bench.gate, policy: policy, riskPolicy: RiskPolicy(threshold: 5, stepUpWhileUnknown: true))
        #expect(try await Self.check(asking, [:]).stepUp)
    }

    @Test("enforce with a rollout: enforced for the subjects in it, reported for the others")
    func enforceRollout() async throws {
        let bench = try FlowBench()
        let rollout = try Rollout(fraction: 0.5)
        let routeGuard = RouteGuard(gate: bench.gate, policy: try EnforcementPolicy(mode: .enforce, rollout: rollout))
        let inside = (0..<100).map { "user-\($0)" }.first { rollout.includes($0) }
        let outside = (0..<100).map { "user-\($0)" }.first { !rollout.includes($0) }
        let outsider = try await Self.check(routeGuard, [:], subject: try #require(outside))
        #expect(!outsider.enforced && outsider.refusal?.code == .assertionRequired)
        await #expect(throws: FlowError.assertionRequired) {
            try await Self.check(routeGuard, [:], subject: try #require(inside))
        }
    }

    // MARK: Trust levels and fallbacks

    @Test("debug tokens: at least 32 characters, refused while production is allowed, accepted at trust debug")
    func debugTokens() async throws {
        #expect(throws: FlowError.self) { try DebugTokens(["short"], environments: .development) }
        // A comma: the header would be taken for a repeated one joined by a proxy, so it could never be presented.
        #expect(throws: FlowError.self) {
            try DebugTokens(
                [String(repeating: "a", count: 20) + "," + String(repeating: "b", count: 20)],
                environments: .development)
        }
        let production = #expect(throws: FlowError.self) {
            try DebugTokens([Self.debugToken], environments: .both)
        }
        #expect(production?.code == .debugTokensRefused)
        #expect(try DebugTokens([], environments: .production).isEmpty)
        let tokens = try DebugTokens([Self.debugToken], environments: .development)
        #expect(tokens.contains(Self.debugToken))
        #expect(!tokens.contains(Self.debugToken + "x"))
        #expect(!tokens.contains(String(Self.debugToken.dropLast())))

        let bench = try FlowBench()
        let metrics = RecordingMetrics()
        let lowest = try EnforcementPolicy(minimumTrust: .debug)
        let routeGuard = RouteGuard(
            gate: bench.gate, policy: lowest, debugTokens: tokens, metrics: FlowMetrics(factory: metrics))
        let decision = try await Self.check(routeGuard, [AttestKitHeaderNames.debugToken: Self.debugToken])
        #expect(decision.trust == .debug && decision.key == nil)
        #expect(metrics.count("attestkit_guard_requests_total", ["trust": "debug", "outcome": "accepted"]) == 1)
        let wrong = await #expect(throws: FlowError.self) {
            try await Self.check(routeGuard, [AttestKitHeaderNames.debugToken: String(repeating: "x", count: 40)])
        }
        #expect(wrong?.code == .debugTokenInvalid)
        // The default group accepts App Attest only: a right debug token is not enough.
        let strict = RouteGuard(gate: bench.gate, debugTokens: tokens)
        let refused = await #expect(throws: FlowError.self) {
            try await Self.check(strict, [AttestKitHeaderNames.debugToken: Self.debugToken])
        }
        #expect(refused?.code == .trustInsufficient)
    }

    @Test("the DeviceCheck fallback: validated with Apple, used once, cached, bounded; Apple's failures are not cached")
    func deviceCheckFallback() async throws {
        let calls = Mutex(0)
        let failing = Mutex(false)
        let validator = DeviceTokenValidator(capacity: 2, ttl: 600) { (token: String) async throws(AppleServiceError) in
            calls.withLock { $0 += 1 }
            if failing.withLock({ $0 }) { throw AppleServiceError(.serviceUnavailable, "down") }
            let text = Data(base64Encoded: token).map { String(decoding: $0, as: UTF8.self) } ?? token
            if text.hasPrefix("bad") { throw AppleServiceError(.badDeviceToken, "bad") }
        }
        let bench = try FlowBench()
        let metrics = RecordingMetrics()
        let routeGuard = RouteGuard(
            gate: bench.gate, policy: try EnforcementPolicy(minimumTrust: .deviceCheck), deviceTokens: validator,
            metrics: FlowMetrics(factory: metrics))
        let good = Data("good-token".utf8).base64EncodedString()
        let decision = try await Self.check(routeGuard, [AttestKitHeaderNames.deviceToken: good])
        #expect(decision.trust == .deviceCheck && decision.key == nil)
        // The token proved one request: presented again it is refused as used, from the validator's memory of used
        // tokens, without asking Apple or the cache.
        let reused = await #expect(throws: FlowError.self) {
            try await Self.check(routeGuard, [AttestKitHeaderNames.deviceToken: good])
        }
        #expect(reused?.code == .deviceTokenUsed && reused?.kind == .conflict)
        #expect(calls.withLock { $0 } == 1, "the second request is answered from the cache")
        let bad = Data("bad-token".utf8).base64EncodedString()
        let invalid = await #expect(throws: FlowError.self) {
            try await Self.check(routeGuard, [AttestKitHeaderNames.deviceToken: bad])
        }
        #expect(invalid?.code == .deviceTokenInvalid)
        _ = try? await Self.check(routeGuard, [AttestKitHeaderNames.deviceToken: bad])
        #expect(calls.withLock { $0 } == 2, "a bad token is cached too")
        for index in 0..<5 {
            _ = try await validator.isValid(Data("other-\(index)".utf8).base64EncodedString())
        }
        #expect(validator.cachedCount == 2, "bounded")
        failing.withLock { $0 = true }
        let down = await #expect(throws: FlowError.self) {
            try await Self.check(
                routeGuard, [AttestKitHeaderNames.deviceToken: Data("fresh".utf8).base64EncodedString()])
        }
        #expect(down?.code.rawValue == "apple_unavailable")
        // Answered from the cache: the bad token's second presentation (a used token never gets that far).
        #expect(metrics.count("attestkit_device_token_validations_total", ["source": "cache"]) == 1)
        // App Attest only: a device token is not enough, and Apple is not asked.
        let strict = RouteGuard(gate: bench.gate, deviceTokens: validator)
        failing.withLock { $0 = false }
        let before = calls.withLock { $0 }
        let insufficient = await #expect(throws: FlowError.self) {
            try await Self.check(strict, [AttestKitHeaderNames.deviceToken: Data("unseen".utf8).base64EncodedString()])
        }
        #expect(insufficient?.code == .trustInsufficient)
        #expect(calls.withLock { $0 } == before)
        // Without a validator, device tokens are refused.
        let none = RouteGuard(gate: bench.gate, policy: try EnforcementPolicy(minimumTrust: .deviceCheck))
        let unconfigured = await #expect(throws: FlowError.self) {
            try await Self.check(none, [AttestKitHeaderNames.deviceToken: good])
        }
        #expect(unconfigured?.code == .deviceCheckNotConfigured)
    }

    @Test("two validations of one token at once cost one call to Apple, even when one comes as the other ends")
    func deviceCheckSingleFlight() async throws {
        let calls = Mutex<[String: Int]>([:])
        let validator = DeviceTokenValidator(capacity: 10_000, ttl: 600, validationsPerClient: 0) {
            (token: String) async throws(AppleServiceError) in
            calls.withLock { $0[token, default: 0] += 1 }
        }
        for round in 0..<2_000 {
            let token = Data("token-\(round)".utf8).base64EncodedString()
            async let first = validator.isValid(token)
            async let second = validator.isValid(token)
            let answers = try await [first.valid, second.valid]
            #expect(answers == [true, true])
        }
        let repeated = calls.withLock { $0.filter { $0.value != 1 } }
        #expect(repeated.isEmpty, "tokens validated twice: \(repeated.count)")
    }

    @Test("trust levels are ordered app_attest > devicecheck > debug; require() checks a route's minimum")
    func trustOrder() async throws {
        #expect(TrustLevel.appAttest > .deviceCheck && TrustLevel.deviceCheck > .debug)
        let bench = try FlowBench()
        let device = try await bench.registeredDevice()
        let decision = try await Self.check(RouteGuard(gate: bench.gate), Self.headers(device))
        try decision.require(.appAttest)
        let low = RequestAttestation(
            group: "g", trust: .deviceCheck, key: nil, enforced: true, refusal: nil, stepUp: true)
        #expect(throws: FlowError.self) { try low.require(.appAttest) }
        try low.require(.debug)
    }

    @Test("step-up: unknown risk asks for step-up when the deployment says so")
    func stepUp() async throws {
        let bench = try FlowBench()
        let device = try await bench.registeredDevice()
        let asking = RouteGuard(gate: bench.gate, riskPolicy: RiskPolicy(threshold: 5, stepUpWhileUnknown: true))
        #expect(try await Self.check(asking, Self.headers(device)).stepUp)
        let relaxed = RouteGuard(gate: bench.gate, riskPolicy: RiskPolicy(threshold: 5))
        #expect(try await !Self.check(relaxed, Self.headers(device)).stepUp)
    }
}

/// A swift-metrics factory that keeps counters, to read what was counted.
final class RecordingMetrics: MetricsFactory, Sendable {
    private let counts = Mutex<[(label: String, dimensions: [String: String], value: Int64)]>([])

    /// The sum of counters named `label` whose dimensions include `matching`.
    func count(_ label: String, _ matching: [String: String] = [:]) -> Int64 {
        counts.withLock { counts in
            counts.filter { entry in
                entry.label == label && matching.allSatisfy { key, value in entry.dimensions[key] == value }
            }
            .map(\.value).reduce(0, +)
        }
    }

    /// Every increment recorded.
    var total: Int64 { counts.withLock { $0.map(\.value).reduce(0, +) } }

    final class Handler: CounterHandler, FloatingPointCounterHandler, RecorderHandler, TimerHandler, MeterHandler,
        Sendable
    {
        let record: @Sendable (Int64) -> Void
        init(_ record: @escaping @Sendable (Int64) -> Void) { self.record = record }
        func increment(by amount: Int64) { record(amount) }
        func increment(by amount: Double) { record(Int64(amount)) }
        func reset() {}
        func record(_ value: Int64) {}
        func record(_ value: Double) {}
        func recordNanoseconds(_ duration: Int64) {}
        func set(_ value: Int64) {}
        func set(_ value: Double) {}
        func decrement(by amount: Double) {}
    }

    private func handler(_ label: String, _ dimensions: [(String, String)]) -> Handler {
        let dictionary = Dictionary(dimensions, uniquingKeysWith: { $1 })
        return Handler { [weak self] amount in
            self?.counts.withLock { $0.append((label, dictionary, amount)) }
        }
    }

    func makeCounter(label: String, dimensions: [(String, String)]) -> any CounterHandler { handler(label, dimensions) }
    func makeFloatingPointCounter(label: String, dimensions: [(String, String)]) -> any FloatingPointCounterHandler {
        Handler { _ in }
    }
    func makeRecorder(label: String, dimensions: [(String, String)], aggregate: Bool) -> any RecorderHandler {
        Handler { _ in }
    }
    func makeMeter(label: String, dimensions: [(String, String)]) -> any MeterHandler { Handler { _ in } }
    func makeTimer(label: String, dimensions: [(String, String)]) -> any TimerHandler { Handler { _ in } }
    func destroyCounter(_ handler: any CounterHandler) {}
    func destroyFloatingPointCounter(_ handler: any FloatingPointCounterHandler) {}
    func destroyRecorder(_ handler: any RecorderHandler) {}
    func destroyMeter(_ handler: any MeterHandler) {}
    func destroyTimer(_ handler: any TimerHandler) {}
}
