import Foundation
import SwiftASN1
import X509

extension ChainValidator {
    /// The roles of the two certificates of a link (a certificate and its issuer), by which a refusal names them,
    /// and the explanation of a refusal in swift-certificates' own words.
    struct LinkRoles: Sendable {
        /// The certificate verified.
        let certificate: String
        /// Its issuer.
        let issuer: String

        /// The intermediate, issued by the pinned root.
        static let intermediate = LinkRoles(certificate: "intermediate", issuer: "root")
        /// The leaf, issued by the intermediate.
        static let leaf = LinkRoles(certificate: "leaf", issuer: "intermediate")

        /// At most this many distinct reasons are named.
        static let maximumReasons = 4
        /// A reason longer than this many characters is cut.
        static let maximumReasonLength = 200

        /// Why swift-certificates refused the link.
        ///
        /// With `failures`, each distinct `policyFailureReason` (at most ``maximumReasons``, each at most
        /// ``maximumReasonLength`` characters), with every certificate it describes replaced by its role: a
        /// swift-certificates reason interpolates whole certificates, keys and signatures included, and those
        /// stay out of errors. Without failures, swift-certificates built no chain at all, and the reason says
        /// which of its chain-building steps stopped it, checked in swift-certificates' order: an unhandled
        /// critical extension of the certificate, the issuer's name, an unhandled critical extension of the
        /// issuer, the issuer's signature.
        func explain(
            _ failures: [CertificateValidationResult.PolicyFailure], certificate: Certificate, issuer: Certificate,
            handledCriticalExtensions handled: [ASN1ObjectIdentifier]
        ) -> String {
            explain(
                reasons: failures.map { (reason: $0.policyFailureReason.description, chain: Array($0.chain)) },
                certificate: certificate, issuer: issuer, handledCriticalExtensions: handled)
        }

        /// Why swift-certificates refused the link, from each failure's reason and the chain it was about.
        func explain(
            reasons failures: [(reason: String, chain: [Certificate])], certificate: Certificate, issuer: Certificate,
            handledCriticalExtensions handled: [ASN1ObjectIdentifier]
        ) -> String {
            guard !failures.isEmpty else {
                return "swift-certificates built no chain: "
                    + noChain(certificate: certificate, issuer: issuer, handled: handled)
            }
            var reasons: [String] = []
            for failure in failures {
                let reason = sanitized(failure.reason, chain: failure.chain)
                if !reasons.contains(reason) { reasons.append(reason) }
            }
            var text = "swift-certificates: " + reasons.prefix(Self.maximumReasons).joined(separator: "; ")
            if reasons.count > Self.maximumReasons { text += "; and \(reasons.count - Self.maximumReasons) more" }
            return text
        }

        private func noChain(certificate: Certificate, issuer: Certificate, handled: [ASN1ObjectIdentifier]) -> String {
            let unhandled = Self.unhandledCriticalExtensions(of: certificate, handled: handled)
            if !unhandled.isEmpty {
                return "the \(self.certificate) certificate has unhandled critical extensions (\(unhandled))"
            }
            if certificate.issuer != issuer.subject {
                return "the \(self.certificate) certificate names another issuer than the \(self.issuer) certificate"
            }
            let unhandledByIssuer = Self.unhandledCriticalExtensions(of: issuer, handled: handled)
            if !unhandledByIssuer.isEmpty {
                return "the \(self.issuer) certificate has unhandled critical extensions (\(unhandledByIssuer))"
            }
            return "the \(self.issuer) certificate's key did not sign the \(self.certificate) certificate"
        }

        /// The object identifiers of `certificate`'s critical extensions that no policy handles, at most four.
        private static func unhandledCriticalExtensions(
            of certificate: Certificate, handled: [ASN1ObjectIdentifier]
        ) -> String {
            let oids = certificate.extensions.filter { $0.critical && !handled.contains($0.oid) }.map(\.oid)
            return oids.prefix(4).map(String.init(describing:)).joined(separator: ", ")
        }

        /// `reason` with the certificates of `chain` named by their roles, control characters removed, bounded;
        /// withheld whole if it still describes a certificate.
        private func sanitized(_ reason: String, chain: [Certificate]) -> String {
            var text = reason
            for (position, member) in chain.enumerated() {
                let role = position == 0 ? certificate : position == 1 ? issuer : "certificate \(position + 1)"
                text = text.replacingOccurrences(of: String(describing: member), with: "<\(role)>")
            }
            if text.contains("Certificate(") { return "(a reason describing a certificate, withheld)" }
            text = String(text.unicodeScalars.map { $0.properties.generalCategory == .control ? " " : Character($0) })
            if text.count > Self.maximumReasonLength { text = text.prefix(Self.maximumReasonLength - 1) + "…" }
            return text
        }
    }
}
