import AttestKit
import AttestKitStore
import Crypto
import Foundation

/// Keys, registrations and times for the store tests.
enum TestKeys {
    /// A fixed instant, so tests never depend on the clock: 2027-01-15T08:00:00Z.
    static let t0 = Date(timeIntervalSince1970: 1_800_000_000)

    static let appID: AppID = {
        do { return try AppID("ABCDE12345.com.example.app") } catch { preconditionFailure("\(error)") }
    }()

    /// A fresh P-256 key and its identifier.
    static func key() -> (keyID: KeyID, publicKeyX963: [UInt8]) {
        let key = P256.Signing.PrivateKey().publicKey
        return (KeyID(publicKey: key), Array(key.x963Representation))
    }

    /// A registration of a fresh key with every optional field set.
    static func registration(
        environment: AppAttestEnvironment = .production,
        receiptRefreshAt: Date? = nil,
        osVersion: String? = "17.4",
        bundleVersion: String? = "42",
        receiptExpiresAt: Date? = nil,
        keyAccessControl: [UInt8]? = nil
    ) throws -> KeyRegistration {
        let key = key()
        return try KeyRegistration(
            keyID: key.keyID, publicKeyX963: key.publicKeyX963, appID: appID, environment: environment,
            receipt: Array(repeating: 0xA5, count: 5_000), receiptCreatedAt: t0.addingTimeInterval(-60),
            receiptRefreshAt: receiptRefreshAt, osVersion: osVersion, bundleVersion: bundleVersion,
            validationCategory: 1, receiptExpiresAt: receiptExpiresAt, keyAccessControl: keyAccessControl)
    }

    /// Apple's macOS key access control as a credential certificate carries it: `30 LL A3 LL 04 LL <policy>`.
    static let macOSAccessControl: [UInt8] = {
        let policy = AppAttestKeyAccessControl.macOSFullSecurityPolicy
        let octets: [UInt8] = [0x04, UInt8(policy.count)] + policy
        let tagged: [UInt8] = [0xA3, UInt8(octets.count)] + octets
        return [0x30, UInt8(tagged.count)] + tagged
    }()

    /// A receipt update created `offset` seconds after ``t0``.
    static func receipt(
        at offset: TimeInterval, riskMetric: Int?, refreshAt: Date? = nil, expiresAt: Date? = nil
    ) throws -> ReceiptUpdate {
        try ReceiptUpdate(
            receipt: Array(repeating: UInt8(truncatingIfNeeded: Int(offset)), count: 4_000),
            receiptCreatedAt: t0.addingTimeInterval(offset), riskMetric: riskMetric, receiptRefreshAt: refreshAt,
            receiptExpiresAt: expiresAt)
    }
}

/// Captures the code of a ``StoreError`` (or `nil` on success), for concurrency tallies.
func outcome(_ body: () async throws -> Void) async -> StoreError.Code? {
    do {
        try await body()
        return nil
    } catch let error as StoreError {
        return error.code
    } catch {
        return .storageUnavailable
    }
}
