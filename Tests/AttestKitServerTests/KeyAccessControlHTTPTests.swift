import AttestKit
import AttestKitFlows
import AttestKitTesting
import Foundation
import Testing

/// The key access-control extension at the HTTP level: the registration answer shows it, and so does the operator's
/// `GET /v1/keys/{keyId}` (it is stored with the key), and `policy.macos-app-ids` refuses a key of a declared macOS App ID without
/// Apple's macOS policy with 403 `policy_key_access_control`.
@Suite struct KeyAccessControlHTTPTests {
    static func device(_ harness: ServerHarness, _ accessControl: SimulatedDevice.KeyAccessControl) -> TestDevice {
        TestDevice(
            harness,
            configuration: .init(
                appID: Fixture.appID, environment: .development, iOS27: true, keyAccessControl: accessControl))
    }

    @Test("the registration answer shows the key's access control; without the policy every shape registers",
        arguments: await StoreKind.all())
    func answer(kind: StoreKind) async throws {
        try await ServerHarness.with(kind) { harness in
            let macOSDevice = Self.device(harness, .macOS)
            let macOS = try await macOSDevice.register()
            #expect(macOS.status == 201, "\(macOS)")
            #expect(macOS.string("keyAccessControl.policy") == "macos_full_security")
            let value = try AppAttestKeyAccessControl(policy: AppAttestKeyAccessControl.macOSFullSecurityPolicy)
            #expect(macOS.string("keyAccessControl.value") == Data(value.extensionValue).base64EncodedString())
            let iOS = try await Self.device(harness, .iOS).register()
            #expect(iOS.status == 201 && iOS.string("keyAccessControl.policy") == "other", "\(iOS)")
            let none = try await Self.device(harness, .none).register()
            #expect(none.status == 201 && !none.has("keyAccessControl"), "\(none)")
            let truncatedDevice = Self.device(harness, .extensionValue(Array(value.extensionValue.dropLast())))
            let truncated = try await truncatedDevice.register()
            #expect(truncated.status == 201 && truncated.string("keyAccessControl.policy") == "malformed")
            // Stored with the key: the operator's record shows the same, absent for a key without one.
            let record = try await harness.get(
                "/v1/keys/\(macOSDevice.keyID.pathComponent)", headers: ServerHarness.admin)
            #expect(record.status == 200 && record.string("keyAccessControl.policy") == "macos_full_security")
            #expect(record.string("keyAccessControl.value") == Data(value.extensionValue).base64EncodedString())
            let malformed = try await harness.get(
                "/v1/keys/\(truncatedDevice.keyID.pathComponent)", headers: ServerHarness.admin)
            #expect(malformed.string("keyAccessControl.policy") == "malformed", "\(malformed)")
            #expect(
                malformed.string("keyAccessControl.value")
                    == Data(value.extensionValue.dropLast()).base64EncodedString())
        }
    }

    @Test("policy.macos-app-ids: 403 policy_key_access_control unless the key carries Apple's macOS policy",
        arguments: await StoreKind.all())
    func policy(kind: StoreKind) async throws {
        var options = ServerHarness.Options()
        options.policy = DeploymentPolicy(macOSAppIDs: [Fixture.appID])
        try await ServerHarness.with(kind, options) { harness in
            let value = try AppAttestKeyAccessControl(policy: AppAttestKeyAccessControl.macOSFullSecurityPolicy)
            for accessControl: SimulatedDevice.KeyAccessControl in [
                .iOS, .none, .extensionValue(Array(value.extensionValue.dropLast())),
            ] {
                let refused = try await Self.device(harness, accessControl).register()
                #expect(refused.status == 403 && refused.errorCode == "policy_key_access_control", "\(refused)")
            }
            let accepted = try await Self.device(harness, .macOS).register()
            #expect(accepted.status == 201, "\(accepted)")
        }
    }
}
