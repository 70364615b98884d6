import AttestKit
import AttestKitTesting
import Crypto
import Foundation
import Testing

/// For random App IDs, environments, challenges and counters (seeded, so every run is the same), every simulated
/// attestation, assertion and receipt verifies, and changing any single field makes it fail with an
/// `AttestKitError`.
@Suite struct PropertyTests {
    static let seed: UInt64 = 0xA77E_57C1_7E57
    static let cases = 64

    /// One random scenario.
    struct Scenario: CustomTestStringConvertible {
        var index: Int
        var appID: AppID
        var environment: AppAttestEnvironment
        var iOS27: Bool
        var challenge: [UInt8]
        var counter: UInt32
        var clientData: [UInt8]
        var time: Date

        var testDescription: String {
            "#\(index) \(appID) \(environment.rawValue) counter \(counter)\(iOS27 ? " iOS27" : "")"
        }

        static func random(_ index: Int, using random: inout SplitMix64) throws -> Scenario {
            let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
            let team = String((0..<10).map { _ in alphabet[Int(random.next() % UInt64(alphabet.count))] })
            let bundle = "com.example." + (0..<Int(1 + random.next() % 3)).map { _ in
                String((0..<Int(1 + random.next() % 12)).map { _ in
                    Character(Unicode.Scalar(UInt8(ascii: "a") + UInt8(random.next() % 26)))
                })
            }.joined(separator: ".")
            return Scenario(
                index: index, appID: try AppID(teamID: team, bundleID: bundle),
                environment: random.next() % 2 == 0 ? .production : .development, iOS27: random.next() % 4 == 0,
                challenge: random.bytes(Int(1 + random.next() % 64)),
                counter: UInt32(truncatingIfNeeded: random.next() % 5 == 0 ? random.next() % 3 : random.next() % 1_000_000),
                clientData: random.bytes(Int(random.next() % 200)),
                time: Fixture.time.addingTimeInterval(Double(random.next() % (30 * 86_400))))
        }
    }

    @Test func randomObjectsVerifyAndEverySingleChangeFails() async throws {
        var random = SplitMix64(seed: Self.seed)
        for index in 0..<Self.cases {
            let scenario = try Scenario.random(index, using: &random)
            try await check(scenario, using: &random)
        }
    }

    private func check(_ scenario: Scenario, using random: inout SplitMix64) async throws {
        let label = scenario.testDescription
        let device = SimulatedDevice(
            apple: Fixture.apple,
            configuration: .init(appID: scenario.appID, environment: scenario.environment, iOS27: scenario.iOS27))
        let keyID = device.generateKey(using: &random)
        let object = try device.attestKey(
            keyID, clientDataHash: Array(SHA256.hash(data: scenario.challenge)), at: scenario.time)
        let policy: EnvironmentPolicy = scenario.environment == .production ? .production : .development
        let otherPolicy: EnvironmentPolicy = scenario.environment == .production ? .development : .production
        let otherApp = try AppID(teamID: scenario.appID.teamID, bundleID: scenario.appID.bundleID + "x")
        let verifier = try Fixture.verifier(policy, appID: scenario.appID)

        func attestation(
            _ bytes: [UInt8], verifier: AttestationVerifier = verifier, keyID: KeyID = keyID,
            challenge: [UInt8] = scenario.challenge
        ) async throws {
            _ = try await verifier.verify(bytes, keyID: keyID, clientData: .challenge(challenge), at: scenario.time)
        }

        // The attestation verifies; each of its fields changed alone makes it fail.
        try await attestation(object)
        let appVerifier = try Fixture.verifier(policy, appID: otherApp)
        await Fixture.expect(.appIdMismatch, label) { try await attestation(object, verifier: appVerifier) }
        let environmentVerifier = try Fixture.verifier(otherPolicy, appID: scenario.appID)
        await Fixture.expect(.environmentMismatch, label) { try await attestation(object, verifier: environmentVerifier) }
        await Fixture.expect(.nonceMismatch, label) { try await attestation(object, challenge: scenario.challenge + [0]) }
        let otherKey = try KeyID(bytes: keyID.bytes.flipping(Int(random.next() % 32), mask: 0x80))
        await Fixture.expect(.keyIdMismatch, label) { try await attestation(object, keyID: otherKey) }

        let parsed = try AttestationObject(bytes: object)
        let receipt = try #require(parsed.receipt)
        let receiptPayload = try ReceiptContainer(berEncoded: receipt).content
        #expect(receiptPayload.count > ReceiptSignerChunk.size, "\(label): the payload straddles the chunks")
        let regions = [
            ("authData", try #require(object.offsets(of: parsed.authenticatorData.bytes))),
            ("credential certificate", try #require(object.offsets(of: parsed.certificates[0]))),
            ("receipt payload", try #require(object.offsets(of: receiptPayload.prefix(ReceiptSignerChunk.size)))),
        ]
        for (name, region) in regions {
            let changed = object.flipping(Self.offset(in: region, &random), mask: Self.mask(&random))
            _ = await Fixture.rejection("\(label): \(name)") { try await attestation(changed) }
        }

        // An assertion from a random stored counter verifies; each field changed alone makes it fail.
        try device.setCounter(scenario.counter, for: keyID)
        let assertion = try device.generateAssertion(
            keyID, clientDataHash: Array(SHA256.hash(data: scenario.clientData)))
        let publicKey = try #require(device.publicKey(for: keyID))
        func assertionCounter(
            _ bytes: [UInt8], appID: AppID = scenario.appID, clientData: [UInt8] = scenario.clientData,
            previous: UInt32 = scenario.counter
        ) throws -> UInt32 {
            try AssertionVerifier().verify(
                bytes, publicKey: publicKey, appID: appID, clientData: .clientData(clientData),
                previousCounter: previous
            ).counter
        }
        #expect(try assertionCounter(assertion) == scenario.counter + 1, "\(label)")
        await Fixture.expect(.counterNotIncreasing, label) {
            _ = try assertionCounter(assertion, previous: scenario.counter + 1)
        }
        await Fixture.expect(.appIdMismatch, label) { _ = try assertionCounter(assertion, appID: otherApp) }
        await Fixture.expect(.signatureInvalid, label) {
            _ = try assertionCounter(assertion, clientData: scenario.clientData + [1])
        }
        let parts = try AssertionObject(bytes: assertion)
        for (name, part) in [("signature", parts.signature), ("authenticatorData", parts.authenticatorData.bytes)] {
            let region = try #require(assertion.offsets(of: part))
            let changed = assertion.flipping(Self.offset(in: region, &random), mask: Self.mask(&random))
            _ = await Fixture.rejection("\(label): \(name)") { _ = try assertionCounter(changed) }
        }

        // A refreshed receipt verifies, and fails once any byte of its payload changes.
        let refreshed = try device.refreshReceipt(
            for: keyID, riskMetric: Int(random.next() % 100), at: scenario.time.addingTimeInterval(60))
        let receipts = ReceiptVerifier(anchor: Fixture.apple.trustAnchors.receipt)
        let verified = try await receipts.verify(
            refreshed, appID: scenario.appID, keyID: keyID, expectedType: .receipt, environment: scenario.environment,
            maximumAge: nil, at: scenario.time)
        #expect(verified.riskMetric != nil)
        let payload = try #require(
            refreshed.offsets(of: try ReceiptContainer(berEncoded: refreshed).content.prefix(ReceiptSignerChunk.size)))
        let changed = refreshed.flipping(Self.offset(in: payload, &random), mask: Self.mask(&random))
        _ = await Fixture.rejection("\(label): refreshed receipt") {
            _ = try await receipts.verify(
                changed, appID: scenario.appID, keyID: keyID, maximumAge: nil, at: scenario.time)
        }
    }

    private static func offset(in region: Range<Int>, _ random: inout SplitMix64) -> Int {
        region.lowerBound + Int(random.next() % UInt64(region.count))
    }

    private static func mask(_ random: inout SplitMix64) -> UInt8 { UInt8(1 + random.next() % 255) }
}

/// Apple's receipt chunk size: the first chunk of a receipt's eContent holds this many payload bytes, contiguous.
enum ReceiptSignerChunk {
    static let size = 1000
}
