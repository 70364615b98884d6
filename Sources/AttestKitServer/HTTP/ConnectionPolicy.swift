import AttestKitFlows
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import Synchronization

/// How one server treats connections, on every listener it has: read and idle deadlines
/// (``ConnectionDeadlineHandler``) and one maximum of open connections shared by all listeners, since they draw on
/// the same descriptors.
///
/// Build the HTTP server of each listener with ``http1()``. Past the maximum, a new connection is accepted and closed
/// at once (counted as refused) rather than left in the backlog, so that the accept loop keeps running and a client
/// learns at once that it should retry.
final class ConnectionPolicy: Sendable {
    /// The deadlines.
    let limits: ServerConfiguration.ConnectionLimits
    /// The most connections open at once, across listeners.
    let maxConnections: Int
    /// The descriptor limit after raising it, when it could be read.
    let descriptors: DescriptorLimit?
    private let metrics: ServerMetrics
    private let logger: Logger
    /// The connections open now; the gauge is written under the same lock, so that its last value is the count's.
    private let open = Mutex<Int>(0)

    /// Creates the policy of one server and settles its maximum: `http.max-connections`, or the descriptor limit's
    /// default (1024 when the limit is unknown).
    ///
    /// - Throws: ``ServerConfigurationError`` for an `http.max-connections` that is not below the descriptor limit.
    init(
        _ limits: ServerConfiguration.ConnectionLimits, descriptors: DescriptorLimit?, metrics: ServerMetrics,
        logger: Logger
    ) throws(ServerConfigurationError) {
        if let configured = limits.maxConnections, let descriptors, configured >= descriptors.soft {
            throw ServerConfigurationError(
                "http.max-connections",
                "is \(configured), not below the file descriptor limit (\(descriptors)); lower it or raise the "
                    + "limit (ulimit -n)")
        }
        self.limits = limits
        self.maxConnections = limits.maxConnections ?? descriptors?.defaultMaxConnections ?? 1_024
        self.descriptors = descriptors
        self.metrics = metrics
        self.logger = logger
    }

    /// The HTTP/1.1 server of one listener under this policy, for `Application(router:server:...)`.
    func http1() -> HTTPServerBuilder {
        HTTPServerBuilder { responder in
            GuardedHTTP1Channel(
                http1: HTTP1Channel(
                    responder: responder,
                    configuration: .init(additionalChannelHandlers: [self.deadlineHandler()])),
                policy: self)
        }
    }

    /// A new connection's deadline handler.
    private func deadlineHandler() -> ConnectionDeadlineHandler {
        let metrics = self.metrics
        return ConnectionDeadlineHandler(
            readTimeout: limits.readTimeout, idleTimeout: limits.idleTimeout, logger: logger,
            expired: { metrics.connectionClosed(reason: $0.rawValue) })
    }

    /// Counts a new connection in, or refuses it when the maximum is open.
    fileprivate func admit() -> Bool {
        let admitted = open.withLock { open in
            guard open < maxConnections else { return false }
            open += 1
            metrics.openConnections(open)
            return true
        }
        if admitted { return true }
        metrics.connectionRefused()
        logger.debug("refusing a connection: the maximum is open", metadata: ["max": "\(maxConnections)"])
        return false
    }

    /// Counts a connection out.
    fileprivate func release() {
        open.withLock { open in
            open -= 1
            metrics.openConnections(open)
        }
    }
}

/// Hummingbird's HTTP/1.1 channel behind a ``ConnectionPolicy``: admitted connections get the deadline handler,
/// the others are closed before any handler is added.
private struct GuardedHTTP1Channel: ServerChildChannel {
    typealias Value = HTTP1Channel.Value

    /// Why the setup of a connection failed: it was over the maximum. NIO drops the connection quietly.
    struct Refused: Error {}

    let http1: HTTP1Channel
    let policy: ConnectionPolicy

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        guard policy.admit() else {
            channel.close(promise: nil)
            return channel.eventLoop.makeFailedFuture(Refused())
        }
        let policy = self.policy
        channel.closeFuture.whenComplete { _ in policy.release() }
        // NIO leaves a connection whose setup failed open: close it.
        return http1.setup(channel: channel, logger: logger).flatMapErrorThrowing { error in
            channel.close(promise: nil)
            throw error
        }
    }

    func handle(value: Value, logger: Logger) async {
        await http1.handle(value: value, logger: logger)
    }
}
