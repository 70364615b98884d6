import Foundation
import NIOCore
import NIOPosix

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
