import AttestKit
import AttestKitFlows
import AttestKitStore
import AttestKitTesting
import Crypto
import Foundation
import Testing

/// An attest challenge issued for an app (the one the attestation ramp admitted it for, or the one the request
/// named) registers that app's attestation only, without HTTP: another app's is 403 `challenge_app_mismatch` once it
/// verified, nothing is stored, and the refusal is recorded with the challenge's app and replays to its code.
@Suite("Attest challenges bound to an app")
struct ChallengeAppTests {
    static let otherApp: AppID = {
        do { return try AppID("ABCDE12345.com.example.other") } catch { preconditionFailure("\(error)") }
    }()

    /// Registers a new key of a new device of the bench's app over `challenge`.
    static func register(
        _ bench: FlowBench, _ challenge: StoredChallenge
    ) async throws(FlowError) -> AttestationRegistrar.Registered {
        let device = bench.device()
        let attestation: [UInt8]
        do {
            attestation = try device.device.attestKey(
                device.keyID, clientDataHash: Array(SHA256.hash(data: challenge.bytes)))
        } catch {
            throw FlowError(.internalError, .internalFailure, "the simulated device failed: \(error)")
        }
        return try await bench.registrar().registerVerified(
            keyID: device.keyID, attestation: attestation, challengeID: challenge.id, now: Date())
    }

    @Test("an assert challenge cannot be bound to an app: an assertion answers to its key's app, not a challenge's")
    func assertChallengeWithApp() async throws {
        let bench = try FlowBench()
        let device = try await bench.registeredDevice()
        let refusal = await #expect(throws: FlowError.self) {
            _ = try await bench.issuer.issue(purpose: .assert, keyID: device.keyID, appID: Self.otherApp)
        }
        #expect(refusal?.code.rawValue == "invalid_field" && refusal?.kind == .malformed)
        #expect(try await bench.issuer.issue(purpose: .assert, keyID: device.keyID).rpIDHash == nil)
    }

    @Test("a challenge for another app refuses the attestation after it verified; one for the app registers it")
    func bound() async throws {
        let bench = try FlowBench()
        let forOther = try await bench.issuer.issue(purpose: .attest, appID: Self.otherApp)
        #expect(forOther.rpIDHash == Self.otherApp.rpIDHash)
        let refusal = await #expect(throws: FlowError.self) { _ = try await Self.register(bench, forOther) }
        #expect(refusal?.code == .challengeAppMismatch && refusal?.kind == .refused)
        #expect(try await bench.store.keyCounts().total == 0)
        // The challenge is spent all the same.
        let again = await #expect(throws: FlowError.self) { _ = try await Self.register(bench, forOther) }
        #expect(again?.code.rawValue == "challenge_consumed")

        let forOwn = try await bench.issuer.issue(purpose: .attest, appID: FlowBench.appID)
        let registered = try await Self.register(bench, forOwn)
        #expect(registered.record.appID == FlowBench.appID)
        let unbound = try await bench.issuer.issue(purpose: .attest)
        #expect(unbound.rpIDHash == nil)
        _ = try await Self.register(bench, unbound)
    }

    @Test("the refusal is recorded with the challenge's app and replays to challenge_app_mismatch")
    func recorded() async throws {
        let recorder = try RecordingTests.recorder()
        let bench = try FlowBench(recorder: recorder)
        let forOther = try await bench.issuer.issue(purpose: .attest, appID: Self.otherApp)
        await #expect(throws: FlowError.self) { _ = try await Self.register(bench, forOther) }
        let result = try await RecordingTests.expectReplay(recorder, code: "challenge_app_mismatch")
        #expect(result.bundle.attestation?.challengeApp == Data(Self.otherApp.rpIDHash).base64EncodedString())
        // Refused once the attestation verified (only a genuine device gets there): the known quota, which garbage
        // cannot flush.
        #expect(VerificationRecorder.Quota(of: result.bundle) == .known)
        #expect(await recorder.bundleNames().allSatisfy { !$0.hasSuffix("-unknown.json") })
        // A bundle whose challenge app is not 32 bytes cannot be replayed.
        var damaged = result.bundle
        damaged.attestation?.challengeApp = Data([1, 2, 3]).base64EncodedString()
        let invalid = await #expect(throws: FlowError.self) { _ = try await VerificationReplay.replay(damaged) }
        #expect(invalid?.code.rawValue == "bundle_invalid")
    }
}
