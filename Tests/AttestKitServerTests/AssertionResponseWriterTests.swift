import AttestKitFlows
import AttestKitWire
import Foundation
import Testing

@testable import AttestKitServer

/// The fast writer of assertion answers writes exactly what `WireJSON` (`JSONEncoder`) writes, or leaves it to it.
@Suite("Assertion response writer")
struct AssertionResponseWriterTests {
    static func response(
        keyId: String = "a2V5/+==", counter: UInt32 = 7, riskMetric: Int? = nil, riskStatus: String = "ok",
        stepUp: Bool = false, freshness: Freshness.Kind = .timestamp, bundleVersion: String? = nil,
        validationCategory: UInt32? = nil, validationCategoryChanged: Bool? = nil
    ) -> AssertionResponse {
        AssertionResponse(
            keyId: keyId, counter: counter, environment: "production", riskMetric: riskMetric, riskStatus: riskStatus,
            stepUp: stepUp, freshness: freshness, bundleVersion: bundleVersion, validationCategory: validationCategory,
            validationCategoryChanged: validationCategoryChanged)
    }

    @Test("every shape of each field: the same bytes as WireJSON")
    func sameBytes() throws {
        var responses: [AssertionResponse] = []
        for counter: UInt32 in [0, 1, 4_294_967_295] {
            for metric: Int? in [nil, 0, 7, -3, Int.max, Int.min] {
                for stepUp in [false, true] {
                    for freshness in Freshness.Kind.allCases {
                        responses.append(
                            Self.response(counter: counter, riskMetric: metric, stepUp: stepUp, freshness: freshness))
                    }
                }
            }
        }
        // The iOS 27 fields, each present or absent, with the other fields' shapes.
        for version: String? in [nil, "", "1", "1.10.0", "27 (4B)"] {
            for category: UInt32? in [nil, 0, 1, 4_294_967_295] {
                for changed: Bool? in [nil, false, true] {
                    for metric: Int? in [nil, -3] {
                        responses.append(
                            Self.response(
                                riskMetric: metric, stepUp: changed == true, bundleVersion: version,
                                validationCategory: category, validationCategoryChanged: changed))
                    }
                }
            }
        }
        responses.append(Self.response(keyId: "", riskStatus: ""))
        responses.append(Self.response(keyId: " !#$%&'()*+,-./0123456789:;<=>?@AZ[]^_`az{|}~", riskStatus: "step_up"))
        for response in responses {
            let written = try #require(AssertionResponseWriter.write(response))
            #expect(written == Array(try WireJSON.encode(response)), "\(response)")
        }
    }

    @Test(
        "a string JSON would escape, or not printable ASCII, is left to JSONEncoder",
        arguments: ["a\"b", "a\\b", "a\nb", "\u{7F}", "é", "\u{0}"])
    func leftToJSONEncoder(_ text: String) {
        #expect(AssertionResponseWriter.write(Self.response(keyId: text)) == nil)
        #expect(AssertionResponseWriter.write(Self.response(riskStatus: text)) == nil)
        #expect(AssertionResponseWriter.write(Self.response(bundleVersion: text)) == nil)
    }
}
