import Vapor

/// A request's body, at most a limit, however Vapor holds it.
enum VaporBody {
    /// The body's bytes, at most `limit`. `Request.Body.collect(max:)` bounds only a body still streaming, and fails
    /// one that reaches `max` (a body of exactly `limit` bytes would be refused), so it is asked for one byte more;
    /// one Vapor already collected (always in memory, and a small one over a socket) comes back whatever its size,
    /// so the size is checked here.
    /// - Throws: `Abort(.payloadTooLarge)` (413 `payload_too_large`) for a body over `limit`.
    static func collect(_ request: Request, limit: Int) async throws -> [UInt8] {
        let max = limit < Int.max ? limit + 1 : limit
        guard let buffer = try await request.body.collect(max: max).get() else { return [] }
        guard buffer.readableBytes <= limit else { throw Abort(.payloadTooLarge) }
        return Array(buffer.readableBytesView)
    }
}
