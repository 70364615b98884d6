import AttestKit
import AttestKitConformance
import Foundation
import Testing

/// Every real vector gets the outcome it must get (the same runner `attestkit verify` uses).
@Suite struct ConformanceTests {
    static let runner: ConformanceRunner = {
        do {
            return ConformanceRunner(anchors: try TrustAnchors.apple())
        } catch {
            preconditionFailure("pinned roots fail to load: \(error)")
        }
    }()

    @Test(arguments: TestVectors.all)
    func vectorGetsItsExpectedOutcome(_ vector: TestVector) async throws {
        let data = try JSONEncoder().encode(vector)
        let conformance = try JSONDecoder().decode(ConformanceVector.self, from: data)
        let outcome = await Self.runner.evaluate(conformance)
        #expect(outcome.expectation == vector.expect, "\(outcome.code ?? "-"): \(outcome.reason ?? "")")
        if vector.kind == "assertion", vector.expect == "valid" {
            #expect(outcome.counter.map(Int.init) == vector.expectedCounter)
        }
    }

    /// The four real vectors whose source's clock preceded their receipt's creation, at those old moments.
    static let beforeTheirReceipt: [(name: String, verifyAt: String)] = [
        ("apple_doc_sample_2026_prod_attestation", "2026-04-21T12:00:00Z"),
        ("basd_attestation", "2021-04-14T09:55:20Z"),
        ("fido2netlib_dev_attestation", "2022-08-24T06:05:36Z"),
        ("veehaitch_ios-14.2_receipt2_RECEIPT", "2020-11-21T22:15:05.000Z"),
    ]

    /// One verification path: a receipt created after the verification time is refused by the public API, the
    /// conformance runner and `attestkit verify` alike (the runner and the CLI once skipped that check).
    @Test(arguments: beforeTheirReceipt)
    func aVerificationBeforeTheReceiptIsRefusedOnEveryPath(name: String, verifyAt: String) async throws {
        var vector = TestVectors.named(name)
        vector.verifyAt = verifyAt
        let time = try #require(vector.verificationTime)
        await #expect(throws: AttestKitError.code(.receiptFromFuture)) {
            if vector.kind == "receipt" {
                _ = try await ReceiptTests.verify(vector, at: time)
            } else {
                let environments: EnvironmentPolicy = vector.environment == "production" ? .production : .development
                _ = try await AttestationVerifierTests.verify(
                    vector, verifier: try AttestationVerifierTests.verifier(vector, environments: environments),
                    at: time)
            }
        }
        let data = try JSONEncoder().encode(vector)
        let outcome = await Self.runner.evaluate(try JSONDecoder().decode(ConformanceVector.self, from: data))
        #expect(outcome.outcome == .reject)
        #expect(outcome.code == AttestKitError.Code.receiptFromFuture.rawValue)

        let run = try await CommandLineTests.run(["verify", "--jsonl", "-"], input: String(decoding: data, as: UTF8.self))
        let line = try JSONSerialization.jsonObject(with: Data(run.output.utf8)) as? [String: Any]
        #expect(line?["outcome"] as? String == "reject")
        #expect(line?["code"] as? String == AttestKitError.Code.receiptFromFuture.rawValue)
    }

    @Test func malformedJSONLineIsAFormatReject() async {
        let outcome = await Self.runner.evaluate(line: "{not json")
        #expect(outcome.outcome == .reject)
        #expect(outcome.check == "format")
    }

    @Test func unknownKindIsRejectedNotCrashed() async {
        let outcome = await Self.runner.evaluate(line: #"{"name":"x","kind":"teapot","data":"AA=="}"#)
        #expect(outcome.outcome == .reject)
    }
}
