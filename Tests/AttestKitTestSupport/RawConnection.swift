import Foundation
import NIOCore
import NIOPosix
import Synchronization

/// A TCP connection to 127.0.0.1 that sends exactly the bytes a test gives it, to play stalled clients, and records
/// when the server closed it and when bytes last arrived. Non-blocking (NIO), so thousands can be open while the
/// server runs in the same process.
public final class RawConnection: Sendable {
    private final class Recorder: ChannelInboundHandler, Sendable {
        typealias InboundIn = ByteBuffer

        struct State {
            public var received: [UInt8] = []
            public var lastReadAt: ContinuousClock.Instant?
            public var closedAt: ContinuousClock.Instant?
        }

        let state = Mutex(State())

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            let bytes = Array(unwrapInboundIn(data).readableBytesView)
            state.withLock {
                $0.received += bytes
                $0.lastReadAt = .now
            }
        }

        func channelInactive(context: ChannelHandlerContext) {
            state.withLock { $0.closedAt = .now }
            context.fireChannelInactive()
        }

        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            context.close(promise: nil)  // a reset: closed by the server as well
        }
    }

    /// When the connection was asked for (before the server accepted it).
    public let openedAt: ContinuousClock.Instant
    private let channel: any Channel
    private let recorder: Recorder

    private init(channel: any Channel, recorder: Recorder, openedAt: ContinuousClock.Instant) {
        self.channel = channel
        self.recorder = recorder
        self.openedAt = openedAt
    }

    /// Connects to `port` on loopback. With `reading` false the connection never reads what the server sends (and
    /// asks for a small receive buffer): a client that stops reading, whose unread answers fill the server's buffers.
    public static func open(port: Int, reading: Bool = true) async throws -> RawConnection {
        let recorder = Recorder()
        let openedAt = ContinuousClock.now
        var bootstrap = ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
        if !reading {
            bootstrap = bootstrap.channelOption(.autoRead, value: false)
                .channelOption(.socketOption(.so_rcvbuf), value: 4_096)
        }
        let channel = try await bootstrap
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(recorder) }
            }
            .connect(host: "127.0.0.1", port: port).get()
        return RawConnection(channel: channel, recorder: recorder, openedAt: openedAt)
    }

    /// Sends `text` as is.
    public func send(_ text: String) async throws {
        try await channel.writeAndFlush(ByteBuffer(string: text)).get()
    }

    /// Queues `text` without waiting for it to be written (a server that stopped reading never takes it all).
    public func queue(_ text: String) {
        channel.writeAndFlush(ByteBuffer(string: text), promise: nil)
    }

    /// Everything received so far, as text.
    public var received: String { recorder.state.withLock { String(decoding: $0.received, as: UTF8.self) } }

    /// When bytes last arrived, if ever.
    public var lastReadAt: ContinuousClock.Instant? { recorder.state.withLock { $0.lastReadAt } }

    /// When the connection closed, if it did.
    public var closedAt: ContinuousClock.Instant? { recorder.state.withLock { $0.closedAt } }

    /// Waits until `condition` holds or `limit` passes; returns whether it held.
    public func wait(upTo limit: Duration, for condition: (RawConnection) -> Bool) async throws -> Bool {
        let end = ContinuousClock.now + limit
        while !condition(self) {
            guard ContinuousClock.now < end else { return false }
            try await Task.sleep(for: .milliseconds(10))
        }
        return true
    }

    /// Waits up to `limit` for the server to close the connection; returns when it did, or `nil`.
    public func closed(within limit: Duration) async throws -> ContinuousClock.Instant? {
        _ = try await wait(upTo: limit) { $0.closedAt != nil }
        return closedAt
    }

    /// Sends one request as is (it should ask for `Connection: close`) on a new connection and returns everything the
    /// server sent once it closed the connection.
    /// - Throws: When the server has not closed the connection within `limit` (it hung).
    public static func exchange(port: Int, _ request: String, within limit: Duration = .seconds(60)) async throws
        -> String
    {
        struct Unanswered: Error, CustomStringConvertible {
            let description: String
        }
        let connection = try await open(port: port)
        try await connection.send(request)
        guard try await connection.closed(within: limit) != nil else {
            await connection.close()
            throw Unanswered(description: "no answer within \(limit); received so far: \(connection.received)")
        }
        return connection.received
    }

    /// Closes the connection from this side.
    public func close() async {
        try? await channel.close()
    }
}
