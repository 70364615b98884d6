public import Hummingbird

/// The HTTP API's routes, to mount on an application's own router, in the manner of Hummingbird's
/// `RouterController`: challenges, attestations, assertion checks, DeviceCheck, key administration, probes and
/// metrics, each behind the check of its audience (the route's audience, exactly as on ``AttestKitServer``'s own
/// listener).
///
/// Errors are answered with the API's JSON envelope (``APIError``, an `HTTPResponseError` each route throws, which
/// Hummingbird's responder turns into the response): an application's own middleware above the routes sees a
/// refusal as that thrown error, not as a response; one that maps every error to its own answer must pass
/// `HTTPResponseError`s on. The application runs the server's store and background services
/// (``AttestKitServer/store``, ``AttestKitServer/receiptRefresh``, ``AttestKitServer/challengeCleanup``) in its
/// service group, or runs the ``AttestKitServer`` itself.
///
/// ```swift
/// let attestKit = try AttestKitServer(configuration: configuration, store: store)
/// let router = Router(context: MyContext.self)   // MyContext: RemoteAddressRequestContext
/// attestKit.controller.addRoutes(to: router.group("attest"))
/// ```
public struct AttestKitController: Sendable {
    let api: AttestKitAPI

    /// Every route, `METHOD /path` relative to where the controller is mounted.
    public var routes: [String] { AttestKitAPI.routes }

    /// Adds every route to `router` (a `Router` or a `RouterGroup`), each behind its audience's check.
    public func addRoutes<Methods: RouterMethods>(to router: Methods)
    where Methods.Context: RemoteAddressRequestContext {
        api.register(on: router, for: .only)
    }
}
