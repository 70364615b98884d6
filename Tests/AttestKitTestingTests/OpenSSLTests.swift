import AttestKitTestSupport
import AttestKit
import AttestKitTesting
import Foundation
import SwiftASN1
import Testing
import X509

/// An independent implementation agrees: `openssl verify` accepts every simulated credential chain and
/// `openssl cms -verify` every simulated receipt, with the same options a real Apple receipt needs (none beyond
/// `-attime`: `openssl cms -verify -CAfile "Apple Root CA - G3" -attime T` accepts Apple's receipts as they are).
/// These tests fail, not skip, when openssl is missing.
@Suite struct OpenSSLTests {
    static let openssl = URL(fileURLWithPath: "/usr/bin/openssl")
    let time = String(Int(Fixture.time.timeIntervalSince1970))

    private func requireOpenSSL() throws {
        try #require(
            FileManager.default.isExecutableFile(atPath: Self.openssl.path),
            "openssl is required at \(Self.openssl.path) for the cross-check")
    }

    private func write(_ text: String, _ name: String, in directory: URL) throws -> String {
        let url = directory.appendingPathComponent(name)
        try Data(text.utf8).write(to: url)
        return url.path
    }

    private func pem(_ der: [UInt8]) throws -> String {
        try Certificate(derEncoded: der).serializeAsPEM().pemString + "\n"
    }

    @Test(arguments: [false, true])
    func opensslVerifiesTheCredentialChain(iOS27: Bool) async throws {
        try requireOpenSSL()
        let directory = try ExternalTool.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let (_, _, object) = try Fixture.attested(iOS27: iOS27)
        let certificates = try AttestationObject(bytes: object).certificates
        let root = try write(Fixture.apple.attestationRootPEM, "root.pem", in: directory)
        let intermediate = try write(try pem(certificates[1]), "intermediate.pem", in: directory)
        let leaf = try write(try pem(certificates[0]), "leaf.pem", in: directory)

        let accepted = try await ExternalTool.run(
            Self.openssl, ["verify", "-attime", time, "-CAfile", root, "-untrusted", intermediate, leaf])
        #expect(accepted.status == 0, "\(accepted.output)")
        #expect(accepted.output.contains("OK"))

        // The negative control: Apple's root does not accept it, and neither does a time after the leaf expired.
        let appleRoot = try write(
            try TrustAnchor.appAttestationRoot().certificate.serializeAsPEM().pemString, "apple.pem", in: directory)
        let untrusted = try await ExternalTool.run(
            Self.openssl, ["verify", "-attime", time, "-CAfile", appleRoot, "-untrusted", intermediate, leaf])
        #expect(untrusted.status != 0)
        let late = String(Int(Fixture.time.timeIntervalSince1970) + 3 * 86_400)
        let expired = try await ExternalTool.run(
            Self.openssl, ["verify", "-attime", late, "-CAfile", root, "-untrusted", intermediate, leaf])
        #expect(expired.status != 0)
    }

    @Test func opensslVerifiesAttestAndRefreshedReceipts() async throws {
        try requireOpenSSL()
        let directory = try ExternalTool.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let (device, keyID, object) = try Fixture.attested(.development)
        let attest = try #require(try AttestationObject(bytes: object).receipt)
        let refreshed = try device.refreshReceipt(for: keyID, riskMetric: 2, at: Fixture.time)
        let root = try write(Fixture.apple.receiptRootPEM, "receipt-root.pem", in: directory)

        for (name, receipt) in [("attest", attest), ("refreshed", refreshed)] {
            let input = directory.appendingPathComponent("\(name).der")
            let payload = directory.appendingPathComponent("\(name).payload")
            try Data(receipt).write(to: input)
            let outcome = try await ExternalTool.run(
                Self.openssl,
                ["cms", "-verify", "-inform", "DER", "-in", input.path, "-CAfile", root, "-attime", time,
                 "-out", payload.path])
            #expect(outcome.status == 0, "\(name): \(outcome.output)")
            #expect(outcome.output.contains("Verification successful"))
            // openssl reassembles the chunked content into exactly the payload AttestKit reads.
            #expect(Array(try Data(contentsOf: payload)) == Array(try ReceiptContainer(berEncoded: receipt).content))

            let appleRoot = try write(
                try TrustAnchor.appleRootCAG3().certificate.serializeAsPEM().pemString, "g3.pem", in: directory)
            let untrusted = try await ExternalTool.run(
                Self.openssl,
                ["cms", "-verify", "-inform", "DER", "-in", input.path, "-CAfile", appleRoot, "-attime", time,
                 "-out", "/dev/null"])
            #expect(untrusted.status != 0, "\(name) must not verify under Apple Root CA - G3")
        }
    }
}
