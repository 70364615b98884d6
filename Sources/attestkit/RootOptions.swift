import ArgumentParser
import AttestKit
import Foundation

/// `--attestation-root` / `--receipt-root`: replace the pinned Apple roots, for test CAs only.
struct RootOptions: ParsableArguments {
    @Option(name: .long, help: "PEM root for attestation chains (test CAs only; default: Apple's pinned root).")
    var attestationRoot: String?

    @Option(name: .long, help: "PEM root for receipt signers (test CAs only; default: Apple Root CA - G3).")
    var receiptRoot: String?

    func anchors() throws -> TrustAnchors {
        let apple = try TrustAnchors.apple()
        return TrustAnchors(
            attestation: try attestationRoot.map(Self.load) ?? apple.attestation,
            receipt: try receiptRoot.map(Self.load) ?? apple.receipt)
    }

    private static func load(_ path: String) throws -> TrustAnchor {
        try TrustAnchor(pem: try InputFile.text(path))
    }
}
