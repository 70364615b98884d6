import AttestKit
import AttestKitFlows
import AttestKitStore
import AttestKitWire
import Foundation
import Testing

/// The operator's view of keys: a missing key is not found (not refused), a revoked key refused by the gate.
struct KeyAdministrationTests {
    @Test("report, revoke, and a key that does not exist")
    func lifecycle() async throws {
        let bench = try FlowBench()
        let keys = KeyAdministration(store: bench.store)
        let device = try await bench.registeredDevice()
        let report = try await keys.report(of: device.keyID)
        #expect(report.key.state == .active)
        #expect(report.riskHistory.isEmpty)
        let revoked = try await keys.revoke(device.keyID)
        #expect(revoked.state == .revoked)
        let (assertion, binding) = try device.assertion(freshness: .timestamp(milliseconds: FlowBench.milliseconds()))
        let refused = await #expect(throws: FlowError.self) {
            try await bench.gate.verify(keyID: device.keyID, assertion: assertion, binding: binding)
        }
        #expect(refused?.kind == .refused)

        let unknown = try KeyID(bytes: [UInt8](repeating: 7, count: 32))
        for attempt in 0..<2 {
            let error = await #expect(throws: FlowError.self) {
                if attempt == 0 {
                    _ = try await keys.report(of: unknown)
                } else {
                    _ = try await keys.revoke(unknown)
                }
            }
            #expect(error?.code == .keyNotFound)
            #expect(error?.kind == .notFound)
        }
    }
}
