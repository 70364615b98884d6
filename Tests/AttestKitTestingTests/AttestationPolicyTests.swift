import AttestKit
import AttestKitTesting
import Foundation
import Testing

/// Deployment policies run inside `AttestationVerifier.verify`, right after Apple's checks: a refusal is an
/// `AttestKitError` of the `policy` check with the policy's code and reason; Apple's refusals come first, and the
/// first failing policy wins.
@Suite struct AttestationPolicyTests {
    /// A policy of an adopter's own, refusing everything with its own code.
    struct ClosedForMaintenance: AttestationPolicy {
        static let code = AttestKitError.Code(policy: "policy_maintenance")

        func check(_: VerifiedAttestation) -> PolicyResult {
            .failsToMeetPolicy(PolicyFailureReason(Self.code, "closed for maintenance"))
        }
    }

    /// Counts the attestations it is asked about (to prove a policy is not consulted), and accepts them.
    final class Counting: AttestationPolicy, @unchecked Sendable {
        private let lock = NSLock()
        private var seen = 0
        var count: Int { lock.withLock { seen } }

        func check(_: VerifiedAttestation) -> PolicyResult {
            lock.withLock { seen += 1 }
            return .meetsPolicy
        }
    }

    /// An attested key of a device at `osVersion`, iOS 27 (so with a validation category of `category`).
    static func attested(
        osVersion: String = "27.0", category: UInt32 = 1
    ) throws -> (keyID: KeyID, object: [UInt8]) {
        let device = SimulatedDevice(
            apple: Fixture.apple,
            configuration: .init(
                appID: Fixture.appID, environment: .production, iOS27: true, osVersion: osVersion,
                validationCategory: category))
        let keyID = device.generateKey()
        return (keyID, try device.attestKey(keyID, clientDataHash: Fixture.clientDataHash, at: Fixture.time))
    }

    static func verify(
        _ verifier: AttestationVerifier, _ attested: (keyID: KeyID, object: [UInt8]),
        clientDataHash: [UInt8] = Fixture.clientDataHash
    ) async throws -> VerifiedAttestation {
        try await verifier.verify(
            attested.object, keyID: attested.keyID, clientData: .clientDataHash(clientDataHash), at: Fixture.time)
    }

    static func verifier(@AttestationPolicyBuilder _ policy: () -> some AttestationPolicy) throws
        -> AttestationVerifier
    {
        AttestationVerifier(configuration: try Fixture.verifier().configuration, policy: policy)
    }

    @Test("a policy refusal is thrown by verify: the policy's code, the policy check, its reason")
    func refusalIsThrownByVerify() async throws {
        let attested = try Self.attested(osVersion: "17.0")
        let minimum = try #require(OSVersion("18"))
        let verifier = try Self.verifier { MinimumOSVersionPolicy(minimum) }
        let error = await Fixture.rejection { _ = try await Self.verify(verifier, attested) }
        #expect(error?.code == .policyOSVersion)
        #expect(error?.code.rawValue == "policy_os_version")
        #expect(error?.check == .policy)
        #expect(error?.reason == "the OS version 17.0 is below the minimum 18")
        // The same object verifies without the policy, and with a policy it meets.
        _ = try await Self.verify(try Fixture.verifier(), attested)
        let seventeen = try #require(OSVersion("17"))
        let met = try await Self.verify(try Self.verifier { MinimumOSVersionPolicy(seventeen) }, attested)
        #expect(met.osVersion == "17.0")
    }

    @Test("the validation category policy refuses another category with its own code")
    func validationCategory() async throws {
        let verifier = try Self.verifier { ValidationCategoryPolicy(allowed: [2]) }
        let refused = await Fixture.rejection { _ = try await Self.verify(verifier, try Self.attested(category: 1)) }
        #expect(refused?.code == .policyValidationCategory)
        #expect(refused?.check == .policy)
        #expect(refused?.reason == "the validation category platform (1) is not allowed by this deployment")
        let accepted = try await Self.verify(verifier, try Self.attested(category: 2))
        #expect(accepted.validationCategory == 2)
    }

    @Test("Apple's failure wins over a policy failure on the same object, and the policy is not consulted")
    func applesFailureWins() async throws {
        let attested = try Self.attested(osVersion: "17.0")
        let counting = Counting()
        let verifier = try Self.verifier {
            counting
            ClosedForMaintenance()
        }
        // Another challenge: Apple's nonce check refuses before any policy runs.
        await Fixture.expect(.nonceMismatch) {
            _ = try await Self.verify(verifier, attested, clientDataHash: Array(repeating: 7, count: 32))
        }
        // Another app: Apple's App ID check.
        let otherApp = AttestationVerifier(
            configuration: try Fixture.verifier(appID: try AppID("ZZZZZ99999.com.example.other")).configuration,
            policy: ClosedForMaintenance())
        await Fixture.expect(.appIdMismatch) { _ = try await Self.verify(otherApp, attested) }
        #expect(counting.count == 0)
        // Once Apple's checks pass, the policies run in order: the counter, then the refusal.
        await Fixture.expect(ClosedForMaintenance.code) { _ = try await Self.verify(verifier, attested) }
        #expect(counting.count == 1)
    }

    @Test("the first failing policy wins, in the order written")
    func firstFailureWins() async throws {
        let attested = try Self.attested(osVersion: "17.0")
        let minimum = try #require(OSVersion("18"))
        let osFirst = try Self.verifier {
            AcceptAnyAttestation()
            MinimumOSVersionPolicy(minimum)
            ClosedForMaintenance()
        }
        await Fixture.expect(.policyOSVersion) { _ = try await Self.verify(osFirst, attested) }
        let closedFirst = try Self.verifier {
            ClosedForMaintenance()
            MinimumOSVersionPolicy(minimum)
        }
        let error = await Fixture.rejection { _ = try await Self.verify(closedFirst, attested) }
        #expect(error?.code.rawValue == "policy_maintenance")
        #expect(error?.check == .policy)
        #expect(error?.reason == "closed for maintenance")
    }

    @Test("if and if-else in the builder choose the policies", arguments: [false, true])
    func conditionals(strict: Bool) async throws {
        let attested = try Self.attested(osVersion: "17.4")
        let high = try #require(OSVersion("99"))
        let verifier = try Self.verifier {
            if strict {
                MinimumOSVersionPolicy(high)
            } else {
                AcceptAnyAttestation()
            }
            if strict { ClosedForMaintenance() }
        }
        if strict {
            await Fixture.expect(.policyOSVersion) { _ = try await Self.verify(verifier, attested) }
        } else {
            _ = try await Self.verify(verifier, attested)
        }
        let branch = AttestationPolicyBuilder.build {
            if !strict { ClosedForMaintenance() } else { AcceptAnyAttestation() }
        }
        let verified = try await Self.verify(try Fixture.verifier(), attested)
        #expect((branch.check(verified) == .meetsPolicy) == strict)
    }

    @Test("appending a policy keeps the verifier's own first, and an empty builder accepts")
    func appending() async throws {
        let attested = try Self.attested(osVersion: "17.0")
        let minimum = try #require(OSVersion("18"))
        let verifier = try Self.verifier { ClosedForMaintenance() }.appending(MinimumOSVersionPolicy(minimum))
        await Fixture.expect(ClosedForMaintenance.code) { _ = try await Self.verify(verifier, attested) }
        let onlyAppended = try Fixture.verifier().appending(MinimumOSVersionPolicy(minimum))
        await Fixture.expect(.policyOSVersion) { _ = try await Self.verify(onlyAppended, attested) }
        _ = try await Self.verify(try Self.verifier {}, attested)
    }

    @Test("an adopter's code is a policy code, equal by its string")
    func adopterCodes() {
        let code = AttestKitError.Code(policy: "policy_maintenance")
        #expect(code.check == .policy)
        #expect(code.description == "policy_maintenance")
        #expect(code == ClosedForMaintenance.code)
        #expect(code != .policyOSVersion)
        #expect(
            AttestKitError.Code.allCases.filter { $0.check == .policy }.map(\.rawValue).sorted()
                == [
                    "policy_bundle_version", "policy_key_access_control", "policy_os_version",
                    "policy_validation_category", "policy_validation_category_changed",
                ])
        let reason = PolicyFailureReason(code, "closed")
        #expect(reason.description == "policy_maintenance: closed")
        #expect(reason.error().check == .policy)
    }
}
