import AttestKit
import AttestKitFlows
import AttestKitShutdown
import AttestKitServer
import AttestKitStore
import Foundation
import Hummingbird
import Logging
import NIOCore

/// A tiny Hummingbird application of the kind an adopter writes: routes under `/api` guarded by
/// ``AttestKitMiddleware`` with the gate of the server under test, answering with the key the middleware put on
/// the context and the size of the body it handed on.
struct GuardedApp: Sendable {
    let gate: AssertionGate
    let bodyLimit: Int
    let logger: Logger

    /// The routes: `POST /api/orders` and `GET /api/orders` behind the middleware.
    func router() -> Router<ServerRequestContext> {
        let router = Router(context: ServerRequestContext.self)
        let api = router.group("api").add(
            middleware: AttestKitMiddleware<ServerRequestContext>(gate: gate, bodyLimit: bodyLimit))
        api.post("orders") { request, context in try await Self.echo(request, context) }
        api.get("orders") { request, context in try await Self.echo(request, context) }
        return router
    }

    /// Serves on 127.0.0.1 and a free port until cancelled (then stopped as a graceful shutdown does, as the server
    /// is: a cancelled Hummingbird listener traps on connections it had queued); `bound` learns the port (or 0 when
    /// it never listened).
    func run(bound: @escaping @Sendable (Int) -> Void) async throws {
        let application = Application(
            router: router(),
            configuration: .init(address: .hostname("127.0.0.1", port: 0), serverName: nil),
            onServerRunning: { channel in bound(channel.localAddress?.port ?? 0) },
            logger: logger)
        defer { bound(0) }
        try await GracefulCancellation.run(application, logger: logger)
    }

    /// `{"keyId": ..., "counter": ..., "bodyBytes": ...}` of the attested key.
    private static func echo(_ request: Request, _ context: ServerRequestContext) async throws -> Response {
        let body = try await request.body.collect(upTo: 1 << 20)
        guard let key = context.attestedKey else {
            return Response(status: .internalServerError)
        }
        let json = "{\"keyId\":\"\(key.keyID.base64)\",\"counter\":\(key.counter),\"bodyBytes\":\(body.readableBytes)}"
        var headers = HTTPFields()
        headers[.contentType] = "application/json"
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(string: json)))
    }
}
