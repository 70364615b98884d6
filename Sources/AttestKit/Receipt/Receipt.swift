public import Foundation
import SwiftASN1

/// The payload of a verified App Attest receipt (docs/apple-formats.md §4).
///
/// The payload is a BER `SET OF SEQUENCE { type INTEGER, version INTEGER, value OCTET STRING }` whose elements
/// Apple does not sort. Fields 2, 3, 4, 5, 6 and 12 are required, and 17 and 19 as well in a `RECEIPT`;
/// unknown field numbers are ignored and a repeated field number is rejected. Every value is bounded.
///
/// Obtain one from ``ReceiptVerifier``. Store ``bytes`` (not the parsed fields) to exchange the receipt with
/// Apple later. The ``description`` leaves out the token, the client hash and the raw bytes.
public struct Receipt: Sendable, Hashable, CustomStringConvertible {
    /// Field 6: who produced the receipt.
    public enum ReceiptType: String, Sendable, Hashable, CaseIterable {
        /// Embedded in an attestation object by the device.
        case attest = "ATTEST"
        /// Returned by Apple's receipt exchange endpoint, with a risk metric.
        case receipt = "RECEIPT"
    }

    /// Field 2: the App ID, `TEAMID.bundle.identifier`.
    public let appID: String
    /// Field 3: the DER of the attested key's credential certificate.
    public let attestedCertificateDER: [UInt8]
    /// Field 4: in an `ATTEST` receipt, the client data hash the app passed to `attestKey`; mangled in a `RECEIPT`.
    public let clientHash: [UInt8]
    /// Field 5: an opaque token. Treat it as a secret.
    public let token: String
    /// Field 6: the receipt type.
    public let type: ReceiptType
    /// Field 7 (undocumented): `sandbox` or `production`, when present.
    public let environment: String?
    /// Field 12: when Apple created the receipt.
    public let creationTime: Date
    /// Field 17: about how many keys the app attested on this device in the past 30 days. `RECEIPT` only.
    public let riskMetric: Int?
    /// Field 19: the earliest time Apple accepts this receipt for exchange. `RECEIPT` only.
    public let notBefore: Date?
    /// Field 21: after this time Apple may no longer accept the receipt for exchange.
    public let expirationTime: Date?
    /// The whole receipt exactly as received, for storage and exchange.
    public let bytes: [UInt8]

    /// The type, App ID and times; never the token, client hash or bytes.
    public var description: String {
        var text = "Receipt(type: \(type.rawValue), appID: \(appID), creationTime: \(creationTime)"
        if let environment { text += ", environment: \(environment)" }
        if let riskMetric { text += ", riskMetric: \(riskMetric)" }
        if let notBefore { text += ", notBefore: \(notBefore)" }
        if let expirationTime { text += ", expirationTime: \(expirationTime)" }
        return text + ")"
    }

    /// Parses a receipt payload (the flattened `eContent` of its container).
    ///
    /// - Parameters:
    ///   - payload: The DER/BER attribute set.
    ///   - bytes: The whole receipt, kept as ``bytes``.
    /// - Throws: ``AttestKitError/Code/receiptMalformed``.
    init(payload: ArraySlice<UInt8>, bytes: [UInt8]) throws(AttestKitError) {
        let fields: [Int: ArraySlice<UInt8>]
        do {
            fields = try Self.fields(of: payload)
        } catch let error as AttestKitError {
            throw error
        } catch {
            throw AttestKitError(.receiptMalformed, "the receipt payload is not a SET of attribute SEQUENCEs")
        }

        func optional(_ field: Field) throws(AttestKitError) -> ArraySlice<UInt8>? {
            guard let value = fields[field.rawValue] else { return nil }
            guard value.count <= field.maximumLength else {
                throw AttestKitError(.receiptMalformed, "receipt field \(field.rawValue) is too long")
            }
            return value
        }
        func required(_ field: Field) throws(AttestKitError) -> ArraySlice<UInt8> {
            guard let value = try optional(field) else {
                throw AttestKitError(.receiptMalformed, "the receipt lacks field \(field.rawValue)")
            }
            return value
        }

        guard let type = ReceiptType(rawValue: try Self.text(required(.type), .type)) else {
            throw AttestKitError(.receiptMalformed, "the receipt type is neither ATTEST nor RECEIPT")
        }
        self.type = type
        self.appID = try Self.text(required(.appID), .appID)
        self.attestedCertificateDER = Array(try required(.attestedCertificate))
        self.clientHash = Array(try required(.clientHash))
        self.token = try Self.text(required(.token), .token)
        self.environment = try optional(.environment).map { value throws(AttestKitError) in
            try Self.text(value, .environment)
        }
        self.creationTime = try Self.date(required(.creationTime), .creationTime)
        // Apple adds the risk metric and Not Before only to the receipts its exchange endpoint returns.
        let exchanged = type == .receipt
        self.riskMetric = try (exchanged ? required(.riskMetric) : optional(.riskMetric)).map {
            value throws(AttestKitError) in try Self.decimal(value, .riskMetric)
        }
        self.notBefore = try (exchanged ? required(.notBefore) : optional(.notBefore)).map {
            value throws(AttestKitError) in try Self.date(value, .notBefore)
        }
        self.expirationTime = try optional(.expirationTime).map { value throws(AttestKitError) in
            try Self.date(value, .expirationTime)
        }
        self.bytes = bytes
    }
}

// MARK: - Fields

extension Receipt {
    /// The field numbers this type reads, with the longest value each may have.
    enum Field: Int {
        case appID = 2
        case attestedCertificate = 3
        case clientHash = 4
        case token = 5
        case type = 6
        case environment = 7
        case creationTime = 12
        case riskMetric = 17
        case notBefore = 19
        case expirationTime = 21

        var maximumLength: Int {
            switch self {
            case .appID: 255
            case .attestedCertificate: 8_192
            case .clientHash: 1_024
            case .token: 1_024
            case .type, .environment: 32
            case .creationTime, .notBefore, .expirationTime: ReceiptTimestamp.maximumLength
            case .riskMetric: 9
            }
        }
    }

    /// At most this many attributes, known or not. Apple sends eight to ten.
    static let maximumAttributes = 64

    private struct Malformed: Error {}

    /// Every attribute's value by field number; rejects a repeated number.
    private static func fields(of payload: ArraySlice<UInt8>) throws -> [Int: ArraySlice<UInt8>] {
        var fields: [Int: ArraySlice<UInt8>] = [:]
        try BER.set(BER.parse(payload), identifier: .set) { attributes in
            while let attribute = attributes.next() {
                guard fields.count < maximumAttributes else {
                    throw AttestKitError(.receiptMalformed, "the receipt has too many fields")
                }
                try BER.sequence(attribute, identifier: .sequence) { parts in
                    let number = try Int(berEncoded: &parts)
                    _ = try Int(berEncoded: &parts)  // the attribute version, always 1 so far
                    guard let value = parts.next() else { throw Malformed() }
                    guard fields.updateValue(try ASN1OctetString(berEncoded: value).bytes, forKey: number) == nil else {
                        throw AttestKitError(.receiptMalformed, "receipt field \(number) appears twice")
                    }
                }
            }
        }
        return fields
    }

    private static func text(_ value: ArraySlice<UInt8>, _ field: Field) throws(AttestKitError) -> String {
        let text = String(decoding: value, as: UTF8.self)
        // Invalid UTF-8 decodes to U+FFFD, which changes the bytes.
        guard text.utf8.elementsEqual(value) else {
            throw AttestKitError(.receiptMalformed, "receipt field \(field.rawValue) is not UTF-8")
        }
        return text
    }

    private static func date(_ value: ArraySlice<UInt8>, _ field: Field) throws(AttestKitError) -> Date {
        guard let date = ReceiptTimestamp.parse(value) else {
            throw AttestKitError(.receiptMalformed, "receipt field \(field.rawValue) is not an ISO-8601 UTC time")
        }
        return date
    }

    private static func decimal(_ value: ArraySlice<UInt8>, _ field: Field) throws(AttestKitError) -> Int {
        var number = 0
        for byte in value {
            guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) else {
                throw AttestKitError(.receiptMalformed, "receipt field \(field.rawValue) is not a decimal number")
            }
            number = number * 10 + Int(byte - UInt8(ascii: "0"))
        }
        guard !value.isEmpty else {
            throw AttestKitError(.receiptMalformed, "receipt field \(field.rawValue) is empty")
        }
        return number
    }
}

extension Receipt {
    /// Parses a receipt's container and payload **without verifying anything**, for inspection tools.
    /// Never trust the result: use ``ReceiptVerifier`` for decisions.
    package static func parseUnverified(_ bytes: [UInt8]) throws(AttestKitError) -> (ReceiptContainer, Receipt) {
        let container = try ReceiptContainer(berEncoded: bytes)
        return (container, try Receipt(payload: container.content, bytes: bytes))
    }
}
