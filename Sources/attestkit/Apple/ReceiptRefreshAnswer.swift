import AttestKit
import AttestKitWire
import Foundation

/// What `attestkit receipt refresh` prints, as text or JSON, in the API's field names: `appId`, `keyId`,
/// `environment`, `riskMetric` and `createdAt` as in a key record, Apple's other receipt fields in the same
/// spelling, times as ``APITime`` writes them. Absent fields are left out of the JSON.
struct ReceiptRefreshAnswer: Encodable, Equatable {
    /// `true`: Apple sent a new receipt; `false`: Apple keeps the current one (HTTP 304).
    var refreshed: Bool
    /// The new receipt's type (`RECEIPT`).
    var receiptType: String?
    /// The App ID the new receipt names.
    var appId: String?
    /// The key the receipt belongs to (Base64 of SHA-256 of its public key).
    var keyId: String?
    /// The receipt's environment as Apple writes it (`production`, `sandbox`).
    var environment: String?
    /// Apple's fraud risk metric; absent when Apple gave none.
    var riskMetric: Int?
    /// When Apple created the receipt.
    var createdAt: String?
    /// Before this time Apple answers 304 to a refresh.
    var notBefore: String?
    /// When the receipt expires.
    var expiresAt: String?
    /// With `refreshed: false`, when to try again, if Apple said.
    var retryAfter: String?

    /// The answer for a new receipt.
    init(refreshed receipt: Receipt, keyID: KeyID) {
        refreshed = true
        receiptType = receipt.type.rawValue
        appId = receipt.appID
        keyId = keyID.base64
        environment = receipt.environment
        riskMetric = receipt.riskMetric
        createdAt = APITime.format(receipt.creationTime)
        notBefore = receipt.notBefore.map(APITime.format)
        expiresAt = receipt.expirationTime.map(APITime.format)
    }

    /// The answer when Apple keeps the current receipt.
    init(notModifiedUntil retryAfter: Date?) {
        refreshed = false
        self.retryAfter = retryAfter.map(APITime.format)
    }

    /// The fields as `name: value` lines, in the JSON's order and names; `none` for an absent field.
    var textLines: [String] {
        if !refreshed {
            return [
                "refreshed: false (Apple keeps the current receipt until its Not Before)",
                "retryAfter: \(retryAfter ?? "unknown")",
            ]
        }
        let fields: [(String, String?)] = [
            ("receiptType", receiptType), ("appId", appId), ("keyId", keyId), ("environment", environment),
            ("riskMetric", riskMetric.map(String.init)), ("createdAt", createdAt), ("notBefore", notBefore),
            ("expiresAt", expiresAt),
        ]
        return ["refreshed: true"] + fields.map { "\($0.0): \($0.1 ?? "none")" }
    }

    /// Prints ``textLines``.
    func printText() {
        for line in textLines { print(line) }
    }
}
