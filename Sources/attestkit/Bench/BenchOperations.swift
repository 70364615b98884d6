import AttestKit
import AttestKitConformance
import Crypto
import Foundation
import SwiftASN1

/// The measured operations, prepared once: inputs decoded, keys parsed, verifiers built.
struct BenchOperations: Sendable {
    struct Failure: Error, CustomStringConvertible { var description: String }

    private let attestationVerifier: AttestationVerifier
    private let attestationBytes: [UInt8]
    private let attestationKeyID: KeyID
    private let attestationClientData: ClientDataInput
    private let attestationTime: Date

    private let assertionBytes: [UInt8]
    private let assertionKey: P256.Signing.PublicKey
    private let assertionAppID: AppID
    private let assertionClientData: ClientDataInput

    private let receiptVerifier: ReceiptVerifier
    private let receiptBytes: [UInt8]
    private let receiptAppID: AppID
    private let receiptKeyID: KeyID
    private let receiptTime: Date

    private let p256Key: P256.Signing.PublicKey
    private let p256Signature: P256.Signing.ECDSASignature
    private let p384Key: P384.Signing.PublicKey
    private let p384Signature: P384.Signing.ECDSASignature
    private let message: [UInt8]
    private let kibibyte: [UInt8]

    init() throws {
        let decoder = JSONDecoder()
        let attestation = try decoder.decode(ConformanceVector.self, from: Data(BenchFixtures.attestation.utf8))
        let assertion = try decoder.decode(ConformanceVector.self, from: Data(BenchFixtures.assertion.utf8))
        let receipt = try decoder.decode(ConformanceVector.self, from: Data(BenchFixtures.receipt.utf8))
        let anchors = try TrustAnchors.apple()

        attestationVerifier = AttestationVerifier(
            configuration: try .init(
                appIDs: [try AppID(attestation.appId ?? "")], environments: .both, trustAnchors: anchors))
        attestationBytes = try Self.bytes(attestation.data)
        attestationKeyID = try KeyID(string: attestation.keyId ?? "")
        attestationClientData = .clientDataHash(try Self.bytes(attestation.clientDataHash ?? ""))
        attestationTime = attestation.verificationTime ?? Date()

        assertionBytes = try Self.bytes(assertion.data)
        assertionKey = try P256.Signing.PublicKey(x963Representation: try Self.bytes(assertion.publicKey ?? ""))
        assertionAppID = try AppID(assertion.appId ?? "")
        assertionClientData = .clientData(try Self.bytes(assertion.clientData ?? ""))

        receiptVerifier = ReceiptVerifier(anchor: anchors.receipt)
        receiptBytes = try Self.bytes(receipt.data)
        receiptAppID = try AppID(receipt.appId ?? "")
        receiptKeyID = try KeyID(string: receipt.keyId ?? "")
        receiptTime = receipt.verificationTime ?? Date()

        message = Array(SHA256.hash(data: Array("attestkit bench".utf8)))
        let p256Private = P256.Signing.PrivateKey()
        p256Key = p256Private.publicKey
        p256Signature = try p256Private.signature(for: message)
        let p384Private = P384.Signing.PrivateKey()
        p384Key = p384Private.publicKey
        p384Signature = try p384Private.signature(for: SHA256.hash(data: message))
        kibibyte = (0..<1024).map { UInt8(truncatingIfNeeded: $0) }
    }

    private static func bytes(_ text: String) throws -> [UInt8] {
        var normalized = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while normalized.count % 4 != 0 { normalized += "=" }
        guard let data = Data(base64Encoded: normalized) else { throw Failure(description: "bad fixture") }
        return Array(data)
    }

    /// One P-256 ECDSA verification of a 32-byte message (SHA-256 inside, as for assertions).
    func p256Verify() throws {
        guard p256Key.isValidSignature(p256Signature, for: message) else { throw Failure(description: "p256") }
    }

    /// One P-384 ECDSA verification of a SHA-256 digest (how the P-384 CA signs credential certificates).
    func p384Verify() throws {
        guard p384Key.isValidSignature(p384Signature, for: SHA256.hash(data: message)) else {
            throw Failure(description: "p384")
        }
    }

    /// SHA-256 of 1 KiB.
    func sha256OneKiB() {
        _ = SHA256.hash(data: kibibyte)
    }

    /// A real attestation with its embedded receipt, at its verifyAt.
    func attestation() async throws {
        _ = try await attestationVerifier.verify(
            attestationBytes, keyID: attestationKeyID, clientData: attestationClientData, at: attestationTime)
    }

    /// A real assertion against its stored key.
    func assertion() throws {
        _ = try AssertionVerifier().verify(
            assertionBytes, publicKey: assertionKey, appID: assertionAppID, clientData: assertionClientData,
            previousCounter: 0)
    }

    /// A real RECEIPT from Apple, at its verifyAt.
    func receipt() async throws {
        _ = try await receiptVerifier.verify(
            receiptBytes, appID: receiptAppID, keyID: receiptKeyID, maximumAge: nil, at: receiptTime)
    }
}
