import AttestKit
import AttestKitFlows
import AttestKitStore
import AttestKitTesting
import Crypto
import Foundation
import Testing

/// The deployment's policy (AttestKit's policies, composed) reaches the registrar through its verifier, and a
/// refusal becomes a flow error of kind refused with the same code. The builder and the order of policies are
/// tested in the core (`AttestationPolicyTests`).
struct PolicyTests {
    /// A policy of the adopter's own, refusing everything with its own code.
    struct RefuseAll: AttestationPolicy {
        func check(_: VerifiedAttestation) -> PolicyResult {
            .failsToMeetPolicy(
                PolicyFailureReason(AttestKitError.Code(policy: "policy_closed"), "closed for maintenance"))
        }
    }

    @Test("the deployment policy: categories, then the OS version")
    func deployment() async throws {
        let bench = try FlowBench()
        let old = try await bench.verifiedAttestation(bench.device(osVersion: "17.0"))
        #expect(DeploymentPolicy().attestationPolicy.check(old) == .meetsPolicy)
        let policy = DeploymentPolicy(allowedValidationCategories: [2], minimumOSVersion: "19.0")
        guard case .failsToMeetPolicy(let reason) = policy.attestationPolicy.check(old) else {
            Issue.record("the policy passed")
            return
        }
        #expect(reason.code == .policyValidationCategory)
        #expect(
            reason.reason
                == "the device reports no validation category (before iOS 27) and this deployment requires one")
    }

    @Test("the registrar throws the policy's reason, refused")
    func registrarRefuses() async throws {
        let bench = try FlowBench()
        let device = bench.device(osVersion: "17.0")
        let policy = DeploymentPolicy(minimumOSVersion: "18").attestationPolicy
        let error = await #expect(throws: FlowError.self) { try await bench.register(device, policy: policy) }
        #expect(error?.code == .policyOSVersion)
        #expect(error?.code.rawValue == "policy_os_version")
        #expect(error?.kind == .refused)
        #expect(try await bench.store.key(device.keyID) == nil)
        // An adopter's own code is refused as well, with its code, and comes from the verifier's call.
        let closed = await #expect(throws: FlowError.self) {
            try await bench.register(bench.device(osVersion: "19.0"), policy: RefuseAll())
        }
        #expect(closed?.code.rawValue == "policy_closed")
        #expect(closed?.kind == .refused)
        #expect((closed?.underlying as? AttestKitError)?.check == .policy)
    }

    @Test("the admit hook refuses after verification, before the key is stored, and gives the challenge back")
    func admitHook() async throws {
        let bench = try FlowBench()
        let device = bench.device()
        let challenge = try await bench.issuer.issue(purpose: .attest)
        let attestation = try device.device.attestKey(
            device.keyID, clientDataHash: Array(SHA256.hash(data: challenge.bytes)))
        let error = await #expect(throws: FlowError.self) {
            try await bench.registrar().register(
                keyID: device.keyID, attestation: attestation, challengeID: challenge.id, now: .now
            ) { app throws(FlowError) in
                #expect(app == FlowBench.appID)
                throw FlowError.rateLimited("attestations_per_app", retryAfter: 7)
            }
        }
        #expect(error?.kind == .rateLimited(retryAfter: 7))
        #expect(try await bench.store.key(device.keyID) == nil)
        // "Not now" is no verdict on the attestation: the challenge was given back, and the same attestation posted
        // again once the budget allows registers the key (before, it met challenge_consumed and the client took
        // that for its earlier post having registered the key).
        let record = try await bench.registrar().register(
            keyID: device.keyID, attestation: attestation, challengeID: challenge.id, now: .now)
        #expect(record.keyID == device.keyID)
        await #expect(throws: FlowError.self) {
            try await bench.registrar().register(
                keyID: device.keyID, attestation: attestation, challengeID: challenge.id, now: .now)
        }
    }

    @Test("risk: unknown asks for step-up only when the deployment says so")
    func risk() {
        #expect(!RiskPolicy().requiresStepUp(nil))
        #expect(RiskPolicy(stepUpWhileUnknown: true).requiresStepUp(nil))
        #expect(RiskPolicy(threshold: 3).requiresStepUp(4))
        #expect(!RiskPolicy(threshold: 3).requiresStepUp(3))
        #expect(DeploymentPolicy(riskMetricThreshold: 2).riskPolicy == RiskPolicy(threshold: 2))
        #expect(RiskPolicy.status(nil) == "unknown")
    }
}
