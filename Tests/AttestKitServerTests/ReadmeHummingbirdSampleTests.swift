import AttestKitFlows
import AttestKitServer
import AttestKitStore
import Foundation
import Hummingbird
import HummingbirdTesting
import Testing

/// README.md's "Quick start: the service, or Hummingbird", as written (the SQLite file in a temporary directory):
/// it compiles, and the middleware guards the application's own route.
struct ReadmeHummingbirdSampleTests {
    struct AppContext: AttestedRequestContext {
        var coreContext: CoreRequestContextStorage
        var attestedKey: KeyRecord?
        init(source: ApplicationRequestContextSource) { coreContext = .init(source: source) }
    }

    @Test("the README's Hummingbird sample refuses an unattested request to its guarded route")
    func sample() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(UUID().uuidString)
        defer { try? FileManager.default.removeItem(at: directory) }
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)

        // The README, as written.
        let store = try StoreURL("sqlite:\(directory.path)/attest.sqlite").makeStore()  // run it in your ServiceGroup
        let router = Router(context: AppContext.self)
        router.group("api")
            .add(middleware: AttestKitMiddleware<AppContext>(gate: AssertionGate(store: store)))
            .post("orders") { request, context in
                guard let key = context.attestedKey else { throw HTTPError(.unauthorized) }
                return "order accepted for key \(key.keyID)"
            }

        let app = Application(router: router)
        try await app.test(.router) { client in
            try await client.execute(uri: "/api/orders", method: .post) { response in
                #expect(response.status == .unauthorized)
                #expect(RouterTests.code(response) == "assertion_required")
            }
            try await client.execute(uri: "/elsewhere", method: .get) { response in
                #expect(response.status == .notFound)
            }
        }
    }
}
