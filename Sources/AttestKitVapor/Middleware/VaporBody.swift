import Vapor

/// A request's body, at most a limit, however Vapor holds it.
enum VaporBody {
    /// The body's bytes, at most `limit`. `Request.Body.collect(max:)` bounds only a body still streaming: one Vapor
    /// already collected (always in memory, and a small one over a socket) comes back whatever its size, so the
    /// size is checked here too.
    /// - Throws: `Abort(.payloadTooLarge)` (413 `payload_too_large`) for a body over `limit`.
    static func collect(_ request: Request, limit: Int) async throws -> [UInt8] {
        guard let buffer = try await request.body.collect(max: limit).get() else { return [] }
        guard buffer.readableBytes <= limit else { throw Abort(.payloadTooLarge) }
        return Array(buffer.readableBytesView)
    }
}
