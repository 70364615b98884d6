import AttestKit
import AttestKitFlows
import AttestKitServer
import AttestKitStore
import AttestKitTesting
import AttestKitWire
import Crypto
import Foundation
import NIOHTTP1
import Testing

/// Refused attestations and challenges, each with its status and code.
@Suite("Attestation errors")
struct AttestationErrorTests {
    @Test(
        "challenges: not found, expired, consumed, wrong purpose, bound to another key",
        arguments: await StoreKind.all())
    func challenges(kind: StoreKind) async throws {
        try await ServerHarness.with(kind) { harness in
            // Not found: well formed, never issued.
            let stranger = TestDevice(harness)
            let unknown = try await harness.post(
                "/v1/attestations", stranger.attestationBody([0xA0], challengeID: "AAAAAAAAAAAAAAAAAAAAAA"))
            #expect(unknown.status == 403 && unknown.errorCode == "challenge_not_found", "\(unknown)")

            // Expired: the clock passes the five-minute lifetime.
            let expiring = try await harness.challenge()
            let late = TestDevice(harness)
            let object = try late.attestation(for: expiring)
            harness.clock.advance(by: 301)
            let expired = try await harness.post(
                "/v1/attestations", late.attestationBody(object, challengeID: expiring.id))
            #expect(expired.status == 403 && expired.errorCode == "challenge_expired", "\(expired)")

            // Consumed: one challenge, two keys.
            let challenge = try await harness.challenge()
            let first = TestDevice(harness)
            let accepted = try await harness.post(
                "/v1/attestations",
                first.attestationBody(try first.attestation(for: challenge), challengeID: challenge.id))
            #expect(accepted.status == 201, "\(accepted)")
            let second = TestDevice(harness)
            let consumed = try await harness.post(
                "/v1/attestations",
                second.attestationBody(try second.attestation(for: challenge), challengeID: challenge.id))
            #expect(consumed.status == 409 && consumed.errorCode == "challenge_consumed", "\(consumed)")

            // Purpose: an assert challenge for an attestation, an attest challenge for an assertion.
            let assertChallenge = try await harness.challenge(purpose: "assert")
            let third = TestDevice(harness)
            let purpose = try await harness.post(
                "/v1/attestations",
                third.attestationBody(try third.attestation(for: assertChallenge), challengeID: assertChallenge.id))
            #expect(purpose.status == 403 && purpose.errorCode == "challenge_purpose_mismatch", "\(purpose)")
            let attestChallenge = try await harness.challenge()
            let wrongPurpose = try await first.verify(try first.verifyBody(freshness: .challenge(attestChallenge.id)))
            #expect(
                wrongPurpose.status == 403 && wrongPurpose.errorCode == "challenge_purpose_mismatch", "\(wrongPurpose)")

            // Key binding: a challenge bound to one key, used by another.
            let other = try await TestDevice.registered(harness)
            let bound = try await harness.challenge(purpose: "assert", keyID: other.keyID)
            let mismatch = try await first.verify(try first.verifyBody(freshness: .challenge(bound.id)))
            #expect(mismatch.status == 403 && mismatch.errorCode == "challenge_key_mismatch", "\(mismatch)")
            // An assertion's challenge expires too.
            let assertExpiring = try await harness.challenge(purpose: "assert", keyID: first.keyID)
            harness.clock.advance(by: 301)
            let stale = try await first.verify(try first.verifyBody(freshness: .challenge(assertExpiring.id)))
            #expect(stale.status == 403 && stale.errorCode == "challenge_expired", "\(stale)")
        }
    }

    @Test("re-registering a key is 409 key_exists, once the attestation verified", arguments: await StoreKind.all())
    func keyExists(kind: StoreKind) async throws {
        try await ServerHarness.with(kind) { harness in
            let device = TestDevice(harness)
            // Two genuine later attestations of the same key (the simulator attests a key once per device).
            let (twin, revokedTwin) = (try device.twin(), try device.twin())
            let challenge = try await harness.challenge()
            let first = try await harness.post(
                "/v1/attestations",
                device.attestationBody(try device.attestation(for: challenge), challengeID: challenge.id))
            #expect(first.status == 201, "\(first)")
            let again = try await harness.challenge()
            let duplicate = try await harness.post(
                "/v1/attestations", twin.attestationBody(try twin.attestation(for: again), challengeID: again.id))
            #expect(duplicate.status == 409 && duplicate.errorCode == "key_exists", "\(duplicate)")
            // Revoked keys stay registered.
            _ = try await harness.post(
                "/v1/keys/\(device.keyID.pathComponent)/revoke", .raw(""), headers: ServerHarness.admin)
            let third = try await harness.challenge()
            let revoked = try await harness.post(
                "/v1/attestations",
                revokedTwin.attestationBody(try revokedTwin.attestation(for: third), challengeID: third.id))
            #expect(revoked.status == 409 && revoked.errorCode == "key_exists", "\(revoked)")
        }
    }

    /// Verify first, then tell: an attestation that does not verify for a registered key id gets its verification
    /// error, exactly as for an unknown key id, never `key_exists` (which would tell anyone which keys exist).
    @Test(
        "a registered key id is no oracle: unverifiable attestations get their error", arguments: await StoreKind.all())
    func registeredKeyIsNoOracle(kind: StoreKind) async throws {
        try await ServerHarness.with(kind) { harness in
            let device = TestDevice(harness)
            let challenge = try await harness.challenge()
            let object = try device.attestation(for: challenge)
            let first = try await harness.post(
                "/v1/attestations", device.attestationBody(object, challengeID: challenge.id))
            try #require(first.status == 201, "\(first)")
            let stranger = try TestDevice(harness).attestation(for: try await harness.challenge())
            let neverRegistered = TestDevice(harness).keyID
            func post(_ bytes: [UInt8], as keyID: KeyID) async throws -> HTTPResult {
                let fresh = try await harness.challenge()
                return try await harness.post(
                    "/v1/attestations",
                    ["keyId": .string(keyID.base64), "attestation": .base64(bytes), "challengeId": .string(fresh.id)])
            }
            // The same answer for a registered and a never registered key id.
            for (bytes, code) in [
                (Array("definitely not an attestation".utf8), "cbor_malformed"), (stranger, "key_id_mismatch"),
            ] {
                let registered = try await post(bytes, as: device.keyID)
                let unregistered = try await post(bytes, as: neverRegistered)
                #expect(registered.status != 409 && registered.errorCode == code, "\(registered)")
                #expect(registered.status == unregistered.status && unregistered.errorCode == code, "\(unregistered)")
            }
            // The registered key's own object under a new challenge: it does not verify, so nothing is told.
            let replayed = try await post(object, as: device.keyID)
            #expect(replayed.status == 403 && replayed.errorCode == "nonce_mismatch", "\(replayed)")
        }
    }

    @Test(
        "verification failures: another app, another environment, another challenge, forged objects",
        arguments: await StoreKind.all())
    func verification(kind: StoreKind) async throws {
        try await ServerHarness.with(kind) { harness in
            let otherApp = try await TestDevice(
                harness, configuration: .init(appID: Fixture.otherAppID, environment: .development)
            ).register()
            #expect(otherApp.status == 403 && otherApp.errorCode == "app_id_mismatch", "\(otherApp)")

            let production = try await TestDevice(
                harness, configuration: .init(appID: Fixture.appID, environment: .production)
            ).register()
            #expect(production.status == 403 && production.errorCode == "environment_mismatch", "\(production)")

            // The app hashed something else than the challenge.
            let device = TestDevice(harness)
            let challenge = try await harness.challenge()
            let object = try device.attestation(
                for: challenge, clientDataHash: Array(SHA256.hash(data: challenge.bytes + [0])))
            let nonce = try await harness.post(
                "/v1/attestations", device.attestationBody(object, challengeID: challenge.id))
            #expect(nonce.status == 403 && nonce.errorCode == "nonce_mismatch", "\(nonce)")

            // Every attestation fault of the software Apple, with the code a correct verifier reports.
            for fault in SoftwareAppleFault.allCases where fault.targets.contains(.attestation) {
                let answer = try await TestDevice(harness).register(fault: fault)
                let status = fault.expectedCheck == .format ? 400 : 403
                #expect(
                    answer.status == status && answer.errorCode == fault.expectedCode.rawValue, "\(fault): \(answer)")
            }

            // The key id of another key than the attested one.
            let liar = TestDevice(harness)
            let honest = try await harness.challenge()
            let attested = try liar.attestation(for: honest)
            let impostor = TestDevice(harness)
            let keyMismatch = try await harness.post(
                "/v1/attestations", impostor.attestationBody(attested, challengeID: honest.id))
            #expect(keyMismatch.status == 403 && keyMismatch.errorCode == "key_id_mismatch", "\(keyMismatch)")
            // None of these was registered.
            let counts = try await harness.store.keyCounts()
            #expect(counts.count(environment: .development, state: .active) == 0)
        }
    }

    @Test(
        "a development key against a production-only service: 403 environment_mismatch that explains itself",
        arguments: await StoreKind.all())
    func developmentKeyAgainstProduction(kind: StoreKind) async throws {
        var options = ServerHarness.Options()
        options.environments = .production
        try await ServerHarness.with(kind, options) { harness in
            // What an app run from Xcode with the App Attest capability sends first.
            let device = TestDevice(
                harness, configuration: .init(appID: Fixture.appID, environment: .development))
            let answer = try await device.register()
            #expect(answer.status == 403 && answer.errorCode == "environment_mismatch", "\(answer)")
            let message = try #require(answer.errorMessage)
            #expect(message.contains("the key was attested in development"), "\(message)")
            #expect(message.contains("accepts production only"), "\(message)")
            #expect(message.contains("`environments` setting (development, or both)"), "\(message)")
            #expect(message.contains("com.apple.developer.devicecheck.appattest-environment"), "\(message)")
            // Nothing of the attestation or the key is echoed.
            #expect(!message.contains(device.keyID.base64), "\(message)")
            let counts = try await harness.store.keyCounts()
            #expect(counts.count(environment: .development, state: .active) == 0)
        }
    }

    @Test("policy: validation category and minimum OS version", arguments: await StoreKind.all())
    func policy(kind: StoreKind) async throws {
        var options = ServerHarness.Options()
        options.policy = .init(allowedValidationCategories: [2], minimumOSVersion: "19.0")
        try await ServerHarness.with(kind, options) { harness in
            func device(iOS27: Bool, os: String, category: UInt32) -> TestDevice {
                TestDevice(
                    harness,
                    configuration: .init(
                        appID: Fixture.appID, environment: .development, iOS27: iOS27, osVersion: os,
                        validationCategory: category))
            }
            let category = try await device(iOS27: true, os: "27.0", category: 1).register()
            #expect(category.status == 403 && category.errorCode == "policy_validation_category", "\(category)")
            let none = try await device(iOS27: false, os: "27.0", category: 2).register()
            #expect(none.status == 403 && none.errorCode == "policy_validation_category", "\(none)")
            let old = try await device(iOS27: true, os: "18.5", category: 2).register()
            #expect(old.status == 403 && old.errorCode == "policy_os_version", "\(old)")
            let accepted = try await device(iOS27: true, os: "19.0.1", category: 2).register()
            #expect(accepted.status == 201, "\(accepted)")
            #expect(accepted.int("validationCategory") == 2)
        }
    }
}
