import AttestKit
import AttestKitConformance
import AttestKitTesting
import Crypto
import Foundation
import Testing
import X509

/// The software Apple's policy vectors (`SimulatedVectors/`, never mixed with the real ones): each gets its stated
/// outcome from the verifier and the policies, no file was changed by hand, and the generator still makes them.
@Suite struct SimulatedPolicyVectorTests {
    struct Entry: Decodable, Sendable, CustomTestStringConvertible {
        var name: String
        var kind: String
        var expect: String
        var expectCode: String?
        var file: String
        var sha256: String
        var testDescription: String { name }
    }

    static let directory: URL = {
        guard let url = Bundle.module.url(forResource: "SimulatedVectors", withExtension: nil) else {
            preconditionFailure("test resources missing SimulatedVectors/")
        }
        return url
    }()

    static let index: [Entry] = {
        do {
            return try JSONDecoder().decode(
                [Entry].self, from: Data(contentsOf: directory.appendingPathComponent("index.json")))
        } catch {
            preconditionFailure("cannot load SimulatedVectors/index.json: \(error)")
        }
    }()

    static func contents(_ path: String) throws -> Data { try Data(contentsOf: directory.appendingPathComponent(path)) }

    static func vector(_ entry: Entry) throws -> SimulatedVector {
        try JSONDecoder().decode(SimulatedVector.self, from: contents(entry.file))
    }

    /// The software Apple's roots, read from the files beside the vectors (never Apple's).
    static func anchors() throws -> TrustAnchors {
        TrustAnchors(
            attestation: try TrustAnchor(pem: String(decoding: try contents("attestation-root.pem"), as: UTF8.self)),
            receipt: try TrustAnchor(pem: String(decoding: try contents("receipt-root.pem"), as: UTF8.self)))
    }

    @Test func theSetCoversEveryCaseAndStaysApartFromTheRealVectors() throws {
        #expect(Self.index.count == 110)
        let names = Set(Self.index.map(\.name))
        #expect(names.count == Self.index.count)
        #expect(names.allSatisfy { $0.hasPrefix("simulated_policy_") })
        #expect(TestVectors.all.allSatisfy { !names.contains($0.name) })
        for category in ValidationCategory.names.map(\.name) + ["number-10"] {
            for kind in ["attestation", "assertion"] {
                #expect(
                    names.contains { $0.hasPrefix("simulated_policy_category-\(category)_\(kind)_") }, "\(category)")
            }
        }
        for prefix in ["pre-ios27", "bundle-version-1.9_", "bundle-version-1.10_", "macos-key", "category-change-"] {
            #expect(names.contains { $0.contains("_\(prefix)") }, "\(prefix)")
        }
        // Both outcomes occur, and every refusal names its code.
        #expect(Self.index.contains { $0.expect == "valid" })
        #expect(
            Self.index.filter { $0.expect != "valid" }.allSatisfy {
                $0.expect == "reject:policy" && $0.expectCode != nil
            })
        // No file but the listed ones, the roots and the README.
        let listed = Set(
            Self.index.map(\.file) + ["index.json", "attestation-root.pem", "receipt-root.pem", "README.md"])
        let enumerator = FileManager.default.enumerator(
            at: Self.directory, includingPropertiesForKeys: [.isRegularFileKey])
        var present: Set<String> = []
        while let url = enumerator?.nextObject() as? URL {
            guard (try url.resourceValues(forKeys: [.isRegularFileKey])).isRegularFile == true else { continue }
            present.insert(
                String(url.standardizedFileURL.path.dropFirst(Self.directory.standardizedFileURL.path.count + 1)))
        }
        #expect(present == listed)
    }

    /// A file changed by hand (an outcome edited to match a bug, a byte of an object) no longer matches the index.
    @Test(arguments: index)
    func noFileWasChangedByHand(_ entry: Entry) throws {
        let data = try Self.contents(entry.file)
        #expect(Hex.encode(SHA256.hash(data: data)) == entry.sha256)
        let vector = try Self.vector(entry)
        #expect(vector.name == entry.name && vector.kind == entry.kind)
        #expect(vector.expect == entry.expect && vector.expectCode == entry.expectCode)
    }

    /// Every vector gets its stated outcome from the verifier and the policies (the runner `attestkit verify` uses),
    /// and the verifier reads the iOS 27 data the vector says the object reports.
    @Test(arguments: index)
    func vectorGetsItsStatedOutcome(_ entry: Entry) async throws {
        let runner = ConformanceRunner(anchors: try Self.anchors())
        let conformance = try JSONDecoder().decode(ConformanceVector.self, from: Self.contents(entry.file))
        let outcome = await runner.evaluate(conformance)
        #expect(outcome.expectation == entry.expect, "\(outcome.code ?? "-"): \(outcome.reason ?? "")")
        #expect(outcome.code == entry.expectCode)

        // Apple's checks alone (no policy): every object is valid, and reports what the vector says.
        var unjudged = conformance
        unjudged.policy = nil
        let verified = await runner.evaluate(unjudged)
        let vector = try Self.vector(entry)
        #expect(verified.outcome == .valid, "\(verified.code ?? "-")")
        #expect(verified.bundleVersion == vector.reported?.bundleVersion)
        #expect(verified.validationCategory == vector.reported?.validationCategory)
    }

    /// The access control of each attestation's credential certificate is read as the vector says.
    @Test(arguments: index.filter { $0.kind == "attestation" })
    func attestationReportsItsKeyAccessControl(_ entry: Entry) async throws {
        let vector = try Self.vector(entry)
        let verifier = AttestationVerifier(
            configuration: try .init(
                appIDs: [try AppID(vector.appId ?? "")], environments: .production, trustAnchors: try Self.anchors()))
        let verified = try await verifier.verify(
            TestVectors.decode(vector.data), keyID: try KeyID(string: vector.keyId ?? ""),
            clientData: .clientDataHash(TestVectors.decode(vector.clientDataHash ?? "")),
            at: try #require(vector.verifyAt.flatMap(TestVectors.parseDate)))
        let read: String =
            switch verified.keyAccessControl {
            case .absent: "absent"
            case .present(let control) where control.isMacOSFullSecurityPolicy: "macos"
            case .present(let control) where control.policy == SimulatedDevice.KeyAccessControl.iOSPolicy: "ios"
            default: "other"
            }
        #expect(read == vector.reported?.keyAccessControl)
    }

    /// The generator still makes this set: the same names, outcomes, policies, keys, client data and authenticator
    /// data (the ECDSA signatures, randomized, differ between generations), and roots with the same keys.
    @Test func theGeneratorMakesTheSameSet() throws {
        let generated = try PolicyVectors.generate()
        let stored = try Self.index.map(Self.vector)
        #expect(generated.vectors.map(\.name) == stored.map(\.name))
        for (new, old) in zip(generated.vectors, stored) {
            #expect(new.expect == old.expect && new.expectCode == old.expectCode, "\(old.name)")
            #expect(new.policy == old.policy && new.reported == old.reported && new.registered == old.registered)
            #expect(new.keyId == old.keyId && new.publicKey == old.publicKey && new.appId == old.appId)
            #expect(new.clientDataHash == old.clientDataHash && new.clientData == old.clientData)
            #expect(new.verifyAt == old.verifyAt && new.previousCounter == old.previousCounter)
            #expect(try Self.authenticatorData(new) == Self.authenticatorData(old), "\(old.name)")
        }
        let anchors = try Self.anchors()
        #expect(generated.apple.attestationRoot.publicKey == anchors.attestation.certificate.publicKey)
        #expect(generated.apple.receiptRoot.publicKey == anchors.receipt.certificate.publicKey)
    }

    static func authenticatorData(_ vector: SimulatedVector) throws -> [UInt8] {
        let bytes = TestVectors.decode(vector.data)
        return vector.kind == "attestation"
            ? try AttestationObject(bytes: bytes).authenticatorData.bytes
            : try AssertionObject(bytes: bytes).authenticatorData.bytes
    }

    // MARK: Apple's 2026 sample (a real vector)

    static let sample = "apple_doc_sample_2026_prod_attestation"

    /// Apple's validation-guide sample (226-byte authData) reports bundle version "1" and category 1 (`platform`).
    @Test func applesSampleReportsBundleVersionOneAndCategoryOne() async throws {
        let vector = TestVectors.named(Self.sample)
        let verified = try await AttestationVerifierTests.verify(
            vector, verifier: try AttestationVerifierTests.verifier(vector, environments: .production))
        #expect(verified.authenticatorData.bytes.count == 226)
        #expect(verified.bundleVersion == "1")
        #expect(verified.validationCategory == 1)
        #expect(ValidationCategory(try #require(verified.validationCategory)) == .platform)
    }

    /// Apple's sample under the category and bundle-version policies: admitted by `platform` (by name or number)
    /// and minimums it meets, refused by another category and a higher minimum.
    @Test(
        arguments: [
            (#"{"validationCategories":["platform"]}"#, nil),
            (#"{"validationCategories":["1"]}"#, nil),
            (#"{"validationCategories":["app-store","unreported"]}"#, "policy_validation_category"),
            (#"{"minimumBundleVersion":"1"}"#, nil),
            (#"{"minimumBundleVersion":"1.0.0"}"#, nil),
            (#"{"minimumBundleVersion":"0.9"}"#, nil),
            (#"{"minimumBundleVersion":"1.0.1"}"#, "policy_bundle_version"),
            (#"{"validationCategories":["platform"],"minimumBundleVersion":"2"}"#, "policy_bundle_version"),
        ] as [(String, String?)])
    func applesSampleUnderThePolicies(policy: String, code: String?) async throws {
        let vector = TestVectors.named(Self.sample)
        var object = try #require(
            try JSONSerialization.jsonObject(with: JSONEncoder().encode(vector)) as? [String: Any])
        object["policy"] = try JSONSerialization.jsonObject(with: Data(policy.utf8))
        let conformance = try JSONDecoder().decode(
            ConformanceVector.self, from: JSONSerialization.data(withJSONObject: object))
        let outcome = await ConformanceTests.runner.evaluate(conformance)
        #expect(outcome.expectation == (code == nil ? "valid" : "reject:policy"), "\(outcome.reason ?? "")")
        #expect(outcome.code == code)
        #expect(outcome.bundleVersion == (code == nil ? "1" : nil))
    }
}
