import NIOCore
import NIOHTTP1
import NIOPosix

/// One keep-alive HTTP/1.1 connection of `attestkit load` that sends requests built in advance and reads only each
/// answer's status (and the body of a refusal): a load generator close to wrk's cost, so that the measurement is the
/// server's.
///
/// Requests go one at a time (the next after the answer to the previous one), so a key's assertions reach the
/// server in the order of their counters.
final class LoadConnection: Sendable {
    private let channel: any Channel
    private let answers: AnswerHandler

    private init(channel: any Channel, answers: AnswerHandler) {
        self.channel = channel
        self.answers = answers
    }

    /// Connects to `host`:`port` on the shared event loop group.
    static func connect(host: String, port: Int) async throws -> LoadConnection {
        let answers = AnswerHandler()
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHTTPClientHandlers()
                    try channel.pipeline.syncOperations.addHandler(answers)
                }
            }
            .connect(host: host, port: port).get()
        return LoadConnection(channel: channel, answers: answers)
    }

    /// One request, encoded in advance: its head and its body.
    struct Request: Sendable {
        let head: HTTPRequestHead
        let body: ByteBuffer
    }

    /// One `POST path` with a JSON `body` and the given extra headers.
    static func request(path: String, body: [UInt8], headers: [(String, String)]) -> Request {
        var head = HTTPRequestHead(version: .http1_1, method: .POST, uri: path)
        head.headers.add(name: "Host", value: "127.0.0.1")
        head.headers.add(name: "Content-Type", value: "application/json")
        head.headers.add(name: "Content-Length", value: String(body.count))
        for (name, value) in headers { head.headers.add(name: name, value: value) }
        return Request(head: head, body: ByteBuffer(bytes: body))
    }

    /// An answer: its status, and its body when the status is not 200 (to tell why).
    struct Answer: Sendable {
        let status: UInt
        let body: [UInt8]
    }

    /// Sends `request` (from ``request(path:body:headers:)``) and returns the answer once it has arrived whole.
    func send(_ request: Request) async throws -> Answer {
        let promise = channel.eventLoop.makePromise(of: Answer.self)
        channel.eventLoop.execute { [answers, channel] in
            answers.expect(promise)
            channel.write(HTTPClientRequestPart.head(request.head), promise: nil)
            channel.write(HTTPClientRequestPart.body(.byteBuffer(request.body)), promise: nil)
            channel.writeAndFlush(HTTPClientRequestPart.end(nil), promise: nil)
        }
        return try await promise.futureResult.get()
    }

    /// Closes the connection.
    func close() async {
        try? await channel.close()
    }

    /// Completes each request's promise with the status of its answer, when the answer's end arrives.
    private final class AnswerHandler: ChannelInboundHandler, @unchecked Sendable {
        typealias InboundIn = HTTPClientResponsePart

        // Touched only on the channel's event loop.
        private var waiting: [EventLoopPromise<Answer>] = []
        private var status: UInt = 0
        private var body: [UInt8] = []

        func expect(_ promise: EventLoopPromise<Answer>) { waiting.append(promise) }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            switch unwrapInboundIn(data) {
            case .head(let head):
                status = head.status.code
                body = []
            case .body(let part):
                if status != 200 { body += part.readableBytesView.prefix(4_096 - min(body.count, 4_096)) }
            case .end:
                if !waiting.isEmpty { waiting.removeFirst().succeed(Answer(status: status, body: body)) }
            }
        }

        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            failAll(error)
            context.close(promise: nil)
        }

        func channelInactive(context: ChannelHandlerContext) {
            failAll(ChannelError.ioOnClosedChannel)
        }

        private func failAll(_ error: any Error) {
            let failed = waiting
            waiting = []
            failed.forEach { $0.fail(error) }
        }
    }
}
