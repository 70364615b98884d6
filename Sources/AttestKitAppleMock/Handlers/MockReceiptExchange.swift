import AttestKit
import AttestKitTesting
import Foundation
import SwiftASN1
import X509

/// The mock's App Attest receipt exchange (docs/apple-formats.md §5), backed by a software Apple.
///
/// The request: `Authorization: <JWT>` (bare; `Bearer` is refused with 401 like any token that does not verify),
/// the Base64 receipt as the whole body (a binary `application/octet-stream` body gets 400, as Apple's did). Then:
/// - 400 `Bad Payload` for a body that is not Base64 of a receipt;
/// - 401 `Unauthorized` when the token does not verify, or its team is not the receipt's App ID's team;
/// - 400 `Incorrect Environment` for a receipt of the other environment (field 7);
/// - 404 `No Data Found` for a receipt this software Apple did not sign, or whose key was attested more than 30
///   days ago (Apple keeps data for 30 days; the attestation time is the credential certificate's issuance);
/// - 304 before a `RECEIPT`'s Not Before (an `ATTEST` receipt has none: it can be exchanged at once);
/// - else 200 with a new `RECEIPT` from `SoftwareApple.refresh(_:riskMetric:fault:at:)`, Base64.
///
/// Every 200 is counted per key in the state (``MockAppleState/receiptTrades``), so tests can tell a receipt traded
/// once from one traded by every replica.
struct MockReceiptExchange: Sendable {
    let tokens: MockTokenVerifier
    let state: MockAppleState
    let apple: SoftwareApple
    let environment: AppAttestEnvironment
    let riskMetric: Int
    let now: @Sendable () -> Date

    /// The largest body accepted: Base64 of the largest receipt AttestKit reads.
    static let maximumBodySize = 96 * 1024
    /// How long Apple keeps the data of an attested key.
    static let dataRetention: TimeInterval = 30 * 86_400

    func answer(authorization: String?, contentType: String?, body: [UInt8]) async -> MockAppleAnswer {
        let time = now()
        guard let authorization, !authorization.isEmpty else { return .unauthorized }
        let teamID: String
        switch await tokens.verify(authorization, at: time) {
        case .valid(let team): teamID = team
        case .malformed, .unverifiable, .expired: return .unauthorized
        }
        if let contentType, contentType.lowercased().hasPrefix("application/octet-stream") {
            return .receiptBadPayload
        }
        guard let bytes = Self.strictBase64(body), !bytes.isEmpty,
            let receipt = try? Receipt.parseUnverified(bytes).1
        else {
            return .receiptBadPayload
        }
        guard receipt.appID.hasPrefix(teamID + ".") else { return .unauthorized }
        if let named = receipt.environment, named != environment.receiptName { return .incorrectEnvironment }
        if let attested = attestationTime(of: receipt), time.timeIntervalSince(attested) > Self.dataRetention {
            return .noData
        }
        do {
            let refreshed = try apple.refresh(bytes, riskMetric: riskMetric, at: time)
            await state.traded(receipt.attestedCertificateDER)
            return .text(200, Data(refreshed).base64EncodedString())
        } catch {
            switch error.code {
            case .notModified: return .notModified
            case .receiptNotRecognized: return .noData
            default: return .serverError
            }
        }
    }

    /// When the receipt's key was attested: its credential certificate's notBefore plus the software Apple's
    /// back-dating.
    private func attestationTime(of receipt: Receipt) -> Date? {
        guard let certificate = try? Certificate(derEncoded: receipt.attestedCertificateDER) else { return nil }
        return certificate.notValidBefore.addingTimeInterval(abs(apple.configuration.leafValidityBefore))
    }

    /// Standard Base64 with padding and nothing else (no line breaks, no whitespace).
    static func strictBase64(_ body: [UInt8]) -> [UInt8]? {
        guard body.count % 4 == 0 else { return nil }
        guard let decoded = Data(base64Encoded: Data(body)) else { return nil }
        return Array(decoded)
    }
}
