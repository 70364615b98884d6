import AttestKit
import AttestKitFlows
import AttestKitStore
import AttestKitTesting
import Crypto
import Foundation
import Testing

/// Deployment policies compose, and a refusal carries its reason and code.
struct PolicyTests {
    /// A policy of the adopter's own, refusing everything with its own code.
    struct RefuseAll: AttestationPolicy {
        func check(_: VerifiedAttestation) -> PolicyResult {
            .failsToMeetPolicy(PolicyFailureReason(FlowError.Code("policy_closed"), "closed for maintenance"))
        }
    }

    @Test("the first failing policy's reason is the result, in the order written")
    func firstFailureWins() async throws {
        let bench = try FlowBench()
        let attestation = try await bench.verifiedAttestation(bench.device(osVersion: "17.0"))
        let minimum = try #require(OSVersion("18"))
        let policy = AttestationPolicyBuilder.build {
            AcceptAnyAttestation()
            MinimumOSVersionPolicy(minimum)
            RefuseAll()
        }
        #expect(
            policy.check(attestation)
                == .failsToMeetPolicy(
                    PolicyFailureReason(.policyOSVersion, "the OS version 17.0 is below the minimum 18")))
        let reordered = AttestationPolicyBuilder.build {
            RefuseAll()
            MinimumOSVersionPolicy(minimum)
        }
        guard case .failsToMeetPolicy(let reason) = reordered.check(attestation) else {
            Issue.record("the policy passed")
            return
        }
        #expect(reason.code.rawValue == "policy_closed")
    }

    @Test("if and if-else in the builder", arguments: [false, true])
    func conditionals(strict: Bool) async throws {
        let bench = try FlowBench()
        let attestation = try await bench.verifiedAttestation(bench.device(osVersion: "17.4"))
        let high = try #require(OSVersion("99"))
        let policy = AttestationPolicyBuilder.build {
            if strict { RefuseAll() }
            if strict {
                MinimumOSVersionPolicy(high)
            } else {
                AcceptAnyAttestation()
            }
        }
        #expect((policy.check(attestation) == .meetsPolicy) == !strict)
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
        #expect(reason.reason == "the validation category none is not allowed by this deployment")
    }

    @Test("the registrar throws the policy's reason, refused")
    func registrarRefuses() async throws {
        let bench = try FlowBench()
        let device = bench.device(osVersion: "17.0")
        let policy = DeploymentPolicy(minimumOSVersion: "18").attestationPolicy
        let error = await #expect(throws: FlowError.self) { try await bench.register(device, policy: policy) }
        #expect(error?.code == .policyOSVersion)
        #expect(error?.kind == .refused)
        #expect(try await bench.store.key(device.keyID) == nil)
    }

    @Test("the admit hook refuses after verification, before the key is stored")
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
