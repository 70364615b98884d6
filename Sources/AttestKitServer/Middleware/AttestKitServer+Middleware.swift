public import AttestKitFlows
public import Hummingbird

extension AttestKitServer {
    /// Names the sender of a request as this server's own routes do, for ``AttestKitMiddleware``'s `client:`: the
    /// TCP peer (an IPv6 peer by its prefix, `rate-limit.ipv6-prefix-length`), or, when the peer is one of
    /// `http.trusted-proxies`, the address it forwarded in `http.client-address-header`; `nil` when the context does
    /// not know the peer (`RemoteAddressRequestContext`). Vapor's middleware names clients by the same rule.
    public func requestClient<Context: Hummingbird.RequestContext>(
        _ context: Context.Type = Context.self
    ) -> @Sendable (Hummingbird.Request, Context) -> String? {
        let address = api.clientAddress
        return { request, context in
            guard let context = context as? any RemoteAddressRequestContext else { return nil }
            return address.rateLimitKey(peer: context.remoteAddress, headers: request.headers)
        }
    }

    /// The middleware of a route group of this server: the guard of ``routeGuard(group:policy:)``, with the
    /// per-client budget of DeviceCheck validations counted by the client ``requestClient(_:)`` names, so that
    /// behind a trusted proxy each client has its own budget rather than sharing the proxy's.
    /// - Parameters:
    ///   - group: `default` or a group of `enforcement.groups`.
    ///   - policy: The route's own policy, instead of a configured group's.
    ///   - bodyLimit: The largest body hashed, in bytes; `nil` for the configuration's `http.body-limit`, as the
    ///     service's own routes, Vapor's middleware and the decision route use.
    ///   - subject: The rollout subject of a request (a user id), or `nil` to use the key id it sends.
    /// - Throws: ``ServerConfigurationError`` for a group that is not configured.
    public func middleware<Context: AttestedRequestContext>(
        group: String = "default", policy: EnforcementPolicy? = nil, bodyLimit: Int? = nil,
        subject: (@Sendable (Hummingbird.Request, Context) -> String?)? = nil
    ) throws -> AttestKitMiddleware<Context> {
        AttestKitMiddleware(
            guard: try routeGuard(group: group, policy: policy), bodyLimit: bodyLimit ?? configuration.bodyLimit,
            subject: subject,
            client: requestClient())
    }
}
