import Foundation
import SwiftASN1
import Testing
import X509

@testable import AttestKit

/// How a chain refusal is put in words from swift-certificates' failures: certificates named by role, distinct
/// reasons only, bounded, nothing that describes a certificate.
@Suite struct ChainValidatorReasonTests {
    static func chain() throws -> (leaf: Certificate, intermediate: Certificate) {
        let object = try AttestationObject(bytes: AttestationVerifierTests.vector.bytes)
        return (
            try Certificate(derEncoded: object.certificates[0]), try Certificate(derEncoded: object.certificates[1])
        )
    }

    static func failure(_ reason: String, _ chain: [Certificate]) -> (reason: String, chain: [Certificate]) {
        (reason, chain)
    }

    @Test func certificatesAreNamedByRoleAndReasonsAreDeduplicated() throws {
        let (leaf, intermediate) = try Self.chain()
        let failures = [
            Self.failure("RFC5280Policy: Certificate \(leaf) has a problem", [leaf, intermediate]),
            Self.failure("RFC5280Policy: Certificate \(leaf) has a problem", [leaf, intermediate]),
            Self.failure("CA \(intermediate) is odd", [leaf, intermediate]),
        ]
        let text = ChainValidator.LinkRoles.leaf.explain(
            reasons: failures, certificate: leaf, issuer: intermediate, handledCriticalExtensions: [])
        #expect(
            text == "swift-certificates: RFC5280Policy: Certificate <leaf> has a problem; CA <intermediate> is odd")
    }

    @Test func reasonsAreBoundedAndCertificatesOutsideTheChainWithheld() throws {
        let (leaf, intermediate) = try Self.chain()
        let stranger = try TrustAnchor.appAttestationRoot().certificate
        var failures = (1...6).map { Self.failure("reason \($0)", [leaf, intermediate]) }
        failures.insert(Self.failure("about \(stranger)", [leaf, intermediate]), at: 0)
        failures.insert(Self.failure(String(repeating: "x", count: 500) + "\nforged line", [leaf]), at: 1)
        let text = ChainValidator.LinkRoles.intermediate.explain(
            reasons: failures, certificate: leaf, issuer: intermediate, handledCriticalExtensions: [])
        let parts = text.dropFirst("swift-certificates: ".count).components(separatedBy: "; ")
        #expect(parts.count == 5)
        #expect(parts[0] == "(a reason describing a certificate, withheld)")
        #expect(parts[1].count == ChainValidator.LinkRoles.maximumReasonLength)
        #expect(parts[1].hasSuffix("…"))
        #expect(parts[2] == "reason 1" && parts[3] == "reason 2")
        #expect(parts[4] == "and 4 more")
        #expect(!text.contains("\n") && !text.contains("Certificate("))
    }

    @Test func noFailuresExplainTheChainThatWasNotBuilt() throws {
        let (leaf, intermediate) = try Self.chain()
        let roles = ChainValidator.LinkRoles.leaf
        let critical = { (certificate: Certificate) in certificate.extensions.filter(\.critical).map(\.oid) }
        // The leaf's own critical extensions, unhandled (Apple marks basicConstraints and keyUsage critical).
        #expect(
            roles.explain(reasons: [], certificate: leaf, issuer: intermediate, handledCriticalExtensions: [])
                == "swift-certificates built no chain: the leaf certificate has unhandled critical extensions "
                + "(\(critical(leaf).map(String.init(describing:)).joined(separator: ", ")))")
        // Handled, then another issuer's name.
        #expect(
            roles.explain(reasons: [], certificate: leaf, issuer: leaf, handledCriticalExtensions: critical(leaf))
                == "swift-certificates built no chain: the leaf certificate names another issuer than the "
                + "intermediate certificate")
        // Names match and every critical extension is handled: what is left is the issuer's signature.
        #expect(
            roles.explain(
                reasons: [], certificate: leaf, issuer: intermediate,
                handledCriticalExtensions: critical(leaf) + critical(intermediate))
                == "swift-certificates built no chain: the intermediate certificate's key did not sign the leaf "
                + "certificate")
    }
}
