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

    @Test(
        "policy.validation-category-change step-up: a changed category is let through asking for step-up",
        arguments: await Edge.matrix())
    func categoryChangeStepsUp(edge: Edge, backend: Backend) async throws {
        var policy = Self.iOS27Policy
        policy.validationCategoryChange = .stepUp
        try await edge.run(on: backend, EdgeConfiguration(policy: policy)) { app in
            let device = try await EdgeDevice.registered(app, build: Self.appStoreBuild)
            let same = try await app.send(
                "POST", "/orders", headers: try device.headers("POST", "/orders", body: Self.body), body: Self.body)
            #expect(same.status == 200 && same.decision == "app_attest|true|false|-", "\(same)")
            #expect(same.header(EdgeHeaders.categoryChanged) == "false")
            // TestFlight is in the list, but not the key's category: accepted, step-up asked for, counter advanced.
            let testFlight = device.updated { $0.validationCategory = 2 }
            let changed = try await app.send(
                "POST", "/orders", headers: try testFlight.headers("POST", "/orders", body: Self.body),
                body: Self.body)
            #expect(changed.status == 200 && changed.decision == "app_attest|true|true|-", "\(changed)")
            #expect(changed.header(EdgeHeaders.categoryChanged) == "true")
            #expect(try await app.store.key(device.keyID)?.counter == 2)
            // The category list still applies: development is refused, not stepped up.
            let development = testFlight.updated { $0.validationCategory = 3 }
            let refused = try await app.send(
                "POST", "/orders", headers: try development.headers("POST", "/orders", body: Self.body),
                body: Self.body)
            #expect(refused.status == 403 && refused.code == "policy_validation_category", "\(refused)")
        }
    }
}
