import AttestKit
import AttestKitApple
import AttestKitFlows
import AttestKitStore
import Foundation
import Testing

/// Times that are not numbers given to the public flow types in code (the server's configuration refuses them):
/// what decides trust fails closed, and what records a use still records it.
@Suite("Times that are not numbers")
struct NonFiniteTimesTests {
    static let now = Date(timeIntervalSince1970: 1_800_000_000)

    static func record(lastUsed: Date?) throws -> KeyRecord {
        KeyRecord(
            keyID: try KeyID(bytes: [UInt8](repeating: 3, count: 32)),
            publicKeyX963: [0x04] + [UInt8](repeating: 1, count: 64), appID: try AppID("ABCDE12345.com.example.app"),
            environment: .development, counter: 0, receipt: nil, receiptCreatedAt: nil, receiptRefreshAt: nil,
            riskMetric: nil, osVersion: nil, bundleVersion: nil, validationCategory: nil, appKey: nil,
            createdAt: now.addingTimeInterval(-86_400 * 900), lastAssertionAt: lastUsed, revokedAt: nil)
    }

    @Test("a key expiry that is not a number expires every key, as the gate refuses every assertion under it")
    func nanExpiryFailsClosed() throws {
        let idle = try Self.record(lastUsed: nil)
        let used = try Self.record(lastUsed: Self.now)
        #expect(KeyStanding(expiry: .nan).isExpired(idle, at: Self.now))
        #expect(KeyStanding(expiry: .nan).isExpired(used, at: Self.now))
        #expect(!KeyStanding(expiry: 86_400).isExpired(used, at: Self.now))
        #expect(KeyStanding(expiry: 86_400).isExpired(idle, at: Self.now))
        #expect(!KeyStanding(expiry: nil).isExpired(idle, at: Self.now))
    }

    @Test("a DeviceCheck cache time that is not a number or is infinite still records a validated token's use once")
    func nonFiniteCacheTimeStillRedeems() async throws {
        for ttl in [TimeInterval.nan, .infinity, -5] {
            let validator = DeviceTokenValidator(ttl: ttl, now: { Self.now }) {
                (_: String) async throws(AppleServiceError) in
            }
            let store = MemoryAttestationStore()
            let token = Data("a device token".utf8).base64EncodedString()
            try await validator.redeem(token, client: nil, store: store)
            let again = await #expect(throws: FlowError.self) {
                try await validator.redeem(token, client: nil, store: store)
            }
            #expect(again?.code == .deviceTokenUsed, "ttl \(ttl)")
            #expect(validator.ttl.isFinite && validator.usedTokenRetention.isFinite, "ttl \(ttl)")
        }
    }
}
