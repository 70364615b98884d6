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
