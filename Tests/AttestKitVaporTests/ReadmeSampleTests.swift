import AttestKit
import AttestKitFlows
import AttestKitStore
import AttestKitTesting
import AttestKitVapor
import Foundation
import NIOHTTP1
import Testing
import Vapor
import VaporTesting

/// The Vapor sample of README.md and docs/service.md ("In-process: Vapor"), compiled and configured (not booted).
struct ReadmeSampleTests {
    func configure(_ app: Application, configuration: AttestKitApplication.Configuration, path: String) throws {
        let store = SQLiteAttestationStore(path: path)
        let application = try AttestKitApplication(configuration: configuration, store: store, logger: app.logger)
        app.attestKit = try AttestKitIntegration(application)
        app.lifecycle.use(AttestKitLifecycle())  // runs and prepares the store (asyncBoot), runs the cleanup
        try app.register(collection: AttestKitRoutes())  // POST /v1/challenges, /v1/attestations, ...
        app.grouped(AttestKitMiddleware()).post("orders") { req async throws -> String in
            guard let key = req.attestKit.key else { throw Abort(.unauthorized) }
            return "order accepted for key \(key.keyID)"
        }
    }

    @Test("the README sample configures an application whose routes answer")
    func sample() async throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent(UUID().uuidString).path
        defer { try? FileManager.default.removeItem(atPath: path) }
        try await withApp { app in
            try configure(app, configuration: VaporBench.configuration(), path: path)
            try await app.asyncBoot()
            try await app.testing().test(.POST, "/orders") { response in
                #expect(response.status == .unauthorized)
                #expect(VaporBench.code(response) == "assertion_required")
            }
        }
    }

    @Test("without app.attestKit every guarded route fails closed: 503")
    func notConfigured() async throws {
        try await withApp { app in
            app.grouped(AttestKitMiddleware()).post("orders") { _ in "reached" }
            try await app.testing().test(.POST, "/orders") { response in
                #expect(response.status == .serviceUnavailable)
                #expect(VaporBench.code(response) == "attestkit_not_configured")
            }
        }
    }
}
