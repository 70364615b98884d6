import AttestKit
import AttestKitFlows
import AttestKitStore
import AttestKitTesting
import AttestKitWire
import Crypto
import Foundation
import Testing

/// The deployment's iOS 27 rules at registration and at every assertion, through the registrar and the gate.
extension AssertionGateTests {
    /// A device of build `bundleVersion` / `category` on iOS 27 (or before, with `iOS27` false).
    static func device(
        _ bench: FlowBench, bundleVersion: String = "2.10.1", category: UInt32 = 4, iOS27: Bool = true
    ) -> FlowBench.Device {
        let device = SimulatedDevice(
            apple: FlowBench.apple,
            configuration: .init(
                appID: FlowBench.appID, environment: .development, iOS27: iOS27, bundleVersion: bundleVersion,
                validationCategory: category))
        return FlowBench.Device(device: device, keyID: device.generateKey())
    }

    /// `device` after its app was replaced by a build of `bundleVersion` / `category`.
    static func updated(_ device: FlowBench.Device, bundleVersion: String? = nil, category: UInt32? = nil)
        -> FlowBench.Device
    {
        var configuration = device.device.configuration
        configuration.bundleVersion = bundleVersion ?? configuration.bundleVersion
        configuration.validationCategory = category ?? configuration.validationCategory
        return FlowBench.Device(device: device.device.updated(to: configuration), keyID: device.keyID)
    }

    static let deployment = DeploymentPolicy(
        allowedValidationCategories: [ValidationCategory.appStore.rawValue, ValidationCategory.testFlight.rawValue],
        acceptsUnreported: true, minimumBundleVersion: "2.10")

    @Test("the same policies at registration: category, minimum bundle version, unreported devices admitted")
    func policiesAtRegistration() async throws {
        let bench = try FlowBench()
        let policy = Self.deployment.attestationPolicy
        try await bench.register(Self.device(bench), policy: policy)
        try await bench.register(Self.device(bench, iOS27: false), policy: policy)
        let refusals: [(String, UInt32, String)] = [
            ("2.9", 4, "policy_bundle_version"), ("3", 3, "policy_validation_category"),
        ]
        for (version, category, code) in refusals {
            let refused = Self.device(bench, bundleVersion: version, category: category)
            let error = await #expect(throws: FlowError.self) { try await bench.register(refused, policy: policy) }
            #expect(error?.code.rawValue == code && error?.kind == .refused)
            #expect(try await bench.store.key(refused.keyID) == nil)
        }
        // Without `unreported`, a device before iOS 27 is refused by the category list and the minimum.
        var strict = Self.deployment
        strict.acceptsUnreported = false
        let old = Self.device(bench, iOS27: false)
        let error = await #expect(throws: FlowError.self) {
            try await bench.register(old, policy: strict.attestationPolicy)
        }
        #expect(error?.code.rawValue == "policy_validation_category")
        strict.allowedValidationCategories = nil
        let older = Self.device(bench, iOS27: false)
        let versionError = await #expect(throws: FlowError.self) {
            try await bench.register(older, policy: strict.attestationPolicy)
        }
        #expect(versionError?.code.rawValue == "policy_bundle_version")
    }

    @Test(
        "at every assertion: an older build, a build with letters, another category, a category change; counter kept",
        arguments: [
            ("2.9", UInt32(4), "policy_bundle_version"), ("2.10b", 4, "policy_bundle_version"),
            ("2.10.1", 3, "policy_validation_category"), ("2.10.1", 2, "policy_validation_category_changed"),
        ])
    func policiesAtAssertion(version: String, category: UInt32, code: String) async throws {
        let bench = try FlowBench()
        let gate = AssertionGate(store: bench.store, policy: Self.deployment.assertionPolicy)
        let device = Self.device(bench)
        try await bench.register(device)
        let first = try device.assertion(freshness: .timestamp(milliseconds: FlowBench.milliseconds()))
        let accepted = try await gate.verify(keyID: device.keyID, assertion: first.assertion, binding: first.binding)
        #expect(accepted.bundleVersion == "2.10.1" && accepted.validationCategory == 4)
        let updated = Self.updated(device, bundleVersion: version, category: category)
        let challenge = try await bench.issuer.issue(purpose: .assert, keyID: device.keyID)
        let (assertion, binding) = try updated.assertion(freshness: .challenge(challenge.id.string))
        let error = await #expect(throws: FlowError.self) {
            try await gate.verify(keyID: device.keyID, assertion: assertion, binding: binding)
        }
        #expect(error?.code.rawValue == code && error?.kind == .refused && error?.kind.httpStatus == 403)
        #expect(try await bench.store.key(device.keyID)?.counter == 1)
        // Nothing was spent: a gate allowing the change (and without the other rules) accepts the same assertion.
        var allowing = DeploymentPolicy(refusesValidationCategoryChange: false)
        allowing.allowedValidationCategories = nil
        let lenient = AssertionGate(store: bench.store, policy: allowing.assertionPolicy)
        #expect(try await lenient.verify(keyID: device.keyID, assertion: assertion, binding: binding).counter == 2)
    }

    @Test("step-up on a change of category: accepted, marked, counter advanced; the answer asks for step-up")
    func categoryChangeStepsUp() async throws {
        let bench = try FlowBench()
        var deployment = Self.deployment
        deployment.validationCategoryChange = .stepUp
        #expect(!deployment.refusesValidationCategoryChange && deployment.stepsUpOnValidationCategoryChange)
        let gate = AssertionGate(
            store: bench.store, policy: deployment.assertionPolicy,
            stepsUpOnValidationCategoryChange: deployment.stepsUpOnValidationCategoryChange)
        let device = Self.device(bench)
        try await bench.register(device)
        let first = try device.assertion(freshness: .timestamp(milliseconds: FlowBench.milliseconds()))
        let same = try await gate.verify(keyID: device.keyID, assertion: first.assertion, binding: first.binding)
        #expect(!same.validationCategoryChanged)
        let sameAnswer = AssertionResponse(same, freshness: first.binding.freshness, policy: deployment.riskPolicy)
        #expect(!sameAnswer.stepUp && sameAnswer.validationCategoryChanged == nil)

        let testFlight = Self.updated(device, category: ValidationCategory.testFlight.rawValue)
        let now = FlowBench.milliseconds()
        let (assertion, binding) = try testFlight.assertion(freshness: .timestamp(milliseconds: now))
        let changed = try await gate.verify(keyID: device.keyID, assertion: assertion, binding: binding)
        #expect(changed.validationCategoryChanged && changed.validationCategory == 2 && changed.counter == 2)
        #expect(try await bench.store.key(device.keyID)?.counter == 2)
        let answer = AssertionResponse(changed, freshness: binding.freshness, policy: deployment.riskPolicy)
        #expect(answer.stepUp && answer.validationCategoryChanged == true)
        let json = String(decoding: try WireJSON.encode(answer), as: UTF8.self)
        #expect(json.contains(#""validationCategoryChanged":true"#) && json.contains(#""stepUp":true"#))
        #expect(!String(decoding: try WireJSON.encode(sameAnswer), as: UTF8.self).contains("validationCategoryChanged"))

        // The other rules still refuse: a category outside the list is not stepped up.
        let development = Self.updated(testFlight, category: ValidationCategory.development.rawValue)
        let refused = try development.assertion(freshness: .timestamp(milliseconds: FlowBench.milliseconds()))
        let error = await #expect(throws: FlowError.self) {
            try await gate.verify(keyID: device.keyID, assertion: refused.assertion, binding: refused.binding)
        }
        #expect(error?.code.rawValue == "policy_validation_category")
        // `allow` marks nothing; a gate without the flag (built by hand) neither.
        let allowing = AssertionGate(store: bench.store)
        let again = try testFlight.assertion(freshness: .timestamp(milliseconds: FlowBench.milliseconds()))
        let unmarked = try await allowing.verify(
            keyID: device.keyID, assertion: again.assertion, binding: again.binding)
        #expect(!unmarked.validationCategoryChanged)
        #expect(DeploymentPolicy(validationCategoryChange: .allow).stepsUpOnValidationCategoryChange == false)
    }

    @Test("step-up on a change of category: a key registered before iOS 27 has not changed category, none reported")
    func categoryFirstReportedIsNoStepUp() async throws {
        let bench = try FlowBench()
        let gate = AssertionGate(store: bench.store, stepsUpOnValidationCategoryChange: true)
        let device = Self.device(bench, iOS27: false)
        try await bench.register(device)
        var iOS27 = device.device.configuration
        iOS27.iOS27Extensions = true
        let updated = FlowBench.Device(device: device.device.updated(to: iOS27), keyID: device.keyID)
        let made = try updated.assertion(freshness: .timestamp(milliseconds: FlowBench.milliseconds()))
        let accepted = try await gate.verify(keyID: device.keyID, assertion: made.assertion, binding: made.binding)
        #expect(accepted.validationCategory == nil && !accepted.validationCategoryChanged)
    }

    /// Its attestation carried no map, so nothing tells the device's own map from one the app passed in its client
    /// data hash (below): the key keeps asserting, unreported, until the app attests a new key.
    @Test("a key registered before iOS 27 keeps asserting after the OS update, its map not reported")
    func categoryFirstReportedAfterUpdate() async throws {
        let bench = try FlowBench()
        let gate = AssertionGate(store: bench.store, policy: Self.deployment.assertionPolicy)
        let device = Self.device(bench, iOS27: false)
        try await bench.register(device)
        let before = try device.assertion(freshness: .timestamp(milliseconds: FlowBench.milliseconds()))
        let old = try await gate.verify(keyID: device.keyID, assertion: before.assertion, binding: before.binding)
        #expect(old.bundleVersion == nil && old.validationCategory == nil)
        var iOS27 = device.device.configuration
        iOS27.iOS27Extensions = true
        iOS27.bundleVersion = "2.10"
        iOS27.validationCategory = 4
        let updated = FlowBench.Device(device: device.device.updated(to: iOS27), keyID: device.keyID)
        let after = try updated.assertion(freshness: .timestamp(milliseconds: FlowBench.milliseconds()))
        let new = try await gate.verify(keyID: device.keyID, assertion: after.assertion, binding: after.binding)
        #expect(new.bundleVersion == nil && new.validationCategory == nil)
    }

    /// The map trails the authenticator data with no length or flag, and the device signs whatever client data hash
    /// the app gives it. On a device before iOS 27 the app can give `map ‖ hash` and send the map as the end of the
    /// authenticator data: the signature verifies over the same bytes. Such a map must never be believed.
    @Test("a map the app moved from its client data hash into the authenticator data is not believed")
    func mapOutOfTheClientDataHash() async throws {
        let bench = try FlowBench()
        let device = Self.device(bench, iOS27: false)
        try await bench.register(device)
        let binding = try RequestBinding(
            method: "POST", target: "/orders", body: Array("{}".utf8),
            freshness: .timestamp(milliseconds: FlowBench.milliseconds()))
        // {"apple_bundle_version_01": "999", "apple_validation_category_01": h'04000000'}
        let map: [UInt8] =
            [0xA2, 0x77] + Array("apple_bundle_version_01".utf8) + [0x63] + Array("999".utf8) + [0x78, 0x1C]
            + Array("apple_validation_category_01".utf8) + [0x44, 0x04, 0x00, 0x00, 0x00]
        let signed = try device.device.generateAssertion(device.keyID, clientDataHash: map + binding.clientDataHash)
        let object = try AssertionObject(bytes: signed)
        let authenticatorData = Array(object.authenticatorData.bytes)
        #expect(authenticatorData.count == 37, "a device before iOS 27 writes no map")
        // The same signature, with the map moved to the end of the authenticator data.
        let original: [UInt8] = [0x58, UInt8(authenticatorData.count)] + authenticatorData
        let moved: [UInt8] = [0x58, UInt8(authenticatorData.count + map.count)] + authenticatorData + map
        let start = try #require(
            (0...(signed.count - original.count)).first { Array(signed[$0..<$0 + original.count]) == original })
        let forged = Array(signed[..<start]) + moved + Array(signed[(start + original.count)...])

        // The signature verifies over the moved bytes: the verifier alone reads the map.
        let verifier = AssertionVerifier()
        let record = try #require(try await bench.store.key(device.keyID))
        let raw = try verifier.verify(
            forged, publicKeyX963: record.publicKeyX963, appID: record.appID,
            clientData: .clientDataHash(binding.clientDataHash), previousCounter: record.counter)
        #expect(raw.validationCategory == 4 && raw.bundleVersion == "999")
        // The gate knows the key was attested without one: nothing is reported, and a deployment that requires a
        // category refuses the key.
        let gate = AssertionGate(store: bench.store, policy: Self.deployment.assertionPolicy)
        let accepted = try await gate.verify(
            keyID: device.keyID, assertion: forged, binding: try AssertionBinding(binding))
        #expect(accepted.bundleVersion == nil && accepted.validationCategory == nil)
        let strict = AssertionGate(
            store: bench.store,
            policy: DeploymentPolicy(allowedValidationCategories: [ValidationCategory.appStore.rawValue])
                .assertionPolicy)
        let again = try device.assertion(freshness: .timestamp(milliseconds: FlowBench.milliseconds()))
        let refused = await #expect(throws: FlowError.self) {
            try await strict.verify(keyID: device.keyID, assertion: again.assertion, binding: again.binding)
        }
        #expect(refused?.code.rawValue == "policy_validation_category")
    }

    @Test("a malformed iOS 27 map in a signed assertion: 400 authenticator_data_malformed, counter kept")
    func malformedMap() async throws {
        let bench = try FlowBench()
        let gate = AssertionGate(store: bench.store, policy: Self.deployment.assertionPolicy)
        let device = Self.device(bench)
        try await bench.register(device)
        let made = try device.assertion(freshness: .timestamp(milliseconds: FlowBench.milliseconds()))
        var assertion = made.assertion
        let binding = made.binding
        // The category's byte string header (0x44, 4 bytes) made a text string of the same length.
        let key = Array("apple_validation_category_01".utf8)
        let start = try #require(
            (0...(assertion.count - key.count)).first { Array(assertion[$0..<($0 + key.count)]) == key })
        #expect(assertion[start + key.count] == 0x44)
        assertion[start + key.count] = 0x64
        let error = await #expect(throws: FlowError.self) {
            try await gate.verify(keyID: device.keyID, assertion: assertion, binding: binding)
        }
        #expect(error?.code.rawValue == "authenticator_data_malformed" && error?.kind == .malformed)
        #expect(try await bench.store.key(device.keyID)?.counter == 0)
    }

    @Test("bad minimum bundle versions are refused by the configuration")
    func configurationRefusals() throws {
        for minimum in ["2.10b", "", "1..2", "v2"] {
            var configuration = AttestKitApplication.Configuration(
                appIDs: [FlowBench.appID], environments: .development, trustAnchors: FlowBench.apple.trustAnchors)
            configuration.policy.minimumBundleVersion = minimum
            #expect(throws: ConfigurationError.self) { try configuration.validate() }
        }
    }
}
