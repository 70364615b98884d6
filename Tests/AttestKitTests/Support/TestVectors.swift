import Foundation
import Testing

/// One conformance vector of `Vectors/` (schema in `Vectors/README.md`).
struct TestVector: Codable, Sendable, CustomTestStringConvertible {
    struct Fields: Codable, Sendable {
        var type: String?
        var appId: String?
        var environment: String?
        var creationTime: String?
        var riskMetric: Int?
        var notBefore: String?
        var expirationTime: String?
        var token: String?
    }

    /// Attestations: facts an independent decoder read from the authenticator data.
    struct Decoded: Codable, Sendable {
        var authDataLength: Int
        var counter: Int
        /// The AAGUID as text (`appattest` plus seven NULs, or `appattestdevelop`).
        var aaguid: String
        /// The trailing iOS 27 extension map, as Python's `repr` printed it; `nil` when absent.
        var authDataTrailing: String?

        enum CodingKeys: String, CodingKey {
            case authDataLength = "authData_len"
            case counter
            case aaguid
            case authDataTrailing = "authData_trailing_decoded"
        }
    }

    var name: String
    var kind: String
    var expect: String
    var data: String
    var appId: String?
    var environment: String?
    var verifyAt: String?
    var keyId: String?
    var clientDataHash: String?
    var clientData: String?
    var publicKey: String?
    var previousCounter: Int?
    var expectedCounter: Int?
    var attestation: String?
    var fields: Fields?
    var decoded: Decoded?

    var testDescription: String { name }

    /// The object's bytes (the data is base64 or base64url, padded or not).
    var bytes: [UInt8] { TestVectors.decode(data) }

    /// `verifyAt` as a date.
    var verificationTime: Date? { verifyAt.flatMap(TestVectors.parseDate) }

    /// When a receipt vector can be verified outside a replay: its `verifyAt`, or its receipt's creation time when
    /// that is later (a receipt is refused before Apple made it; one source's test clock precedes its receipt).
    var receiptVerificationTime: Date? {
        guard let time = verificationTime else { return nil }
        guard let created = fields?.creationTime.flatMap(TestVectors.parseDate) else { return time }
        return max(time, created)
    }
}

enum TestVectors {
    struct IndexEntry: Decodable { var name: String; var kind: String; var expect: String; var file: String }

    static let directory: URL = {
        guard let url = Bundle.module.url(forResource: "Vectors", withExtension: nil) else {
            preconditionFailure("test resources missing Vectors/")
        }
        return url
    }()

    static let all: [TestVector] = {
        do {
            let index = try JSONDecoder().decode(
                [IndexEntry].self, from: Data(contentsOf: directory.appendingPathComponent("index.json")))
            return try index.map { entry in
                try JSONDecoder().decode(
                    TestVector.self, from: Data(contentsOf: directory.appendingPathComponent(entry.file)))
            }
        } catch {
            preconditionFailure("cannot load vectors: \(error)")
        }
    }()

    static func kind(_ kind: String) -> [TestVector] { all.filter { $0.kind == kind } }

    static func named(_ name: String) -> TestVector {
        guard let vector = all.first(where: { $0.name == name }) else { preconditionFailure("no vector \(name)") }
        return vector
    }

    static func decode(_ text: String) -> [UInt8] {
        var normalized = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while normalized.count % 4 != 0 { normalized += "=" }
        guard let data = Data(base64Encoded: normalized) else { preconditionFailure("bad base64 in vector") }
        return Array(data)
    }

    static func parseDate(_ text: String) -> Date? {
        let withFraction = ISO8601DateFormatter()
        withFraction.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return withFraction.date(from: text) ?? ISO8601DateFormatter().date(from: text)
    }
}
