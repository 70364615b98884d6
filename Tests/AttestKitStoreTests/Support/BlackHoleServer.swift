import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import Testing

/// A fake database host on 127.0.0.1 that accepts TCP connections and then never answers: a lost host, as
/// seen by a client whose packets are dropped, or a server that hangs.
///
/// ``Mode/silent`` never writes a byte, so no connection completes its login. ``Mode/silentAfterLogin``
/// answers the startup message with PostgreSQL's `AuthenticationOk`, `BackendKeyData` and `ReadyForQuery`,
/// then never answers a query: the client holds an open connection with a query in flight. It counts, per
/// connection, whether a query arrived after the login and whether a second one did (the connection was reused).
final class BlackHoleServer: Sendable {
    enum Mode: Sendable, CustomTestStringConvertible {
        case silent
        case silentAfterLogin

        var testDescription: String { self == .silent ? "silent" : "silent after login" }
    }

    private let channel: any Channel
    private let counts: NIOLockedValueBox<Counts>

    /// The port it listens on.
    let port: Int

    /// What the server saw of its connections.
    struct Counts: Sendable {
        /// Connections accepted.
        var accepted = 0
        /// Accepted connections closed since (by the client).
        var closed = 0
        /// Connections that were sent a query after their login (``Mode/silentAfterLogin``).
        var queried = 0
        /// Of those, the ones the client closed since.
        var queriedClosed = 0
        /// Connections that were sent bytes twice after their login: a second query on a connection whose first
        /// was never answered (the bytes of one query arrive in one read on loopback).
        var reused = 0
    }

    /// Connections accepted so far.
    var accepted: Int { counts.withLockedValue { $0.accepted } }
    /// Accepted connections closed since (by the client).
    var closed: Int { counts.withLockedValue { $0.closed } }
    /// Everything counted so far.
    var seen: Counts { counts.withLockedValue { $0 } }

    private init(channel: any Channel, counts: NIOLockedValueBox<Counts>) {
        self.channel = channel
        self.counts = counts
        self.port = channel.localAddress?.port ?? 0
    }

    static func start(_ mode: Mode) async throws -> BlackHoleServer {
        let counts = NIOLockedValueBox(Counts())
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.backlog, value: 16)
            .childChannelInitializer { child in
                child.eventLoop.makeCompletedFuture {
                    counts.withLockedValue { $0.accepted += 1 }
                    try child.pipeline.syncOperations.addHandler(Handler(mode: mode, counts: counts))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        return BlackHoleServer(channel: channel, counts: counts)
    }

    /// Stops listening; accepted connections stay until their client closes them.
    func stop() async {
        try? await channel.close()
    }

    private final class Handler: ChannelInboundHandler {
        typealias InboundIn = ByteBuffer
        typealias OutboundOut = ByteBuffer

        let mode: Mode
        let counts: NIOLockedValueBox<Counts>
        var loggedIn = false
        /// Reads after the login.
        var queries = 0

        init(mode: Mode, counts: NIOLockedValueBox<Counts>) {
            self.mode = mode
            self.counts = counts
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            // The startup message (no TLS request: the client uses sslmode disable) is a few dozen bytes, read
            // at once on loopback.
            guard mode == .silentAfterLogin else { return }
            guard !loggedIn else {
                queries += 1
                let queries = queries
                counts.withLockedValue { counts in
                    if queries == 1 { counts.queried += 1 }
                    if queries == 2 { counts.reused += 1 }
                }
                return
            }
            loggedIn = true
            var buffer = context.channel.allocator.buffer(capacity: 32)
            buffer.writeInteger(UInt8(ascii: "R"))  // AuthenticationOk
            buffer.writeInteger(Int32(8))
            buffer.writeInteger(Int32(0))
            buffer.writeInteger(UInt8(ascii: "K"))  // BackendKeyData
            buffer.writeInteger(Int32(12))
            buffer.writeInteger(Int32(4_242))
            buffer.writeInteger(Int32(1_234))
            buffer.writeInteger(UInt8(ascii: "Z"))  // ReadyForQuery, idle
            buffer.writeInteger(Int32(5))
            buffer.writeInteger(UInt8(ascii: "I"))
            context.writeAndFlush(wrapOutboundOut(buffer), promise: nil)
        }

        func channelInactive(context: ChannelHandlerContext) {
            let queried = queries > 0
            counts.withLockedValue { counts in
                counts.closed += 1
                if queried { counts.queriedClosed += 1 }
            }
            context.fireChannelInactive()
        }
    }
}
