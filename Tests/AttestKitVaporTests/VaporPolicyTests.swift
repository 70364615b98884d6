import AttestKit
import AttestKitFlows
import Testing
import Vapor

/// A deployment's policies through the Vapor edge: an adopter's own policy on the verifier refuses with its own
/// code, HTTP 403; the `DeploymentPolicy` of the services is checked after the verifier's own policy.
@Suite struct VaporPolicyTests {
    /// A policy of an adopter's own, with its own code.
    struct ClosedForMaintenance: AttestationPolicy {
        func check(_: VerifiedAttestation) -> PolicyResult {
            .failsToMeetPolicy(
                PolicyFailureReason(AttestKitError.Code(policy: "policy_maintenance"), "closed for maintenance"))
        }
    }

    @Test("an adopter's policy refuses with its own code: 403 policy_maintenance, before the deployment's")
    func adopterPolicy() async throws {
        try await VaporBench.withApplication(
            policy: ClosedForMaintenance(), deployment: DeploymentPolicy(minimumOSVersion: "99")
        ) { app in
            try await VaporBench.register(app, expecting: .forbidden, code: "policy_maintenance")
        }
    }

    @Test("the deployment's rules follow the verifier's own: 403 policy_os_version, 201 when met")
    func deploymentAfterVerifierPolicy() async throws {
        try await VaporBench.withApplication(
            policy: AcceptAnyAttestation(), deployment: DeploymentPolicy(minimumOSVersion: "99")
        ) { app in
            try await VaporBench.register(app, expecting: .forbidden, code: "policy_os_version")
        }
        try await VaporBench.withApplication(deployment: DeploymentPolicy(minimumOSVersion: "17")) { app in
            try await VaporBench.register(app)
        }
    }
}
