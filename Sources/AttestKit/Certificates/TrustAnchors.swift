/// The two roots a verifier trusts: one for attestation certificate chains, one for receipt signers.
///
/// ``apple()`` returns Apple's pinned roots and is what production uses. Any other value comes from
/// ``init(attestation:receipt:)`` and is meant for test CAs such as the software Apple of
/// `AttestKitTesting`; ``isApple`` tells the two apart so that a server can refuse a test CA in production.
public struct TrustAnchors: Sendable, Hashable {
    /// The root of attestation certificate chains.
    public let attestation: TrustAnchor
    /// The root of receipt signer chains.
    public let receipt: TrustAnchor

    /// Creates a pair of custom anchors. For test CAs only.
    public init(attestation: TrustAnchor, receipt: TrustAnchor) {
        self.attestation = attestation
        self.receipt = receipt
    }

    /// Apple App Attestation Root CA and Apple Root CA - G3, embedded and checked against their pins.
    public static func apple() throws(AttestKitError) -> TrustAnchors {
        TrustAnchors(attestation: try .appAttestationRoot(), receipt: try .appleRootCAG3())
    }

    /// Whether both anchors are Apple's pinned roots.
    public var isApple: Bool {
        attestation.sha256 == Hex.decode(TrustAnchor.appAttestationRootSHA256)
            && receipt.sha256 == Hex.decode(TrustAnchor.appleRootCAG3SHA256)
    }
}
