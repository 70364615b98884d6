import Logging
import NIOCore
import NIOHTTPTypes

/// Closes a connection whose client does not send a whole request in time, or stays silent too long between
/// requests, so that slow or silent clients cannot hold descriptors.
///
/// Hummingbird's `idleTimeout` restarts with every request part, so a client that drips a body never hits it; this
/// handler keeps one deadline per phase instead:
///
/// - **reading** (from the accept, or from the first bytes of a later request, until the request's end): the read
///   timeout. It covers a connection that sends nothing, half a request line, or headers and half a body.
/// - **answering** (the request is read, its answer not finished): no deadline; the route's own bounds apply.
/// - **idle** (every answer written, nothing received since): the idle timeout.
///
/// It sits after the HTTP codec, where requests are parts; the first bytes of a request that is not yet a part
/// show as a `channelReadComplete`, which every socket read passes down the pipeline. One instance per connection;
/// everything runs on the channel's event loop.
final class ConnectionDeadlineHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    /// Which deadline closed a connection.
    enum Expiry: String, Sendable {
        /// A request was not received in full within the read timeout.
        case read = "read_timeout"
        /// No request began within the idle timeout after the last answer.
        case idle = "idle_timeout"
    }

    private enum Phase {
        case reading
        case answering
        case idle
    }

    private let readTimeout: TimeAmount
    private let idleTimeout: TimeAmount
    private let expired: @Sendable (Expiry) -> Void
    private let logger: Logger
    private var phase = Phase.reading
    /// Requests whose head arrived and whose answer is not yet written in full.
    private var unanswered = 0
    private var deadline: Scheduled<Void>?
    private var isArmed = false

    /// Creates the handler of one connection.
    ///
    /// - Parameters:
    ///   - readTimeout: The time to send a whole request.
    ///   - idleTimeout: The time to wait for the next request after an answer.
    ///   - logger: Receives a debug line per closed connection.
    ///   - expired: Called once when a deadline closes the connection (for metrics).
    init(
        readTimeout: Duration, idleTimeout: Duration, logger: Logger, expired: @escaping @Sendable (Expiry) -> Void
    ) {
        self.readTimeout = TimeAmount(readTimeout)
        self.idleTimeout = TimeAmount(idleTimeout)
        self.logger = logger
        self.expired = expired
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive, !isArmed { arm(.reading, context: context) }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        disarm()
    }

    func channelActive(context: ChannelHandlerContext) {
        if !isArmed { arm(.reading, context: context) }
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        disarm()
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head:
            unanswered += 1
            // A first request keeps the deadline that started at the accept.
            if phase != .reading { arm(.reading, context: context) }
        case .body:
            break
        case .end:
            phase = .answering
            disarm()
        }
        context.fireChannelRead(data)
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        // Bytes arrived on an idle connection: a request has begun, even if not yet a whole head.
        if phase == .idle { arm(.reading, context: context) }
        context.fireChannelReadComplete()
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .end = unwrapOutboundIn(data) {
            unanswered = max(0, unanswered - 1)
            if unanswered == 0, phase == .answering { arm(.idle, context: context) }
        }
        context.write(data, promise: promise)
    }

    /// Enters `phase` (reading or idle) with a new deadline.
    private func arm(_ phase: Phase, context: ChannelHandlerContext) {
        disarm()
        self.phase = phase
        let expiry: Expiry = phase == .idle ? .idle : .read
        let timeout = phase == .idle ? idleTimeout : readTimeout
        isArmed = true
        deadline = context.eventLoop.assumeIsolated().scheduleTask(in: timeout) { [self] in
            self.deadline = nil
            guard self.isArmed else { return }
            self.isArmed = false
            self.logger.debug(
                "closing a stalled connection",
                metadata: [
                    "reason": "\(expiry.rawValue)", "peer": "\(context.channel.remoteAddress?.description ?? "")",
                ])
            self.expired(expiry)
            context.close(promise: nil)
        }
    }

    private func disarm() {
        isArmed = false
        deadline?.cancel()
        deadline = nil
    }
}

@available(*, unavailable)
extension ConnectionDeadlineHandler: Sendable {}
