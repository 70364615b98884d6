extension FlowError.Kind {
    /// The HTTP status of this kind: the one table every edge (Hummingbird, Vapor, an adopter's own) answers with.
    ///
    /// 400 malformed, 401 unauthenticated, 403 refused, 409 conflict, 413 too large, 404 not found, 429 rate limited, 503
    /// unavailable or not configured, 502 upstream failure, 500 internal failure.
    public var httpStatus: Int {
        switch self {
        case .malformed: 400
        case .unauthenticated: 401
        case .refused: 403
        case .conflict: 409
        case .tooLarge: 413
        case .notFound: 404
        case .rateLimited: 429
        case .unavailable, .notConfigured: 503
        case .upstreamFailure: 502
        case .internalFailure: 500
        }
    }

    /// The seconds to send as `Retry-After`, for the kinds that carry them.
    public var retryAfter: Int? {
        switch self {
        case .rateLimited(let seconds): seconds
        case .unavailable(let seconds): seconds
        default: nil
        }
    }
}
