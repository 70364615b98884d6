import AttestKit
import AttestKitFlows
import AttestKitStore
import AttestKitTesting
import AttestKitWire
import Foundation
import Testing

/// An assertion refused by the deployment's rules (its iOS 27 policy, the apps and environments still accepted)
/// replays to the same refusal: the bundle carries the rules and the key's registered iOS 27 data.
extension RecordingTests {
    /// A gate recording to `recorder`, holding assertions to `deployment` and accepting the keys of `apps`.
    static func gate(
        _ bench: FlowBench, recorder: VerificationRecorder, deployment: DeploymentPolicy, apps: [AppID]
    ) -> AssertionGate {
        AssertionGate(
            store: bench.store, recorder: recorder,
            acceptance: KeyAcceptance(appIDs: apps, environments: .development),
            policy: deployment.assertionPolicy,
            stepsUpOnValidationCategoryChange: deployment.stepsUpOnValidationCategoryChange)
    }

    @Test(
        "an assertion refused by the iOS 27 policy replays to its code; the rules recorded, not the replay's defaults",
        arguments: [
            ("2.9", UInt32(4), "policy_bundle_version"), ("2.10.1", 3, "policy_validation_category"),
            ("2.10.1", 2, "policy_validation_category_changed"),
        ])
    func assertionPolicyRefusal(version: String, category: UInt32, code: String) async throws {
        let deployment = AssertionGateTests.deployment
        let recorder = try Self.recorder(policy: deployment)
        let bench = try FlowBench()
        let gate = Self.gate(bench, recorder: recorder, deployment: deployment, apps: [FlowBench.appID])
        let device = AssertionGateTests.device(bench)
        try await bench.register(device)
        let updated = AssertionGateTests.updated(device, bundleVersion: version, category: category)
        let (assertion, binding) = try updated.assertion(
            freshness: .timestamp(milliseconds: FlowBench.milliseconds()))
        await #expect(throws: FlowError.self) {
            try await gate.verify(keyID: device.keyID, assertion: assertion, binding: binding)
        }
        let result = try await Self.expectReplay(recorder, code: code)
        #expect(result.outcome?.check == "policy")
        let bundle = result.bundle
        #expect(bundle.assertion?.key?.bundleVersion == "2.10.1" && bundle.assertion?.key?.validationCategory == 4)
        #expect(bundle.configuration.minimumBundleVersion == "2.10")
        #expect(bundle.configuration.validationCategoryChange == "refuse")
        #expect(bundle.configuration.appIds == [FlowBench.appID.description])
        // Under a policy allowing what was refused, the same recorded inputs verify: the replay applies what the
        // bundle says.
        var lenient = bundle
        lenient.configuration.minimumBundleVersion = nil
        lenient.configuration.allowedValidationCategories = nil
        lenient.configuration.validationCategoryChange = "allow"
        #expect(try await VerificationReplay.replay(lenient).outcome == nil)
        // A bundle recorded without a policy (a gate without one, or an older recorder) replays without one.
        var unrecorded = bundle
        unrecorded.configuration.validationCategoryChange = nil
        #expect(try await VerificationReplay.replay(unrecorded).outcome == nil)
        // A rule that is not one is refused, not read as a default.
        var garbled = bundle
        garbled.configuration.validationCategoryChange = "sometimes"
        let error = await #expect(throws: FlowError.self) { try await VerificationReplay.replay(garbled) }
        #expect(error?.code == .bundleInvalid)
    }

    @Test("an assertion by a key of an app or environment no longer accepted replays to its code")
    func acceptanceRefusal() async throws {
        let recorder = try Self.recorder()
        let bench = try FlowBench()
        let other = try AppID("ABCDE12345.com.example.other")
        let gate = Self.gate(bench, recorder: recorder, deployment: DeploymentPolicy(), apps: [other])
        let device = try await bench.registeredDevice()
        let (assertion, binding) = try device.assertion(freshness: .timestamp(milliseconds: FlowBench.milliseconds()))
        await #expect(throws: FlowError.self) {
            try await gate.verify(keyID: device.keyID, assertion: assertion, binding: binding)
        }
        let result = try await Self.expectReplay(recorder, code: "app_not_accepted")
        #expect(result.bundle.configuration.appIds == [other.description])
        #expect(result.bundle.configuration.environments == ["development"])
        // The recorder had no policy: none is recorded, and none replays.
        #expect(result.bundle.configuration.validationCategoryChange == nil)
        var accepted = result.bundle
        accepted.configuration.appIds = [FlowBench.appID.description]
        #expect(try await VerificationReplay.replay(accepted).outcome == nil)
        accepted.configuration.environments = ["production"]
        #expect(try await VerificationReplay.replay(accepted).outcome?.code == "environment_not_accepted")
        // Only one of the two lists is not a bundle the service writes.
        accepted.configuration.environments = nil
        let error = await #expect(throws: FlowError.self) { try await VerificationReplay.replay(accepted) }
        #expect(error?.code == .bundleInvalid)
    }
}
