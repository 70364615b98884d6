import Crypto
import Foundation
import Testing
import X509

@testable import AttestKit

/// Where a receipt verification's time goes, against the cost of one P-256 signature check.
///
/// Off by default; run with `ATTESTKIT_BENCH=1 swift test -c release --filter ReceiptBenchmarkTests`.
@Suite(.enabled(if: ProcessInfo.processInfo.environment["ATTESTKIT_BENCH"] != nil))
struct ReceiptBenchmarkTests {
    static let iterations = 2_000

    @Test(arguments: ["oliverbinns_stmt_receipt_ATTEST", "veehaitch_hist_2020-09-12_Vki4bB_receipt_RECEIPT"])
    func verificationCost(_ name: String) async throws {
        let vector = TestVectors.named(name)
        let bytes = vector.bytes
        let verifier = try ReceiptVerifier()
        let appID = try AppID(#require(vector.appId))
        let keyID = try KeyID(string: #require(vector.keyId))
        let time = try #require(vector.verificationTime)
        let container = try ReceiptContainer(berEncoded: bytes)
        let receipt = try await verifier.verify(bytes, appID: appID, keyID: keyID, maximumAge: nil, at: time)

        let key = try #require(P256.Signing.PublicKey(container.signer.publicKey))
        let signature = try P256.Signing.ECDSASignature(derRepresentation: container.signature)
        let content = Array(container.content)
        #expect(key.isValidSignature(signature, for: content))
        let p256 = Self.measure { _ = key.isValidSignature(signature, for: content) }
        let parse = Self.measure { _ = try? ReceiptContainer(berEncoded: bytes) }
        let payload = Self.measure { _ = try? Receipt(payload: container.content, bytes: bytes) }
        let signatureCheck = Self.measure { _ = try? container.verifySignature() }
        let full = await Self.measure {
            _ = try? await verifier.verify(bytes, appID: appID, keyID: keyID, maximumAge: nil, at: time)
        }
        let fast = await Self.measure {
            _ = try? await verifier.verify(
                bytes, appID: appID, keyID: keyID, attestedCertificateDER: receipt.attestedCertificateDER,
                maximumAge: nil, at: time)
        }
        let chain = ChainValidator(anchor: try TrustAnchor.appleRootCAG3(), codes: .receipt)
        let chainCost = await Self.measure {
            try? await chain.validate(leaf: container.signer, candidates: container.certificates, at: time, leeway: 60)
        }
        print(
            """
            \(name): one P-256 check \(p256) µs; container parse \(parse) µs; signer chain \(chainCost) µs; \
            content signature \(signatureCheck) µs; payload parse \(payload) µs; full verify \(full) µs \
            (\(String(format: "%.1f", full / p256)) P-256 checks); with known certificate \(fast) µs \
            (\(String(format: "%.1f", fast / p256)))
            """)
    }

    /// Mean microseconds per call.
    static func measure(_ body: () -> Void) -> Double {
        let start = ContinuousClock.now
        for _ in 0..<iterations { body() }
        return microseconds(ContinuousClock.now - start)
    }

    static func measure(_ body: () async -> Void) async -> Double {
        let start = ContinuousClock.now
        for _ in 0..<iterations { await body() }
        return microseconds(ContinuousClock.now - start)
    }

    private static func microseconds(_ duration: Duration) -> Double {
        let (seconds, attoseconds) = duration.components
        return ((Double(seconds) * 1e6 + Double(attoseconds) / 1e12) / Double(iterations)).rounded()
    }
}
