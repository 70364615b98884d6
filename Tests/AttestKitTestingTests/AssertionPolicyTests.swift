import AttestKit
import AttestKitTesting
import Crypto
import Foundation
import Testing

/// iOS 27 data at every assertion: the software Apple signs the same extension map into assertions as into
/// attestations, `VerifiedAssertion` exposes it, and the iOS 27 policies decide on it as they do at registration.
@Suite struct AssertionPolicyTests {
    /// A device of build `bundleVersion` / `category` (iOS 27 unless `iOS27` is false), its key attested and verified.
    static func attested(
        bundleVersion: String = "2.10.1", category: UInt32 = 4, iOS27: Bool = true
    ) async throws -> (device: SimulatedDevice, keyID: KeyID, attestation: VerifiedAttestation) {
        let device = SimulatedDevice(
            apple: Fixture.apple,
            configuration: .init(
                appID: Fixture.appID, environment: .production, iOS27: iOS27, bundleVersion: bundleVersion,
                validationCategory: category))
        let keyID = device.generateKey()
        let object = try device.attestKey(keyID, clientDataHash: Fixture.clientDataHash, at: Fixture.time)
        let attestation = try await Fixture.verifier().verify(
            object, keyID: keyID, clientData: .clientDataHash(Fixture.clientDataHash), at: Fixture.time)
        return (device, keyID, attestation)
    }

    /// The next assertion of `device`'s key, verified.
    static func assert(_ device: SimulatedDevice, _ keyID: KeyID, after counter: UInt32 = 0) throws -> VerifiedAssertion
    {
        let clientDataHash = Array(SHA256.hash(data: Array("a request".utf8)))
        let assertion = try device.generateAssertion(keyID, clientDataHash: clientDataHash)
        let publicKey = try #require(device.publicKey(for: keyID))
        return try AssertionVerifier().verify(
            assertion, publicKey: publicKey, appID: Fixture.appID, clientData: .clientDataHash(clientDataHash),
            previousCounter: counter)
    }

    @Test("the software Apple signs the attestation's extension map into every assertion; none before iOS 27")
    func assertionsCarryTheMap() async throws {
        let (device, keyID, attestation) = try await Self.attested()
        let assertion = try Self.assert(device, keyID)
        #expect(attestation.bundleVersion == "2.10.1" && attestation.validationCategory == 4)
        #expect(assertion.bundleVersion == "2.10.1" && assertion.validationCategory == 4)
        #expect(assertion.authenticatorData.extensions == attestation.authenticatorData.extensions)
        // The map follows the 37-byte header, flags as Apple's sample (ED clear).
        #expect(assertion.authenticatorData.bytes.count > 37)
        #expect(assertion.authenticatorData.flags.rawValue == 0x40)
        let (old, oldKey, oldAttestation) = try await Self.attested(iOS27: false)
        let oldAssertion = try Self.assert(old, oldKey)
        #expect(oldAttestation.authenticatorData.extensions == nil)
        #expect(oldAssertion.authenticatorData.extensions == nil && oldAssertion.authenticatorData.bytes.count == 37)
        #expect(oldAssertion.bundleVersion == nil && oldAssertion.validationCategory == nil)
    }

    @Assertions var policy: some AssertionPolicy {
        ValidationCategoryPolicy(allowed: [ValidationCategory.appStore.rawValue], allowsUnreported: true)
        if let minimum = BundleVersion("2.10") { MinimumBundleVersionPolicy(minimum, allowsUnreported: true) }
        ValidationCategoryChangePolicy()
    }

    @Test("the same policies at every assertion: category, minimum bundle version, category change, in order")
    func policiesAtAssertion() async throws {
        let (device, keyID, attestation) = try await Self.attested()
        let registered = RegisteredKey(
            bundleVersion: attestation.bundleVersion, validationCategory: attestation.validationCategory)
        #expect(policy.check(try Self.assert(device, keyID), of: registered) == .meetsPolicy)
        // The app updated to an older build (a downgrade), then re-signed for development, then TestFlight.
        let cases: [(String, UInt32, String)] = [
            ("2.9", 4, "policy_bundle_version"), ("2.10.1b", 4, "policy_bundle_version"),
            ("3.0", 3, "policy_validation_category"),
        ]
        var counter: UInt32 = 1
        var current = device
        for (version, category, code) in cases {
            var configuration = current.configuration
            configuration.bundleVersion = version
            configuration.validationCategory = category
            current = current.updated(to: configuration)
            let assertion = try Self.assert(current, keyID, after: counter)
            counter = assertion.counter
            guard case .failsToMeetPolicy(let reason) = policy.check(assertion, of: registered) else {
                Issue.record("\(version) / \(category) met the policy")
                continue
            }
            #expect(reason.code.rawValue == code, "\(version) / \(category): \(reason)")
        }
        // A category the list allows, but not the key's: the change policy refuses it.
        let changed = ValidationCategoryPolicy(allowed: [2, 4])
        var testFlight = device.configuration
        testFlight.validationCategory = 2
        let assertion = try Self.assert(current.updated(to: testFlight), keyID, after: counter)
        #expect(changed.check(assertion, of: registered) == .meetsPolicy)
        guard case .failsToMeetPolicy(let reason) = ValidationCategoryChangePolicy().check(assertion, of: registered)
        else {
            Issue.record("a change of category passed")
            return
        }
        #expect(reason.code == .policyValidationCategoryChanged)
        #expect(reason.reason.contains("app-store (4)") && reason.reason.contains("testflight (2)"))
        // What a step-up deployment asks: changed exactly where the policy refuses.
        #expect(ValidationCategoryChangePolicy.changed(assertion, of: registered))
        let same = try Self.assert(current.updated(to: device.configuration), keyID, after: counter)
        #expect(!ValidationCategoryChangePolicy.changed(same, of: registered))
    }

    @Test("a key registered before iOS 27 that reports a category after an update has not changed category")
    func categoryFirstReported() async throws {
        let (device, keyID, attestation) = try await Self.attested(iOS27: false)
        let registered = RegisteredKey(bundleVersion: nil, validationCategory: attestation.validationCategory)
        #expect(registered.validationCategory == nil)
        var iOS27 = device.configuration
        iOS27.iOS27Extensions = true
        let assertion = try Self.assert(device.updated(to: iOS27), keyID)
        #expect(assertion.validationCategory == 4)
        #expect(ValidationCategoryChangePolicy().check(assertion, of: registered) == .meetsPolicy)
        // The other way round (registered with a category, asserting with none) is a change.
        let withCategory = RegisteredKey(bundleVersion: "1", validationCategory: 4)
        let none = try Self.assert(device, keyID)
        #expect(ValidationCategoryChangePolicy().check(none, of: withCategory) != .meetsPolicy)
        #expect(!ValidationCategoryChangePolicy.changed(assertion, of: registered))
        #expect(ValidationCategoryChangePolicy.changed(none, of: withCategory))
        // Unreported devices meet the lenient policies, and fail the strict ones.
        #expect(policy.check(none, of: RegisteredKey(bundleVersion: nil, validationCategory: nil)) == .meetsPolicy)
        #expect(ValidationCategoryPolicy(allowed: [4]).check(none, of: withCategory) != .meetsPolicy)
        let one = try #require(BundleVersion("1"))
        #expect(MinimumBundleVersionPolicy(one).check(none, of: withCategory) != .meetsPolicy)
    }

    @Test("an empty builder accepts every assertion")
    func emptyBuilder() async throws {
        let (device, keyID, _) = try await Self.attested()
        @Assertions var none: some AssertionPolicy {}
        let key = RegisteredKey(bundleVersion: nil, validationCategory: 9)
        #expect(none.check(try Self.assert(device, keyID), of: key) == .meetsPolicy)
    }
}

/// Shorter to write in tests.
typealias Assertions = AssertionPolicyBuilder
