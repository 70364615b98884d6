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
/// - **idle** (every answer written, nothing received since): the idle timeout. A request answered before its end
///   (refused before its body was read) is idle from its end.
///
/// Whatever the phase, a connection whose answers the client does not read (the channel not writable: its socket's
/// buffer and the channel's 64 KiB full) is closed once it has stayed so for the longer of the read and idle
/// timeouts: a client that pipelines requests and never reads their answers would otherwise hold it for ever, with
/// an answer suspended in the middle of its write and no deadline in force. The window is the longer one so that a
/// slow client draining one large answer (the dashboard, the metrics) has the time a silent one would have.
///
/// It sits after the HTTP codec, where requests are parts; the first bytes of a request that is not yet a part
/// show as a `channelReadComplete`, which every socket read passes down the pipeline. One instance per connection;
/// everything runs on the channel's event loop.
///
/// A phase change only notes the new deadline: the one timer of the connection is not cancelled and scheduled again
/// for every request (which cost more than the rest of this handler, with the event loop's timer queue and its
/// wake-ups), but fires at the earliest deadline set since it was scheduled and then looks at the deadline now in
/// force: none (answering), a later one (it waits again until then), or a passed one (the connection is closed).
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
        /// The connection could not be written for the longer of the read and idle timeouts: the client read too
        /// little of its answers.
        case write = "write_timeout"
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
    /// Whether the read in progress made the connection idle (a request's end, after its answer).
    private var idleSinceThisRead = false
    /// The phase's deadline and what its passing means, or `nil` while answering.
    private var phaseDeadline: (at: NIODeadline, expiry: Expiry)?
    /// When a connection the client stopped reading from is closed, while it is not writable.
    private var stallDeadline: NIODeadline?
    /// The deadline in force: the earlier of the phase's and the stall's.
    private var deadline: (at: NIODeadline, expiry: Expiry)? {
        guard let stallDeadline else { return phaseDeadline }
        guard let phaseDeadline, phaseDeadline.at <= stallDeadline else { return (stallDeadline, .write) }
        return phaseDeadline
    }
    /// The connection's timer and when it fires: never after ``deadline``.
    private var timer: (task: Scheduled<Void>, at: NIODeadline)?

    private var isArmed: Bool { phaseDeadline != nil }

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
        stop()
    }

    func channelActive(context: ChannelHandlerContext) {
        if !isArmed { arm(.reading, context: context) }
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        stop()
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
            if unanswered == 0 {
                // Answered before its body ended (refused before reading it): nothing is owed, so the connection
                // is idle from here, where waiting for an answer that was already written left it open forever.
                // The read that brought the end is not the start of another request.
                arm(.idle, context: context)
                idleSinceThisRead = true
            } else {
                phase = .answering
                disarm()
            }
        }
        context.fireChannelRead(data)
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        // Bytes arrived on an idle connection: a request has begun, even if not yet a whole head.
        if phase == .idle, !idleSinceThisRead { arm(.reading, context: context) }
        idleSinceThisRead = false
        context.fireChannelReadComplete()
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable {
            stallDeadline = nil
        } else if stallDeadline == nil {
            let at = NIODeadline.now() + max(readTimeout, idleTimeout)
            stallDeadline = at
            scheduleIfEarlier(at, context: context)
        }
        context.fireChannelWritabilityChanged()
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .end = unwrapOutboundIn(data) {
            unanswered = max(0, unanswered - 1)
            if unanswered == 0, phase == .answering { arm(.idle, context: context) }
        }
        context.write(data, promise: promise)
    }

    /// Enters `phase` (reading or idle) with a new deadline; the timer moves only if it would fire after it.
    private func arm(_ phase: Phase, context: ChannelHandlerContext) {
        self.phase = phase
        let at = NIODeadline.now() + (phase == .idle ? idleTimeout : readTimeout)
        phaseDeadline = (at, phase == .idle ? .idle : .read)
        scheduleIfEarlier(at, context: context)
    }

    /// Moves the timer to `at` when it would fire later (or is not scheduled).
    private func scheduleIfEarlier(_ at: NIODeadline, context: ChannelHandlerContext) {
        if let timer {
            guard timer.at > at else { return }
            timer.task.cancel()
        }
        schedule(at, context: context)
    }

    /// Leaves the phase's deadline off (answering); a timer still scheduled finds none when it fires, unless the
    /// connection is stalled.
    private func disarm() {
        phaseDeadline = nil
    }

    /// Leaves every deadline off and cancels the timer (the connection is gone).
    private func stop() {
        phaseDeadline = nil
        stallDeadline = nil
        timer?.task.cancel()
        timer = nil
    }

    private func schedule(_ at: NIODeadline, context: ChannelHandlerContext) {
        let task = context.eventLoop.assumeIsolated().scheduleTask(deadline: at) { [self] in
            self.timer = nil
            guard let deadline = self.deadline else { return }
            guard NIODeadline.now() >= deadline.at else {
                self.schedule(deadline.at, context: context)
                return
            }
            self.phaseDeadline = nil
            self.stallDeadline = nil
            self.logger.debug(
                "closing a stalled connection",
                metadata: [
                    "reason": "\(deadline.expiry.rawValue)",
                    "peer": "\(context.channel.remoteAddress?.description ?? "")",
                ])
            self.expired(deadline.expiry)
            context.close(promise: nil)
        }
        timer = (task, at)
    }
}

@available(*, unavailable)
extension ConnectionDeadlineHandler: Sendable {}
