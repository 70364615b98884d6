import AttestKitFlows
import AttestKitVapor
import Testing
import Vapor
import VaporTesting

extension VaporEnforcementTests {
    /// A route group name the configuration does not have is the deployment's mistake: every request of the route is
    /// refused (fail closed), and the app is told neither the name nor the deployment's configured groups.
    @Test("a middleware naming an unconfigured group refuses with 503 group_unknown, without the configured names")
    func unconfiguredGroup() async throws {
        try await VaporBench.withApplication(
            mount: { app in
                app.grouped(AttestKitMiddleware(group: "ordres")).post("orders") { _ in "served" }
            }
        ) { app in
            try await app.testing().test(.POST, "/orders") { response in
                #expect(response.status == .serviceUnavailable)
                #expect(VaporBench.code(response) == "group_unknown")
                #expect(!response.body.string.contains("default") && !response.body.string.contains("ordres"))
            }
        }
    }
}
