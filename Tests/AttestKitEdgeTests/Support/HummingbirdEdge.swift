import AttestKit
import AttestKitServer
import AttestKitStore
import AttestKitTesting
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore

/// The Hummingbird integration as an adopter mounts it: the server's ``AttestKitController`` on the application's
/// router, and `/orders` guarded by ``AttestKitMiddleware`` with the server's gate; driven without a socket.
struct HummingbirdEdge: EdgeDriver {
    let store: any AttestationStore
    let client: any TestClientProtocol

    static func run(store: any AttestationStore, _ body: @Sendable (any EdgeDriver) async throws -> Void) async throws {
        let configuration = ServerConfiguration(
            appIDs: [EdgeFixture.appID], environments: .development, storageURL: "memory:",
            trustAnchors: EdgeFixture.apple.trustAnchors, logLevel: .critical)
        let server = try AttestKitServer(
            configuration: configuration, store: store,
            logger: Logger(label: "edge", factory: { _ in SwiftLogNoOpLogHandler() }))
        let router = Router(context: ServerRequestContext.self)
        server.controller.addRoutes(to: router)
        let guarded = router.group("orders").add(
            middleware: AttestKitMiddleware<ServerRequestContext>(gate: server.gate))
        guarded.post { _, context in Self.keyID(context) }
        guarded.get { _, context in Self.keyID(context) }
        guarded.get("**") { _, context in Self.keyID(context) }
        try await Application(router: router).test(.router) { client in
            try await body(HummingbirdEdge(store: store, client: client))
        }
    }

    private static func keyID(_ context: ServerRequestContext) -> String {
        context.attestedKey?.keyID.base64 ?? "no key"
    }

    func send(_ method: String, _ target: String, headers: [(String, String)], body: [UInt8]) async throws -> EdgeAnswer
    {
        var fields = HTTPFields()
        for (name, value) in headers {
            guard let name = HTTPField.Name(name) else { continue }
            fields.append(HTTPField(name: name, value: value))
        }
        let response = try await client.executeRequest(
            uri: target, method: HTTPRequest.Method(method) ?? .get, headers: fields,
            body: body.isEmpty ? nil : ByteBuffer(bytes: body))
        return EdgeAnswer(status: Int(response.status.code), body: Array(response.body.readableBytesView))
    }
}
