import Synchronization

/// Whether a replica is draining: shutting down, still serving the requests that reach it, while its load balancer
/// stops sending new ones because `/ready` answers 503 `draining`.
///
/// One per ``AttestKitApplication`` (a reference, so every copy of the application sees the same state), set once by
/// whatever runs the edge when it is told to stop (`attestkit serve` on SIGTERM or SIGINT; `AttestKitLifecycle` when
/// a Vapor application shuts down; an adopter's own lifecycle otherwise) and never cleared: a replica that drained
/// exits.
public final class DrainState: Sendable {
    private let draining = Atomic<Bool>(false)

    /// Creates a state that is not draining.
    public init() {}

    /// Whether the replica drains (``AttestKitApplication/ready()`` then throws `draining`).
    public var isDraining: Bool { draining.load(ordering: .acquiring) }

    /// Starts draining; later calls change nothing.
    /// - Returns: `true` for the call that started it, `false` when the replica was already draining.
    @discardableResult
    public func start() -> Bool {
        !draining.exchange(true, ordering: .acquiringAndReleasing)
    }
}

extension AttestKitApplication {
    /// Whether this replica drains: shutting down, `/ready` answering 503 `draining` while requests are still
    /// served. See ``DrainState``.
    public var isDraining: Bool { drainState.isDraining }

    /// Starts draining: from now on ``ready()`` throws 503 `draining`, so that a load balancer probing `/ready` stops
    /// sending this replica new requests; every other route keeps answering. Call it when the process is told to
    /// stop, wait for the drain period, then close the listener.
    /// - Returns: `true` for the call that started it, `false` when the replica was already draining.
    @discardableResult
    public func startDraining() -> Bool { drainState.start() }
}

extension FlowError.Code {
    /// The replica is shutting down and drains (`draining`, 503 from `/ready`): send new requests elsewhere.
    public static let draining = FlowError.Code("draining")
}
