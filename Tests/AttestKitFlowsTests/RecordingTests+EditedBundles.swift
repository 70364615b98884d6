import AttestKit
import AttestKitFlows
import Foundation
import Testing

extension RecordingTests {
    @Test("an edited bundle the service could never have written is bundle_invalid, never a verdict")
    func editedBundles() async throws {
        let recorder = try Self.recorder()
        let bench = try FlowBench(recorder: recorder)
        let stranger = bench.device(appID: try AppID("ZZZZZ99999.com.example.app"))
        await #expect(throws: FlowError.self) { try await bench.register(stranger) }
        let recorded = try await Self.expectReplay(recorder, code: "app_id_mismatch").bundle
        var fixed = recorded
        fixed.configuration.appIds = ["ZZZZZ99999.com.example.app"]
        #expect(try await VerificationReplay.replay(fixed).outcome == nil)

        func expectInvalid(_ bundle: VerificationBundle, _ comment: Comment) async {
            let error = await #expect(throws: FlowError.self, comment) { try await VerificationReplay.replay(bundle) }
            #expect(error?.code == .bundleInvalid, comment)
        }
        // Production keys allowed beside the software Apple's roots: the service refuses to start so, and a replay
        // would let the bundle's own roots vouch for whatever chain it carries.
        for environments in [["production"], ["production", "development"]] {
            var edited = fixed
            edited.configuration.environments = environments
            await expectInvalid(edited, "\(environments)")
        }
        // A minimum OS or bundle version the service would refuse to start with: not a rule quietly dropped.
        var typo = fixed
        typo.configuration.minimumOSVersion = "17,4"
        await expectInvalid(typo, "minimum OS version")
        typo = fixed
        typo.configuration.minimumBundleVersion = "1..2"
        await expectInvalid(typo, "minimum bundle version")
        var raised = fixed
        raised.configuration.minimumOSVersion = "99.0"
        #expect(try await VerificationReplay.replay(raised).outcome?.code == "policy_os_version")
        // An app key the service could not have read (it records only keys it parsed).
        var appKey = fixed
        appKey.attestation?.appKey = Data("xx".utf8).base64EncodedString()
        await expectInvalid(appKey, "app key")
    }

    @Test("a minimum OS version that is not one fails closed in a policy used without the configuration's checks")
    func invalidMinimumOSVersionFailsClosed() async throws {
        let bench = try FlowBench()
        let policy = DeploymentPolicy(minimumOSVersion: "17,4")
        let error = await #expect(throws: FlowError.self) {
            try await bench.register(bench.device(osVersion: "18.0", iOS27: true), policy: policy.attestationPolicy)
        }
        #expect(error?.code.rawValue == "policy_os_version")
        // A valid minimum the device meets still admits it.
        try await bench.register(
            bench.device(osVersion: "18.0", iOS27: true),
            policy: DeploymentPolicy(minimumOSVersion: "17.4").attestationPolicy)
    }
}
