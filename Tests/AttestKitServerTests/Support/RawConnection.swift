import Foundation
import NIOCore
import NIOPosix
import Synchronization

/// A TCP connection to 127.0.0.1 that sends exactly the bytes a test gives it, to play stalled clients, and records
/// when the server closed it and when bytes last arrived. Non-blocking (NIO), so thousands can be open while the
/// server runs in the same process.
final class RawConnection: Sendable {
    private final class Recorder: ChannelInboundHandler, Sendable {
        typealias InboundIn = ByteBuffer

        struct State {
            var received: [UInt8] = []
            var lastReadAt: ContinuousClock.Instant?
            var closedAt: ContinuousClock.Instant?
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
    let openedAt: ContinuousClock.Instant
    private let channel: any Channel
    private let recorder: Recorder

    private init(channel: any Channel, recorder: Recorder, openedAt: ContinuousClock.Instant) {
        self.channel = channel
        self.recorder = recorder
        self.openedAt = openedAt
    }

    /// Connects to `port` on loopback.
    static func open(port: Int) async throws -> RawConnection {
        let recorder = Recorder()
        let openedAt = ContinuousClock.now
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(recorder) }
            }
            .connect(host: "127.0.0.1", port: port).get()
        return RawConnection(channel: channel, recorder: recorder, openedAt: openedAt)
    }

    /// Sends `text` as is.
    func send(_ text: String) async throws {
        try await channel.writeAndFlush(ByteBuffer(string: text)).get()
    }

    /// Everything received so far, as text.
    var received: String { recorder.state.withLock { String(decoding: $0.received, as: UTF8.self) } }

    /// When bytes last arrived, if ever.
    var lastReadAt: ContinuousClock.Instant? { recorder.state.withLock { $0.lastReadAt } }

    /// When the connection closed, if it did.
    var closedAt: ContinuousClock.Instant? { recorder.state.withLock { $0.closedAt } }

    /// Waits until `condition` holds or `limit` passes; returns whether it held.
    func wait(upTo limit: Duration, for condition: (RawConnection) -> Bool) async throws -> Bool {
        let end = ContinuousClock.now + limit
        while !condition(self) {
            guard ContinuousClock.now < end else { return false }
            try await Task.sleep(for: .milliseconds(10))
        }
        return true
    }

    /// Waits up to `limit` for the server to close the connection; returns when it did, or `nil`.
    func closed(within limit: Duration) async throws -> ContinuousClock.Instant? {
        _ = try await wait(upTo: limit) { $0.closedAt != nil }
        return closedAt
    }

    /// Closes the connection from this side.
    func close() async {
        try? await channel.close()
    }
}

/// A TCP listener on 127.0.0.1 that accepts connections and never answers: a hung Apple.
final class HungListener: Sendable {
    private final class Swallow: ChannelInboundHandler, Sendable {
        typealias InboundIn = ByteBuffer
        func channelRead(context: ChannelHandlerContext, data: NIOAny) {}
    }

    /// The port it listens on.
    let port: Int
    private let channel: any Channel

    private init(channel: any Channel, port: Int) {
        self.channel = channel
        self.port = port
    }

    /// Starts listening on a free port.
    static func start() async throws -> HungListener {
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(Swallow()) }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        guard let port = channel.localAddress?.port else { throw HarnessError("the hung listener has no port") }
        return HungListener(channel: channel, port: port)
    }

    /// `http://127.0.0.1:PORT`.
    var url: String { "http://127.0.0.1:\(port)" }

    /// Stops listening (accepted connections stay until their clients give up).
    func stop() async {
        try? await channel.close()
    }
}
