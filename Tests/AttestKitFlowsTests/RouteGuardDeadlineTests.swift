import AttestKit
import AttestKitFlows
import Foundation
import Synchronization
import Testing

@testable import AttestKitStore

/// A guarded request's store calls share one storage deadline (``StoreRequestDeadline``) however the guard is
/// called: the middlewares in an application's own router run outside the service's request scope.
@Suite("Route guard deadline")
struct RouteGuardDeadlineTests {
    /// An assertion policy that notes the request's start it runs under (it runs between the key read and the
    /// counter advance).
    final class Witness: AssertionPolicy {
        let seen = Mutex<[ContinuousClock.Instant?]>([])

        func check(_ assertion: VerifiedAssertion, of key: RegisteredKey) -> PolicyResult {
            seen.withLock { $0.append(StoreRequestDeadline.began) }
            return .meetsPolicy
        }
    }

    @Test("a check is one request for the store: alone it begins one, inside a request it keeps the request's start")
    func oneDeadlinePerCheck() async throws {
        let bench = try FlowBench()
        let device = try await bench.registeredDevice()
        let witness = Witness()
        let routeGuard = RouteGuard(gate: AssertionGate(store: bench.store, policy: witness))

        _ = try await EnforcementTests.check(routeGuard, EnforcementTests.headers(device))
        #expect(witness.seen.withLock { $0.count == 1 && $0[0] != nil })

        let outer = try await StoreRequestDeadline.withRequest {
            _ = try await EnforcementTests.check(routeGuard, EnforcementTests.headers(device))
            return StoreRequestDeadline.began
        }
        #expect(outer != nil && witness.seen.withLock { $0.count == 2 && $0[1] == outer })
    }
}
