import Foundation
public import X509
import Crypto
import SwiftASN1

/// A pinned trust anchor: a root certificate and the SHA-256 of its DER encoding.
///
/// The two Apple roots ship inside the library and are checked against their pins every time
/// they are loaded. ``init(pem:sha256:)`` accepts another root, for test CAs such as the software
/// Apple of `AttestKitTesting`: never configure one in production.
public struct TrustAnchor: Sendable, Hashable {
    /// The root certificate.
    public let certificate: Certificate
    /// SHA-256 of the root's DER encoding.
    public let sha256: [UInt8]

    /// Loads a root from PEM and checks it against a SHA-256 pin of its DER bytes.
    ///
    /// - Parameters:
    ///   - pem: One PEM `CERTIFICATE` block.
    ///   - pin: The expected SHA-256 of the DER encoding, hex (case-insensitive). When `nil`, the
    ///     pin is computed from the certificate itself (use only for roots you generated).
    /// - Throws: ``AttestKitError/Code/certificateMalformed`` or ``AttestKitError/Code/trustAnchorPinMismatch``.
    public init(pem: String, sha256 pin: String? = nil) throws(AttestKitError) {
        let certificate: Certificate
        let der: [UInt8]
        do {
            let document = try PEMDocument(pemString: pem)
            der = document.derBytes
            certificate = try Certificate(derEncoded: der)
        } catch {
            throw AttestKitError(.certificateMalformed, "the trust anchor is not a PEM certificate")
        }
        let digest = Array(SHA256.hash(data: der))
        if let pin {
            guard let expected = Hex.decode(pin), ConstantTime.equal(expected, digest) else {
                throw AttestKitError(.trustAnchorPinMismatch, "the trust anchor does not match its SHA-256 pin")
            }
        }
        self.certificate = certificate
        self.sha256 = digest
    }

    /// Creates an anchor from a parsed root certificate (for test CAs).
    public init(certificate: Certificate) throws(AttestKitError) {
        let der: [UInt8]
        do {
            der = try certificate.serializeAsPEM().derBytes
        } catch {
            throw AttestKitError(.certificateMalformed, "the trust anchor cannot be serialized")
        }
        self.certificate = certificate
        self.sha256 = Array(SHA256.hash(data: der))
    }

    /// SHA-256 pin of Apple App Attestation Root CA.
    public static let appAttestationRootSHA256 = "1CB9823BA28BA6AD2D33A006941DE2AE4F513EF1D4E831B9F7E0FA7B6242C932"
    /// SHA-256 pin of Apple Root CA - G3.
    public static let appleRootCAG3SHA256 = "63343ABFB89A6A03EBB57E9B3F5FA7BE7C4F5C756F3017B3A8C488C3653E9179"

    private static let loadedAppAttestationRoot = Result { () throws(AttestKitError) in
        try TrustAnchor(pem: appAttestationRootPEM, sha256: appAttestationRootSHA256)
    }
    private static let loadedAppleRootCAG3 = Result { () throws(AttestKitError) in
        try TrustAnchor(pem: appleRootCAG3PEM, sha256: appleRootCAG3SHA256)
    }

    /// Apple App Attestation Root CA, the anchor of attestation certificate chains; pin-checked.
    public static func appAttestationRoot() throws(AttestKitError) -> TrustAnchor {
        try loadedAppAttestationRoot.get()
    }

    /// Apple Root CA - G3, the anchor of App Attest receipt signers; pin-checked.
    public static func appleRootCAG3() throws(AttestKitError) -> TrustAnchor {
        try loadedAppleRootCAG3.get()
    }

    /// Apple App Attestation Root CA, as published at
    /// https://www.apple.com/certificateauthority/Apple_App_Attestation_Root_CA.pem
    static let appAttestationRootPEM = """
        -----BEGIN CERTIFICATE-----
        MIICITCCAaegAwIBAgIQC/O+DvHN0uD7jG5yH2IXmDAKBggqhkjOPQQDAzBSMSYw
        JAYDVQQDDB1BcHBsZSBBcHAgQXR0ZXN0YXRpb24gUm9vdCBDQTETMBEGA1UECgwK
        QXBwbGUgSW5jLjETMBEGA1UECAwKQ2FsaWZvcm5pYTAeFw0yMDAzMTgxODMyNTNa
        Fw00NTAzMTUwMDAwMDBaMFIxJjAkBgNVBAMMHUFwcGxlIEFwcCBBdHRlc3RhdGlv
        biBSb290IENBMRMwEQYDVQQKDApBcHBsZSBJbmMuMRMwEQYDVQQIDApDYWxpZm9y
        bmlhMHYwEAYHKoZIzj0CAQYFK4EEACIDYgAERTHhmLW07ATaFQIEVwTtT4dyctdh
        NbJhFs/Ii2FdCgAHGbpphY3+d8qjuDngIN3WVhQUBHAoMeQ/cLiP1sOUtgjqK9au
        Yen1mMEvRq9Sk3Jm5X8U62H+xTD3FE9TgS41o0IwQDAPBgNVHRMBAf8EBTADAQH/
        MB0GA1UdDgQWBBSskRBTM72+aEH/pwyp5frq5eWKoTAOBgNVHQ8BAf8EBAMCAQYw
        CgYIKoZIzj0EAwMDaAAwZQIwQgFGnByvsiVbpTKwSga0kP0e8EeDS4+sQmTvb7vn
        53O5+FRXgeLhpJ06ysC5PrOyAjEAp5U4xDgEgllF7En3VcE3iexZZtKeYnpqtijV
        oyFraWVIyd/dganmrduC1bmTBGwD
        -----END CERTIFICATE-----
        """

    /// Apple Root CA - G3, as published by Apple's certificate authority.
    static let appleRootCAG3PEM = """
        -----BEGIN CERTIFICATE-----
        MIICQzCCAcmgAwIBAgIILcX8iNLFS5UwCgYIKoZIzj0EAwMwZzEbMBkGA1UEAwwS
        QXBwbGUgUm9vdCBDQSAtIEczMSYwJAYDVQQLDB1BcHBsZSBDZXJ0aWZpY2F0aW9u
        IEF1dGhvcml0eTETMBEGA1UECgwKQXBwbGUgSW5jLjELMAkGA1UEBhMCVVMwHhcN
        MTQwNDMwMTgxOTA2WhcNMzkwNDMwMTgxOTA2WjBnMRswGQYDVQQDDBJBcHBsZSBS
        b290IENBIC0gRzMxJjAkBgNVBAsMHUFwcGxlIENlcnRpZmljYXRpb24gQXV0aG9y
        aXR5MRMwEQYDVQQKDApBcHBsZSBJbmMuMQswCQYDVQQGEwJVUzB2MBAGByqGSM49
        AgEGBSuBBAAiA2IABJjpLz1AcqTtkyJygRMc3RCV8cWjTnHcFBbZDuWmBSp3ZHtf
        TjjTuxxEtX/1H7YyYl3J6YRbTzBPEVoA/VhYDKX1DyxNB0cTddqXl5dvMVztK517
        IDvYuVTZXpmkOlEKMaNCMEAwHQYDVR0OBBYEFLuw3qFYM4iapIqZ3r6966/ayySr
        MA8GA1UdEwEB/wQFMAMBAf8wDgYDVR0PAQH/BAQDAgEGMAoGCCqGSM49BAMDA2gA
        MGUCMQCD6cHEFl4aXTQY2e3v9GwOAEZLuN+yRhHFD/3meoyhpmvOwgPUnPWTxnS4
        at+qIxUCMG1mihDK1A3UT82NQz60imOlM27jbdoXt2QfyFMm+YhidDkLF1vLUagM
        6BgD56KyKA==
        -----END CERTIFICATE-----
        """
}
