import AttestKit
import AttestKitConformance
import AttestKitTesting
import Crypto
import Foundation
import Testing

/// The conformance runner (what `attestkit verify` runs) on simulated vectors: what it reports of an assertion's
/// iOS 27 data, and a vector it cannot read.
@Suite struct ConformanceRunnerTests {
    let runner = ConformanceRunner(anchors: Fixture.apple.trustAnchors)

    /// A key attested before iOS 27 (no extension map), asserting after the update to iOS 27 (build "2", category
    /// 4), as a vector; `registered` is what the vector says the attestation reported.
    static func assertionAfterTheUpdate(registered: SimulatedVector.Reported?) throws -> SimulatedVector {
        let (device, keyID, _) = try Fixture.attested(iOS27: false)
        var configuration = device.configuration
        configuration.iOS27Extensions = true
        configuration.bundleVersion = "2"
        configuration.validationCategory = 4
        let updated = device.updated(to: configuration)
        let clientData = Array(#"{"action":"pay"}"#.utf8)
        let object = try updated.generateAssertion(keyID, clientDataHash: Array(SHA256.hash(data: clientData)))
        var vector = SimulatedVector.assertion(
            object, device: updated, keyID: keyID, clientData: clientData, previousCounter: 0, fault: nil)
        vector.registered = registered
        return vector
    }

    /// An assertion's map is believed only for a key whose attestation carried one (docs/apple-formats.md §3a):
    /// the runner reports none for a key registered without one, or whose registration the vector does not state.
    @Test(arguments: [nil, SimulatedVector.Reported()] as [SimulatedVector.Reported?])
    func anAssertionsMapIsNotReportedForAKeyAttestedWithoutOne(registered: SimulatedVector.Reported?) async throws {
        let vector = try Self.assertionAfterTheUpdate(registered: registered)
        let outcome = await runner.evaluate(line: try vector.jsonLine())
        #expect(outcome.outcome == .valid, "\(outcome.code ?? "-"): \(outcome.reason ?? "")")
        #expect(outcome.bundleVersion == nil)
        #expect(outcome.validationCategory == nil)
    }

    @Test func anAssertionsMapIsReportedForAKeyAttestedWithOne() async throws {
        let vector = try Self.assertionAfterTheUpdate(
            registered: SimulatedVector.Reported(bundleVersion: "1", validationCategory: 1))
        let outcome = await runner.evaluate(line: try vector.jsonLine())
        #expect(outcome.outcome == .valid, "\(outcome.code ?? "-"): \(outcome.reason ?? "")")
        #expect(outcome.bundleVersion == "2")
        #expect(outcome.validationCategory == 4)
    }

    /// The policy vectors state what the verifier must read: an assertion of a key registered without a map reports
    /// none, whatever map it carries (`category-change-unreported-to-app-store`).
    @Test func policyVectorsReportAnAssertionsMapOnlyForAKeyRegisteredWithOne() async throws {
        let generated = try PolicyVectors.generate()
        let assertions = generated.vectors.filter { $0.kind == "assertion" }
        #expect(!assertions.isEmpty)
        var unregistered = 0
        for vector in assertions {
            let registeredMap = vector.registered?.bundleVersion != nil || vector.registered?.validationCategory != nil
            if !registeredMap {
                unregistered += 1
                #expect(vector.reported?.bundleVersion == nil, "\(vector.name)")
                #expect(vector.reported?.validationCategory == nil, "\(vector.name)")
            }
            // And the runner, Apple's checks alone, reads what the vector states.
            var unjudged = vector
            unjudged.policy = nil
            let outcome = await runner.evaluate(line: try unjudged.jsonLine())
            #expect(outcome.bundleVersion == vector.reported?.bundleVersion, "\(vector.name)")
            #expect(outcome.validationCategory == vector.reported?.validationCategory, "\(vector.name)")
        }
        #expect(unregistered > 0)
        let name = "simulated_policy_category-change-unreported-to-app-store_assertion_change-refuse"
        let change = try #require(assertions.first { $0.name == name })
        #expect(change.reported == SimulatedVector.Reported())
    }

    /// A `verifyAt` that is not a time is a vector that cannot be read (check `format`), never "now".
    @Test(arguments: ["yesterday", "", "1776000000", "2026-04-12", "13:20:00Z"])
    func aMalformedVerificationTimeIsAFormatReject(_ verifyAt: String) async throws {
        let (device, keyID, object) = try Fixture.attested(.development)
        let attestation = SimulatedVector.attestation(
            object, device: device, keyID: keyID, clientDataHash: Fixture.clientDataHash, challenge: Fixture.challenge,
            fault: nil, at: Fixture.time)
        let receipt = SimulatedVector.receipt(
            try device.refreshReceipt(for: keyID, at: Fixture.time), device: device, keyID: keyID, fault: nil,
            at: Fixture.time)
        let clientData = Array("GET /a".utf8)
        let assertion = SimulatedVector.assertion(
            try device.generateAssertion(keyID, clientDataHash: Array(SHA256.hash(data: clientData))), device: device,
            keyID: keyID, clientData: clientData, previousCounter: 0, fault: nil)
        for var vector in [attestation, receipt, assertion] {
            // Read at its own time, the vector is valid.
            if vector.verifyAt != nil {
                #expect(await runner.evaluate(line: try vector.jsonLine()).outcome == .valid, "\(vector.kind)")
            }
            vector.verifyAt = verifyAt
            let outcome = await runner.evaluate(line: try vector.jsonLine())
            #expect(outcome.outcome == .reject, "\(vector.kind)")
            #expect(outcome.check == AttestKitError.Check.format.rawValue, "\(vector.kind)")
            #expect(outcome.code == "vector_malformed", "\(vector.kind)")
            #expect(outcome.name == vector.name)
        }
    }

    /// `verifyAt` with or without a fraction is read.
    @Test(arguments: ["2026-04-12T13:20:00Z", "2026-04-12T13:20:00.000Z", "2026-04-12T13:20:00.5Z"])
    func aWellFormedVerificationTimeIsRead(_ verifyAt: String) async throws {
        let (device, keyID, object) = try Fixture.attested(.development)
        var vector = SimulatedVector.attestation(
            object, device: device, keyID: keyID, clientDataHash: Fixture.clientDataHash, challenge: Fixture.challenge,
            fault: nil, at: Fixture.time)
        vector.verifyAt = verifyAt
        let outcome = await runner.evaluate(line: try vector.jsonLine())
        #expect(outcome.outcome == .valid, "\(outcome.code ?? "-"): \(outcome.reason ?? "")")
    }
}
