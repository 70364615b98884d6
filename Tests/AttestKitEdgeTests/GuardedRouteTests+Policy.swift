import AttestKit
import AttestKitFlows
import AttestKitStore
import AttestKitTesting
import AttestKitWire
import Foundation
import Testing

/// The deployment's iOS 27 rules at every assertion, on every edge and store: the same policies as at registration,
/// and a change of category since registration refused, each with its own code, the counter kept.
extension GuardedRouteTests {
    static let iOS27Policy = DeploymentPolicy(
        allowedValidationCategories: [ValidationCategory.appStore.rawValue, ValidationCategory.testFlight.rawValue],
        acceptsUnreported: true, minimumBundleVersion: "2.10")

    static let appStoreBuild = SimulatedDevice.Configuration(
        appID: EdgeFixture.appID, environment: .development, iOS27: true, bundleVersion: "2.10.1",
        validationCategory: 4)

    @Test(
        "iOS 27 rules at every assertion: 403 policy_bundle_version / _validation_category / _changed",
        arguments: await Edge.matrix())
    func iOS27Policies(edge: Edge, backend: Backend) async throws {
        try await edge.run(on: backend, EdgeConfiguration(policy: Self.iOS27Policy)) { app in
            let device = try await EdgeDevice.registered(app, build: Self.appStoreBuild)
            let accepted = try await app.send(
                "POST", "/orders", headers: try device.headers("POST", "/orders", body: Self.body), body: Self.body)
            #expect(accepted.status == 200, "\(accepted)")
            var current = device
            let builds: [((inout SimulatedDevice.Configuration) -> Void, String)] = [
                ({ $0.bundleVersion = "2.9" }, "policy_bundle_version"),
                ({ $0.bundleVersion = "2.10.1-beta" }, "policy_bundle_version"),
                (
                    {
                        $0.bundleVersion = "2.10.1"; $0.validationCategory = 3
                    }, "policy_validation_category"
                ),
                ({ $0.validationCategory = 2 }, "policy_validation_category_changed"),
            ]
            for (change, code) in builds {
                current = current.updated(change)
                let answer = try await app.send(
                    "POST", "/orders", headers: try current.headers("POST", "/orders", body: Self.body),
                    body: Self.body)
                #expect(answer.status == 403 && answer.code == code, "\(code): \(answer)")
                #expect(try await app.store.key(device.keyID)?.counter == 1)
            }
            // A device before iOS 27 is admitted (`unreported`), registration and assertion.
            let old = try await EdgeDevice.registered(app)
            let answer = try await app.send(
                "POST", "/orders", headers: try old.headers("POST", "/orders", body: Self.body), body: Self.body)
            #expect(answer.status == 200, "\(answer)")
        }
    }
}
