import AttestKit
import Crypto
public import Foundation
import SwiftASN1
import X509

extension SoftwareApple {
    /// Refreshes a receipt as Apple's receipt exchange does: a new `RECEIPT` for the same App ID, key and
    /// environment, with a risk metric (field 17), created at `time` (field 12), not to be exchanged before
    /// `time` + 1 day (field 19) and honoured until `time` + 90 days (field 21). Field 4 comes back mangled, as
    /// Apple's does: the previous client hash decoded as UTF-8 with every invalid byte replaced by U+FFFD.
    ///
    /// - Parameters:
    ///   - receipt: An `ATTEST` or `RECEIPT` receipt this software Apple signed.
    ///   - riskMetric: About how many keys the app attested on the device in the past 30 days.
    ///   - fault: ``SoftwareAppleFault/receiptForAnotherKey`` or ``SoftwareAppleFault/strangerReceiptSigner``.
    ///   - time: The creation time of the new receipt.
    /// - Returns: The new receipt, BER-encoded like Apple's.
    /// - Throws: ``SoftwareAppleError/Code/receiptNotRecognized`` for a receipt this software Apple did not sign,
    ///   ``SoftwareAppleError/Code/notModified`` (Apple's HTTP 304) before a `RECEIPT`'s Not Before,
    ///   ``SoftwareAppleError/Code/invalidInput`` for a negative metric or a fault that is not a receipt fault.
    public func refresh(
        _ receipt: some Collection<UInt8>,
        riskMetric: Int = 1,
        fault: SoftwareAppleFault? = nil,
        at time: Date = Date()
    ) throws(SoftwareAppleError) -> [UInt8] {
        guard riskMetric >= 0 else { throw SoftwareAppleError(.invalidInput, "a risk metric is not negative") }
        if let fault, !fault.targets.contains(.receipt) {
            throw SoftwareAppleError(.invalidInput, "\(fault) is not a receipt fault")
        }
        let previous = try recognizedReceipt(Array(receipt))
        if previous.type == .receipt, let notBefore = previous.notBefore, time < notBefore {
            throw SoftwareAppleError(.notModified, "the receipt cannot be refreshed before its Not Before")
        }
        let created = ReceiptPayload.milliseconds(time)
        var certificate = previous.attestedCertificateDER
        if fault == .receiptForAnotherKey {
            certificate = try certificateForAnotherKey(than: certificate, appID: previous.appID, at: created)
        }
        typealias Field = ReceiptPayload.Field
        var fields: [(type: Int, value: [UInt8])] = [
            (Field.riskMetric, Array(String(riskMetric).utf8)),
            (Field.type, Array(Receipt.ReceiptType.receipt.rawValue.utf8)),
            (Field.appID, Array(previous.appID.utf8)),
            (Field.attestedCertificate, certificate),
            (Field.clientHash, Array(String(decoding: previous.clientHash, as: UTF8.self).utf8)),
            // Apple keeps the token of the key's first receipt through every refresh (every real chain does).
            (Field.token, Array(previous.token.utf8)),
        ]
        if let environment = previous.environment { fields.append((Field.environment, Array(environment.utf8))) }
        fields += [
            (Field.creationTime, ReceiptPayload.timestamp(created)),
            (Field.notBefore, ReceiptPayload.timestamp(created.addingTimeInterval(ReceiptPayload.refreshDelay))),
            (Field.expirationTime, ReceiptPayload.timestamp(created.addingTimeInterval(ReceiptPayload.lifetime))),
        ]
        let (_, receiptCA) = try hierarchies(stranger: fault == .strangerReceiptSigner)
        return try ReceiptSigner(hierarchy: receiptCA).sign(ReceiptPayload(fields: fields).encoded())
    }

    /// The `ATTEST` receipt a device embeds in an attestation: fields 2, 3, 4, 5, 6, 7, 12 and 21, in Apple's
    /// order.
    func attestReceipt(
        appID: AppID,
        certificateDER: [UInt8],
        clientDataHash: [UInt8],
        environment: AppAttestEnvironment,
        at time: Date,
        stranger: Bool
    ) throws(SoftwareAppleError) -> [UInt8] {
        let created = ReceiptPayload.milliseconds(time)
        typealias Field = ReceiptPayload.Field
        let payload = ReceiptPayload(fields: [
            (Field.appID, Array(appID.description.utf8)),
            (Field.attestedCertificate, certificateDER),
            (Field.clientHash, clientDataHash),
            (Field.token, Self.token(certificateDER, created)),
            (Field.type, Array(Receipt.ReceiptType.attest.rawValue.utf8)),
            (Field.environment, Array(environment.receiptName.utf8)),
            (Field.creationTime, ReceiptPayload.timestamp(created)),
            (Field.expirationTime, ReceiptPayload.timestamp(created.addingTimeInterval(ReceiptPayload.lifetime))),
        ])
        let (_, receiptCA) = try hierarchies(stranger: stranger)
        return try ReceiptSigner(hierarchy: receiptCA).sign(payload.encoded())
    }

    /// A credential certificate like the one in `certificateDER` (same nonce, OS version and window) for another
    /// key of the app `appID`, derived from the original certificate so that the fault is repeatable.
    func certificateForAnotherKey(
        than certificateDER: [UInt8], appID: String, at time: Date
    ) throws(SoftwareAppleError) -> [UInt8] {
        guard case .p256(let otherKey) = try SigningKey.derived(.p256, seed: certificateDER, label: "another key"),
            let original = try? Certificate(derEncoded: certificateDER)
        else {
            throw SoftwareAppleError(.invalidInput, "the attested certificate does not parse")
        }
        let nonce =
            (try? AppAttestNonceExtension(certificate: original).nonce) ?? Array(SHA256.hash(data: certificateDER))
        let osVersion = (try? AppAttestDeviceExtension(certificate: original)?.osVersion) ?? "17.0"
        return try CredentialCertificate.issue(
            for: otherKey.publicKey,
            CredentialCertificate.Contents(
                appID: appID, nonce: nonce, osVersion: osVersion, extendedKeyUsage: false, issuedAt: time,
                validity: try original.validityRange()),
            by: attestation.intermediate)
    }

    /// Parses a receipt and checks that this software Apple's signer (not a stranger's) signed it.
    private func recognizedReceipt(_ bytes: [UInt8]) throws(SoftwareAppleError) -> Receipt {
        do {
            let (container, receipt) = try Receipt.parseUnverified(bytes)
            guard container.signer == receipts.signer.certificate else {
                throw SoftwareAppleError(.receiptNotRecognized, "the receipt was signed by someone else")
            }
            _ = try container.verifySignature()
            return receipt
        } catch let error as SoftwareAppleError {
            throw error
        } catch {
            throw SoftwareAppleError(.receiptNotRecognized, "the receipt is not one this software Apple signed")
        }
    }

    /// Field 5: 88 characters of Base64 derived from `material` and the creation time, like Apple's opaque token.
    private static func token(_ material: some Sequence<UInt8>, _ created: Date) -> [UInt8] {
        let digest = SHA512.hash(data: Array(material) + ReceiptPayload.timestamp(created))
        return Array(Data(digest).base64EncodedString().utf8)
    }
}
