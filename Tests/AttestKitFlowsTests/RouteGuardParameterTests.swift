import AttestKit
import AttestKitFlows
import AttestKitWire
import Foundation
import Synchronization
import Testing

@testable import AttestKitStore

/// A guarded request's store calls share one storage deadline (``StoreRequestDeadline``) however the guard is
/// called (the middlewares in an application's own router run outside the service's request scope), and the gate's
/// time parameters fail closed.
@Suite("Route guard deadline and time parameters")
struct RouteGuardParameterTests {
    /// An assertion policy that notes the request's start it runs under (it runs between the key read and the
    /// counter advance).
    final class Witness: AssertionPolicy {
        let seen = Mutex<[ContinuousClock.Instant?]>([])

        func check(_ assertion: VerifiedAssertion, of key: RegisteredKey) -> PolicyResult {
            seen.withLock { $0.append(StoreRequestDeadline.began) }
            return .meetsPolicy
        }
    }

    @Test(
        "a check is one request for the store: alone it begins one, inside a request it begins anew (its body is in)")
    func oneDeadlinePerCheck() async throws {
        let bench = try FlowBench()
        let device = try await bench.registeredDevice()
        let witness = Witness()
        let routeGuard = RouteGuard(gate: AssertionGate(store: bench.store, policy: witness))

        _ = try await EnforcementTests.check(routeGuard, EnforcementTests.headers(device))
        #expect(witness.seen.withLock { $0.count == 1 && $0[0] != nil })

        // An edge's request began earlier (the body's upload, say): the check's store calls get a deadline of their
        // own from the check's start, not what the upload left of the request's.
        let outer = try await StoreRequestDeadline.withRequest {
            let began = StoreRequestDeadline.began
            try await Task.sleep(for: .milliseconds(20))
            _ = try await EnforcementTests.check(routeGuard, EnforcementTests.headers(device))
            #expect(StoreRequestDeadline.began == began, "the request's own start is left as it was")
            return began
        }
        let checked = witness.seen.withLock { $0.count == 2 ? $0[1] : nil }
        #expect(outer != nil && checked != nil && checked.flatMap { start in outer.map { start > $0 } } == true)
    }

    @Test(
        "an unusable timestamp window (NaN, infinite, negative) refuses timestamps instead of crashing or taking any",
        arguments: [Double.nan, .infinity, -.infinity, -1])
    func unusableTimestampWindow(window: Double) async throws {
        let bench = try FlowBench()
        let device = try await bench.registeredDevice()
        let gate = AssertionGate(store: bench.store, timestampWindow: window)
        #expect(gate.timestampWindow == 0)
        var headers = try EnforcementTests.headers(device)
        headers[AttestKitHeaderNames.timestamp] = String(FlowBench.milliseconds() - 3_600_000)
        do throws(FlowError) {
            _ = try await EnforcementTests.check(RouteGuard(gate: gate), headers)
            Issue.record("a timestamp an hour old was taken")
        } catch {
            #expect(error.code == .timestampOutsideWindow, "\(error)")
        }
    }
}
