import AttestKit
import AttestKitTesting
import Foundation
import Testing

/// The key access-control extension through `AttestationVerifier`: exposed on the verified attestation (present,
/// absent, malformed), never a refusal by itself, and `MacOSKeyAccessControlPolicy` for the App IDs it covers.
@Suite struct KeyAccessControlVerificationTests {
    static func attested(_ accessControl: SimulatedDevice.KeyAccessControl, iOS27: Bool = true) throws
        -> (keyID: KeyID, object: [UInt8])
    {
        let device = SimulatedDevice(
            apple: Fixture.apple,
            configuration: .init(
                appID: Fixture.appID, environment: .production, iOS27: iOS27, keyAccessControl: accessControl))
        let keyID = device.generateKey()
        return (keyID, try device.attestKey(keyID, clientDataHash: Fixture.clientDataHash, at: Fixture.time))
    }

    static func verify(
        _ attested: (keyID: KeyID, object: [UInt8]), macOSAppIDs: Set<AppID>? = nil
    ) async throws -> VerifiedAttestation {
        var verifier = try Fixture.verifier()
        if let macOSAppIDs { verifier = verifier.appending(MacOSKeyAccessControlPolicy(appIDs: macOSAppIDs)) }
        return try await verifier.verify(
            attested.object, keyID: attested.keyID, clientData: .clientDataHash(Fixture.clientDataHash),
            at: Fixture.time)
    }

    /// The extension value of Apple's macOS policy.
    static func macOSValue() throws -> [UInt8] {
        try AppAttestKeyAccessControl(policy: AppAttestKeyAccessControl.macOSFullSecurityPolicy).extensionValue
    }

    @Test("a macOS key exposes Apple's macOS policy; an iOS 27 key iOS's; a pre-2026 key none")
    func exposed() async throws {
        let macOS = try await Self.verify(try Self.attested(.macOS))
        #expect(macOS.keyAccessControl.accessControl?.isMacOSFullSecurityPolicy == true)
        #expect(macOS.keyAccessControl.accessControl?.policy == AppAttestKeyAccessControl.macOSFullSecurityPolicy)
        let iOS = try await Self.verify(try Self.attested(.iOS))
        #expect(iOS.keyAccessControl.accessControl?.policy == SimulatedDevice.KeyAccessControl.iOSPolicy)
        #expect(iOS.keyAccessControl.accessControl?.isMacOSFullSecurityPolicy == false)
        // iOS 27 devices carry iOS's policy by default, older ones none.
        let defaultIOS27 = try await Self.verify(try AttestationPolicyTests.attested())
        #expect(defaultIOS27.keyAccessControl.accessControl?.policy == SimulatedDevice.KeyAccessControl.iOSPolicy)
        let old = try Fixture.attested()
        let absent = try await Self.verify((old.keyID, old.object))
        #expect(absent.keyAccessControl == .absent)
    }

    @Test("every truncated extension is exposed as malformed, and verifies without the policy")
    func truncatedExtensions() async throws {
        let value = try Self.macOSValue()
        for length in 0..<value.count {
            let verified = try await Self.verify(try Self.attested(.extensionValue(Array(value.prefix(length)))))
            #expect(verified.keyAccessControl == .malformed(extensionValue: Array(value.prefix(length))), "\(length)")
        }
    }

    @Test("the macOS policy: a key of a macOS App ID needs Apple's macOS policy; other App IDs are not checked")
    func macOSPolicy() async throws {
        let macOSApps: Set<AppID> = [Fixture.appID]
        let met = try await Self.verify(try Self.attested(.macOS), macOSAppIDs: macOSApps)
        #expect(met.keyAccessControl.accessControl?.isMacOSFullSecurityPolicy == true)
        let value = try Self.macOSValue()
        let refused: [(String, SimulatedDevice.KeyAccessControl)] = [
            ("iOS's policy", .iOS), ("no extension", .none),
            ("another well-formed policy", .policy(Array(SimulatedDevice.KeyAccessControl.iOSPolicy))),
            ("a truncated extension", .extensionValue(Array(value.dropLast()))),
            ("one flipped bit", .extensionValue(value.enumerated().map { $0.offset == 20 ? $0.element ^ 1 : $0.element })),
        ]
        for (name, accessControl) in refused {
            let attested = try Self.attested(accessControl)
            await Fixture.expect(.policyKeyAccessControl, name) {
                _ = try await Self.verify(attested, macOSAppIDs: macOSApps)
            }
            // The same key of an App ID the deployment does not declare macOS passes.
            let other = try AppID("ABCDE12345.com.example.mac")
            _ = try await Self.verify(attested, macOSAppIDs: [other])
        }
    }

    @Test("the policy's refusal names what it found, and is a policy error")
    func refusalReason() async throws {
        let error = await Fixture.rejection {
            _ = try await Self.verify(try Self.attested(.none, iOS27: false), macOSAppIDs: [Fixture.appID])
        }
        #expect(error?.code.rawValue == "policy_key_access_control")
        #expect(error?.check == .policy)
        #expect(error?.reason.contains("no access-control extension") == true)
    }
}
