import Foundation
import SwiftASN1
import X509

extension SoftwareApple {
    /// A software Apple as a state file holds it: every private key and certificate. Test keys only.
    struct Snapshot: Codable, Sendable {
        var configuration: Configuration
        /// Base64 of the seed, when the keys were derived from one.
        var seed: String?
        var attestationRoot: Identity
        var attestationIntermediate: Identity
        var receiptRoot: Identity
        var receiptIntermediate: Identity
        var receiptSigner: Identity

        /// One key and its certificate.
        struct Identity: Codable, Sendable {
            var curve: SigningKey.Curve
            /// Base64 of the raw private scalar.
            var privateKey: String
            /// Base64 of the certificate's DER.
            var certificate: String

            init(_ identity: SigningIdentity) {
                curve = identity.key.curve
                privateKey = Data(identity.key.rawRepresentation).base64EncodedString()
                certificate = Data(identity.der).base64EncodedString()
            }

            /// The identity, checked: the key must be the certificate's.
            func restored(_ name: String) throws(SoftwareAppleError) -> SigningIdentity {
                guard let raw = Data(base64Encoded: privateKey), let der = Data(base64Encoded: certificate),
                    let key = try? SigningKey(curve: curve, rawRepresentation: Array(raw)),
                    let parsed = try? Certificate(derEncoded: Array(der)), parsed.publicKey == key.publicKey
                else {
                    throw SoftwareAppleError(.invalidState, "the state's \(name) key or certificate is unusable")
                }
                return try SigningIdentity(key: key, certificate: parsed)
            }
        }
    }

    /// This software Apple's state.
    var snapshot: Snapshot {
        Snapshot(
            configuration: configuration, seed: seed.map { Data($0).base64EncodedString() },
            attestationRoot: .init(attestation.root), attestationIntermediate: .init(attestation.intermediate),
            receiptRoot: .init(receipts.root), receiptIntermediate: .init(receipts.intermediate),
            receiptSigner: .init(receipts.signer))
    }

    /// Restores a software Apple from its state.
    init(snapshot: Snapshot) throws(SoftwareAppleError) {
        var seed: [UInt8]?
        if let text = snapshot.seed {
            guard let decoded = Data(base64Encoded: text) else {
                throw SoftwareAppleError(.invalidState, "the state's seed is not Base64")
            }
            seed = Array(decoded)
        }
        try self.init(
            configuration: snapshot.configuration,
            attestation: AttestationHierarchy(
                root: snapshot.attestationRoot.restored("attestation root"),
                intermediate: snapshot.attestationIntermediate.restored("attestation intermediate")),
            receipts: ReceiptHierarchy(
                root: snapshot.receiptRoot.restored("receipt root"),
                intermediate: snapshot.receiptIntermediate.restored("receipt intermediate"),
                signer: snapshot.receiptSigner.restored("receipt signer")),
            seed: seed)
    }
}
