import AttestKit
import Crypto
import Foundation
import SwiftASN1
import Testing
import X509

/// swift-certificates' reasons for refusing a chain reach the caller, with certificates named by their role and
/// never described byte by byte; a chain swift-certificates could not even build says so; the marker refusal is
/// unchanged. On both paths: the attestation chain (no markers) and the receipt signer chain (markers, cached
/// leaves).
@Suite struct ChainFailureReasonTests {
    /// The two ways a `ChainValidator` is used.
    enum Path: String, CaseIterable, Sendable {
        case attestation, receipt

        func validator(_ anchor: TrustAnchor) -> ChainValidator {
            switch self {
            case .attestation: ChainValidator(anchor: anchor, codes: .attestation)
            case .receipt: ChainValidator(anchor: anchor, codes: .receipt, markers: .receipt, cachesLeaves: true)
            }
        }

        var untrusted: AttestKitError.Code {
            self == .attestation ? .certificateUntrusted : .receiptCertificateUntrusted
        }

        /// The marker a certificate of `role` needs on this path.
        func marker(intermediate: Bool) -> Certificate.Extension? {
            guard self == .receipt else { return nil }
            let oid = intermediate ? MarkerExtensionPolicy.appleReceiptCA : MarkerExtensionPolicy.appleReceiptSigner
            return Certificate.Extension(oid: oid, critical: false, value: [0x05, 0x00])
        }
    }

    static let now = Date()
    static let unknownCritical: ASN1ObjectIdentifier = [1, 3, 6, 1, 4, 1, 99_999, 1]

    /// A root, an intermediate and a leaf, each with a fresh key; what each carries is the test's choice.
    struct Hierarchy {
        let anchor: TrustAnchor
        let intermediate: Certificate
        let leaf: Certificate

        init(
            path: Path, intermediateIsCA: Bool = true, leafExtensions: [Certificate.Extension] = [],
            leafSignedByAnotherKey: Bool = false, markers: Bool = true
        ) throws {
            let rootKey = P256.Signing.PrivateKey()
            let intermediateKey = P256.Signing.PrivateKey()
            let rootName = try DistinguishedName { CommonName("Chain Test Root") }
            let intermediateName = try DistinguishedName { CommonName("Chain Test CA") }
            let root = try Self.certificate(
                subject: rootName, issuer: rootName, key: rootKey.publicKey, signedBy: rootKey,
                extensions: Self.caExtensions())
            var intermediateExtensions = intermediateIsCA ? try Self.caExtensions() : []
            if markers, let marker = path.marker(intermediate: true) { intermediateExtensions.append(marker) }
            intermediate = try Self.certificate(
                subject: intermediateName, issuer: rootName, key: intermediateKey.publicKey, signedBy: rootKey,
                extensions: intermediateExtensions)
            var extensions = leafExtensions
            if markers, let marker = path.marker(intermediate: false) { extensions.append(marker) }
            leaf = try Self.certificate(
                subject: try DistinguishedName { CommonName("Chain Test Leaf") }, issuer: intermediateName,
                key: P256.Signing.PrivateKey().publicKey,
                signedBy: leafSignedByAnotherKey ? P256.Signing.PrivateKey() : intermediateKey,
                extensions: extensions)
            anchor = try TrustAnchor(certificate: root)
        }

        static func caExtensions() throws -> [Certificate.Extension] {
            [
                try Certificate.Extension(BasicConstraints.isCertificateAuthority(maxPathLength: nil), critical: true),
                try Certificate.Extension(KeyUsage(keyCertSign: true), critical: true),
            ]
        }

        static func certificate(
            subject: DistinguishedName, issuer: DistinguishedName, key: P256.Signing.PublicKey,
            signedBy signer: P256.Signing.PrivateKey, extensions: [Certificate.Extension]
        ) throws -> Certificate {
            try Certificate(
                version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: Certificate.PublicKey(key),
                notValidBefore: ChainFailureReasonTests.now.addingTimeInterval(-3_600),
                notValidAfter: ChainFailureReasonTests.now.addingTimeInterval(3_600), issuer: issuer,
                subject: subject, signatureAlgorithm: .ecdsaWithSHA256,
                extensions: try Certificate.Extensions(extensions), issuerPrivateKey: Certificate.PrivateKey(signer))
        }

        /// The refusal of `path`'s validator.
        func refusal(_ path: Path) async -> AttestKitError? {
            do {
                try await path.validator(anchor).validate(
                    leaf: leaf, candidates: [intermediate], at: ChainFailureReasonTests.now, leeway: 0)
                Issue.record("the chain verified")
            } catch {
                return error
            }
            return nil
        }
    }

    @Test("a genuine chain verifies on both paths", arguments: Path.allCases)
    func genuine(path: Path) async throws {
        let hierarchy = try Hierarchy(path: path)
        try await path.validator(hierarchy.anchor).validate(
            leaf: hierarchy.leaf, candidates: [hierarchy.intermediate], at: Self.now, leeway: 0)
    }

    @Test("a CA without basicConstraints: the reason is swift-certificates' own", arguments: Path.allCases)
    func caWithoutBasicConstraints(path: Path) async throws {
        let hierarchy = try Hierarchy(path: path, intermediateIsCA: false)
        let error = try #require(await hierarchy.refusal(path))
        #expect(error.code == path.untrusted)
        #expect(
            error.reason.hasPrefix("the certificate chain does not verify to the pinned root: swift-certificates: "))
        #expect(error.reason.contains("RFC5280Policy: Certificate <intermediate> is not marked as a CA"), "\(error)")
        Self.expectNoCertificateBytes(error, hierarchy)
    }

    @Test("an unhandled critical extension on the leaf: no chain, and which extension", arguments: Path.allCases)
    func unhandledCriticalExtension(path: Path) async throws {
        let critical = Certificate.Extension(oid: Self.unknownCritical, critical: true, value: [0x05, 0x00])
        let hierarchy = try Hierarchy(path: path, leafExtensions: [critical])
        let error = try #require(await hierarchy.refusal(path))
        #expect(error.code == path.untrusted)
        #expect(
            error.reason
                == "the certificate chain does not verify to the pinned root: swift-certificates built no chain: "
                + "the leaf certificate has unhandled critical extensions (1.3.6.1.4.1.99999.1)")
        Self.expectNoCertificateBytes(error, hierarchy)
    }

    @Test("a leaf signed by another key under the issuer's name: no chain, the signature", arguments: Path.allCases)
    func signedByAnotherKey(path: Path) async throws {
        let hierarchy = try Hierarchy(path: path, leafSignedByAnotherKey: true)
        let error = try #require(await hierarchy.refusal(path))
        #expect(error.code == path.untrusted)
        #expect(
            error.reason
                == "the certificate chain does not verify to the pinned root: swift-certificates built no chain: "
                + "the intermediate certificate's key did not sign the leaf certificate")
        Self.expectNoCertificateBytes(error, hierarchy)
    }

    @Test(
        "a chain that does not verify is untrusted whatever its dates; a genuine one out of its window is expired",
        arguments: Path.allCases)
    func signaturesBeforeDates(path: Path) async throws {
        let later = Self.now.addingTimeInterval(7_200)  // past every certificate's window
        for forged in [true, false] {
            let hierarchy = try Hierarchy(path: path, leafSignedByAnotherKey: forged)
            let error = await #expect(throws: AttestKitError.self) {
                try await path.validator(hierarchy.anchor).validate(
                    leaf: hierarchy.leaf, candidates: [hierarchy.intermediate], at: later, leeway: 0)
            }
            let expired: AttestKitError.Code = path == .attestation ? .certificateExpired : .receiptCertificateExpired
            #expect(error?.code == (forged ? path.untrusted : expired), "forged: \(forged): \(String(describing: error))")
        }
    }

    @Test("the marker refusal is unchanged")
    func markerRefusal() async throws {
        let hierarchy = try Hierarchy(path: .receipt, markers: false)
        let error = try #require(await hierarchy.refusal(.receipt))
        #expect(error.code == .receiptSignerNotAuthorized)
        #expect(error.reason == "a certificate of the chain lacks the extension that marks its role")
        // Without markers required, the same chain verifies.
        try await Path.attestation.validator(hierarchy.anchor).validate(
            leaf: hierarchy.leaf, candidates: [hierarchy.intermediate], at: Self.now, leeway: 0)
    }

    /// Neither a certificate's description nor its key or signature bytes are in the reason, which is bounded.
    static func expectNoCertificateBytes(
        _ error: AttestKitError, _ hierarchy: Hierarchy, sourceLocation: SourceLocation = #_sourceLocation
    ) {
        #expect(!error.reason.contains("Certificate("), sourceLocation: sourceLocation)
        #expect(error.reason.count < 600, sourceLocation: sourceLocation)
        for certificate in [hierarchy.anchor.certificate, hierarchy.intermediate, hierarchy.leaf] {
            #expect(!error.reason.contains(String(describing: certificate.publicKey)), sourceLocation: sourceLocation)
            #expect(!error.reason.contains(String(describing: certificate.signature)), sourceLocation: sourceLocation)
        }
    }
}
