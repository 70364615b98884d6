import AttestKit
import AttestKitServer
import AttestKitStore
import Foundation
import Hummingbird
import Logging

/// A note the app posts.
struct Note: Codable {
    var text: String
}

/// What the guarded route answers: the note, and the verified key that sent it.
struct NoteReceipt: ResponseCodable {
    var keyId: String
    var counter: UInt32
    var text: String
}

/// A small Hummingbird app guarded by AttestKit: the service's routes (``AttestKitController``: among them
/// `POST /v1/challenges` and `POST /v1/attestations`, which register an app's key) mounted on the app's router, and
/// `POST /v1/notes` accepting a note only with a valid assertion bound to the request.
enum NotesApp {
    /// The app over `store`, listening on `host` and `port`: the store and AttestKit's challenge cleanup run beside
    /// it, the store prepared before it listens. Keep `attestKit` while the app runs.
    /// - Throws: when the guarded route's group is not configured (``router(_:)``).
    static func build(
        attestKit: AttestKitServer, store: any AttestationStore, host: String = "127.0.0.1", port: Int = 8080
    ) throws -> some ApplicationProtocol {
        var app = Application(
            router: try router(attestKit),
            configuration: .init(address: .hostname(host, port: port)),
            services: [store, attestKit.challengeCleanup])
        app.beforeServerStarts { try await store.prepare() }
        return app
    }

    /// The routes: AttestKit's, and the guarded `POST /v1/notes`.
    /// - Throws: `ServerConfigurationError` when the guarded route's group is not configured (`default` always is;
    ///   another group must be in `enforcement.groups`), so that a misnamed group stops the app at start.
    static func router(_ attestKit: AttestKitServer) throws -> Router<ServerRequestContext> {
        let router = Router(context: ServerRequestContext.self)
        attestKit.controller.addRoutes(to: router)
        // The server's middleware for the route group `default`, as its configuration says: `enforcement.*` (by
        // default enforced for everyone, App Attest only), the DeviceCheck and debug-token fallbacks, the risk policy
        // (step-up), metrics, `http.body-limit`, and each client named as the server's own routes name it (behind
        // `http.trusted-proxies`, the forwarded address). `AttestKitMiddleware(gate:)` would ignore all of that.
        let guarded: AttestKitMiddleware<ServerRequestContext> = try attestKit.middleware(group: "default")
        router.group("v1").add(middleware: guarded)
            .post("notes") { request, context -> NoteReceipt in
                // Set by the middleware: the request carried a valid assertion of this registered key.
                guard let key = context.attestedKey else { throw HTTPError(.unauthorized) }
                let note = try await request.decode(as: Note.self, context: context)
                return NoteReceipt(keyId: key.keyID.base64, counter: key.counter, text: note.text)
            }
        return router
    }
}

/// Runs the app: `APP_ID` (team id and bundle id, required), `ATTESTKIT_SQLITE` (default `attestkit.sqlite`),
/// `PORT` (default 8080).
@main
enum HummingbirdExampleMain {
    static func main() async throws {
        let environment = ProcessInfo.processInfo.environment
        guard let appID = environment["APP_ID"] else { throw HTTPError(.internalServerError, message: "set APP_ID") }
        let path = environment["ATTESTKIT_SQLITE"] ?? "attestkit.sqlite"
        let store = SQLiteAttestationStore(path: path)
        let attestKit = try AttestKitServer(
            configuration: ServerConfiguration(
                appIDs: [try AppID(appID)], storageURL: "sqlite:\(path)", trustAnchors: try .apple()),
            store: store)
        let port = environment["PORT"].flatMap(Int.init) ?? 8080
        try await NotesApp.build(attestKit: attestKit, store: store, port: port).runService()
    }
}
