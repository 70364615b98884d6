import AttestKit
import AttestKitFlows
import AttestKitStore
import AttestKitTestSupport
import AttestKitWire
import Foundation
import Testing

/// A request's storage deadline pays for the store's time only: not for its body's upload before the decision, nor
/// for Apple's answer in the middle of it.
@Suite("The request's storage deadline, against waits that are not the store's")
struct StoreDeadlineWaitsTests {
    /// A PostgreSQL store whose calls end within two seconds, running for `body`, in a schema of its own.
    static func withStore(_ body: @Sendable (PostgresAttestationStore) async throws -> Void) async throws {
        let schema = "deadline_waits_\(UInt32.random(in: 0...UInt32.max))"
        var configuration = PostgresTestServer.configuration(schema: schema)
        configuration.operationTimeout = .seconds(2)
        await PostgresTestServer.shared.gate.enter()
        let store = try PostgresAttestationStore(configuration: configuration)
        var failure: (any Error)?
        do {
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await store.run() }
                defer { group.cancelAll() }
                try await store.prepare()
                do {
                    try await body(store)
                } catch {
                    failure = error
                }
                try? await store.dropSchema()
                await store.close()
            }
        } catch {
            failure = failure ?? error
        }
        await PostgresTestServer.shared.gate.leave()
        if let failure { throw failure }
    }

    static func token(_ text: String) -> String { Data(text.utf8).base64EncodedString() }

    @Test(
        "a DeviceCheck token Apple validates slowly is recorded as used, and a decision begun after a slow body is made",
        .enabled(PostgresAvailabilityTests.skipReason) { await PostgresTestServer.shared.shouldRun() })
    func waitsAreNotTheStores() async throws {
        try await Self.withStore { store in
            // Apple answers after 2.5 s, past the store's 2 s: the token's record still gets the store's whole time.
            let slow: DeviceTokenValidator.Validate = { _ in try? await Task.sleep(for: .milliseconds(2_500)) }
            let slowApple = DeviceTokenValidator(validationsPerClient: 0, validate: slow)
            try await StoreRequestDeadline.withRequest {
                try await slowApple.redeem(Self.token("a slowly validated token"), client: nil, store: store)
            }
            // A guard's decision begins when its body is in: a request whose body took 2.5 s to arrive (the edge's
            // deadline started before it) is still decided.
            let instant: DeviceTokenValidator.Validate = { _ in }
            let routeGuard = RouteGuard(
                gate: AssertionGate(store: store), policy: try EnforcementPolicy(minimumTrust: .deviceCheck),
                deviceTokens: DeviceTokenValidator(validationsPerClient: 0, validate: instant))
            let token = Self.token("a token after a slow body")
            let decision = try await StoreRequestDeadline.withRequest {
                try await Task.sleep(for: .milliseconds(2_500))
                return try await routeGuard.check(
                    lookup: { $0 == AttestKitHeaderNames.deviceToken ? .value(token) : .absent }, method: "POST",
                    target: "/orders", body: [UInt8]())
            }
            #expect(decision.trust == .deviceCheck)
        }
    }
}
