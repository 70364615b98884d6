import AttestKit
import AttestKitFlows
import AttestKitStore
import AttestKitVapor
import Foundation
import Vapor

/// A note the app posts.
struct Note: Content {
    var text: String
}

/// What the guarded route answers: the note, and the verified key that sent it.
struct NoteReceipt: Content {
    var keyId: String
    var counter: UInt32
    var text: String
}

/// A small Vapor app guarded by AttestKit: `POST /v1/challenges` and `POST /v1/attestations` register an app's
/// key, and `POST /v1/notes` accepts a note only with a valid assertion bound to the request.
enum NotesApp {
    /// Configures `app`: AttestKit's application over `store` with `configuration` (the apps it accepts), the store
    /// and background services run by the app's lifecycle, the app's routes (`POST /v1/challenges`,
    /// `POST /v1/attestations`, ...; `AttestKitRoutes(audiences:)` mounts others too), and the guarded route.
    static func configure(
        _ app: Application, store: any AttestationStore, configuration: AttestKitApplication.Configuration
    ) throws {
        app.attestKit = try AttestKitIntegration(
            try AttestKitApplication(configuration: configuration, store: store, logger: app.logger))
        app.lifecycle.use(AttestKitLifecycle())
        try app.register(collection: AttestKitRoutes(audiences: [.app, .probe]))
        app.grouped("v1").grouped(AttestKitMiddleware()).post("notes") { req async throws -> NoteReceipt in
            // Set by the middleware: the request carried a valid assertion of this registered key.
            guard let key = req.attestKit.key else { throw Abort(.unauthorized) }
            let note = try req.content.decode(Note.self)
            return NoteReceipt(keyId: key.keyID.base64, counter: key.counter, text: note.text)
        }
    }
}

/// Runs the app: `APP_ID` (team id and bundle id, required), `ATTESTKIT_SQLITE` (default `attestkit.sqlite`),
/// and Vapor's usual command line (`serve --port 8080`).
@main
enum VaporExampleMain {
    static func main() async throws {
        var environment = try Environment.detect()
        try LoggingSystem.bootstrap(from: &environment)
        let app = try await Application.make(environment)
        do {
            guard let appID = Environment.get("APP_ID") else {
                throw Abort(.internalServerError, reason: "set APP_ID to TEAMID.bundle.id")
            }
            let store = SQLiteAttestationStore(path: Environment.get("ATTESTKIT_SQLITE") ?? "attestkit.sqlite")
            try NotesApp.configure(
                app, store: store, configuration: .init(appIDs: [try AppID(appID)], trustAnchors: try .apple()))
            try await app.execute()
        } catch {
            try? await app.asyncShutdown()
            throw error
        }
        try await app.asyncShutdown()
    }
}
