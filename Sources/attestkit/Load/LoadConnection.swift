import NIOCore
import NIOPosix

/// One keep-alive HTTP/1.1 connection of `attestkit load` that sends requests encoded in advance, one at a time, and
/// reads only each answer's status line, its `Content-Length` and, for a refusal, its body: a load generator close
/// to wrk's cost, so that the measurement is the server's.
///
/// A whole sequence runs on the connection's event loop, on raw bytes (no HTTP codec in the pipeline): the next
/// request is written as soon as the previous answer has arrived whole, without a hop through Swift concurrency,
/// so a key's assertions reach the server in the order of their counters and the generator costs about a read and
/// a write per request. An answer it cannot frame (no `Content-Length`, a chunked body, a head over 16 KiB) fails
/// the run.
final class LoadConnection: Sendable {
    private let channel: any Channel
    private let sequencer: Sequencer

    private init(channel: any Channel, sequencer: Sequencer) {
        self.channel = channel
        self.sequencer = sequencer
    }

    /// Connects to `host`:`port` on the shared event loop group.
    static func connect(host: String, port: Int) async throws -> LoadConnection {
        let sequencer = Sequencer()
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(sequencer) }
            }
            .connect(host: host, port: port).get()
        return LoadConnection(channel: channel, sequencer: sequencer)
    }

    /// One request, encoded in advance: its head and body as they go on the wire.
    struct Request: Sendable {
        let bytes: ByteBuffer
    }

    /// One HTTP/1.1 `POST path` with a JSON `body` and the given extra headers.
    static func request(path: String, body: [UInt8], headers: [(String, String)]) -> Request {
        var head = "POST \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        head += "Content-Length: \(body.count)\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        head += "\r\n"
        var bytes = ByteBuffer(string: head)
        bytes.writeBytes(body)
        return Request(bytes: bytes)
    }

    /// An answer other than 200: its status and the start of its body (to tell why).
    struct Refusal: Error {
        let status: UInt
        let body: [UInt8]
    }

    /// Sends `requests` in order, each after the answer to the previous one, and returns the latency of each answer
    /// in milliseconds (from the request's write to the end of its answer).
    /// - Throws: ``Refusal`` at the first answer that is not 200; the channel's error when the connection fails.
    func send(_ requests: [Request]) async throws -> [Double] {
        let promise = channel.eventLoop.makePromise(of: [Double].self)
        channel.eventLoop.execute { [sequencer] in sequencer.start(requests, promise: promise) }
        return try await promise.futureResult.get()
    }

    /// Closes the connection.
    func close() async {
        try? await channel.close()
    }

    /// An answer that cannot be framed.
    struct UnreadableAnswer: Error, CustomStringConvertible {
        let description: String
    }

    /// Writes each request once the previous answer has arrived whole, and collects the latencies.
    private final class Sequencer: ChannelInboundHandler, @unchecked Sendable {
        typealias InboundIn = ByteBuffer
        typealias OutboundOut = ByteBuffer

        // Touched only on the channel's event loop.
        private var context: ChannelHandlerContext?
        private var requests: [Request] = []
        private var next = 0
        private var promise: EventLoopPromise<[Double]>?
        private var latencies: [Double] = []
        private var sent = NIODeadline.now()
        private var received = ByteBuffer()

        func handlerAdded(context: ChannelHandlerContext) { self.context = context }

        func handlerRemoved(context: ChannelHandlerContext) { self.context = nil }

        func start(_ requests: [Request], promise: EventLoopPromise<[Double]>) {
            guard self.promise == nil else {
                promise.fail(ChannelError.inappropriateOperationForState)
                return
            }
            self.requests = requests
            self.next = 0
            self.promise = promise
            latencies = []
            latencies.reserveCapacity(requests.count)
            writeNext()
        }

        private func writeNext() {
            guard next < requests.count else {
                finish(.success(latencies))
                return
            }
            guard let context else {
                finish(.failure(ChannelError.ioOnClosedChannel))
                return
            }
            let request = requests[next]
            next += 1
            sent = .now()
            context.writeAndFlush(wrapOutboundOut(request.bytes), promise: nil)
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            var bytes = unwrapInboundIn(data)
            received.writeBuffer(&bytes)
            while promise != nil {
                let answer: (status: UInt, body: [UInt8])?
                do {
                    answer = try Self.answer(from: &received)
                } catch {
                    finish(.failure(error))
                    return
                }
                guard let answer else { return }
                guard answer.status == 200 else {
                    finish(.failure(Refusal(status: answer.status, body: answer.body)))
                    return
                }
                latencies.append(Double((NIODeadline.now() - sent).nanoseconds) / 1e6)
                writeNext()
            }
        }

        /// Takes one whole answer from the front of `buffer`: its status and body, or `nil` until it has arrived.
        static func answer(
            from buffer: inout ByteBuffer
        ) throws(UnreadableAnswer) -> (status: UInt, body: [UInt8])? {
            let bytes = Array(buffer.readableBytesView.prefix(16_384))
            guard let end = headEnd(bytes) else {
                guard bytes.count < 16_384 else {
                    throw UnreadableAnswer(description: "an answer's head is over 16 KiB")
                }
                return nil
            }
            let lines = bytes[..<end].split(separator: UInt8(ascii: "\n")).map { line in
                line.last == UInt8(ascii: "\r") ? line.dropLast() : line
            }
            let prefix = Array("HTTP/1.1 ".utf8)
            guard let first = lines.first, first.count >= prefix.count + 3, first.starts(with: prefix),
                let status = UInt(String(decoding: first.dropFirst(prefix.count).prefix(3), as: UTF8.self))
            else { throw UnreadableAnswer(description: "an answer without an HTTP/1.1 status line") }
            var length: Int?
            for line in lines.dropFirst() {
                guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else { continue }
                let name = String(decoding: line[..<colon], as: UTF8.self).lowercased()
                let value = String(decoding: line[(colon + 1)...], as: UTF8.self).filter { $0 != " " && $0 != "\t" }
                if name == "transfer-encoding" {
                    throw UnreadableAnswer(description: "a chunked answer (Transfer-Encoding: \(value))")
                }
                if name == "content-length" {
                    guard length == nil, let parsed = Int(value), parsed >= 0 else {
                        throw UnreadableAnswer(description: "an answer with an unreadable Content-Length")
                    }
                    length = parsed
                }
            }
            guard let length else { throw UnreadableAnswer(description: "an answer without Content-Length") }
            guard buffer.readableBytes >= end + length else { return nil }
            buffer.moveReaderIndex(forwardBy: end)
            let body = status == 200 ? [] : Array(buffer.readableBytesView.prefix(min(length, 4_096)))
            buffer.moveReaderIndex(forwardBy: length)
            buffer.discardReadBytes()
            return (status, body)
        }

        /// The length of the head (through its blank line) at the start of `bytes`, or `nil` if it is not whole.
        private static func headEnd(_ bytes: [UInt8]) -> Int? {
            guard bytes.count >= 4 else { return nil }
            for index in 3..<bytes.count
            where bytes[index] == 10 && bytes[index - 1] == 13 && bytes[index - 2] == 10 && bytes[index - 3] == 13 {
                return index + 1
            }
            return nil
        }

        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            finish(.failure(error))
            context.close(promise: nil)
        }

        func channelInactive(context: ChannelHandlerContext) {
            finish(.failure(ChannelError.ioOnClosedChannel))
            context.fireChannelInactive()
        }

        private func finish(_ result: Result<[Double], any Error>) {
            guard let promise else { return }
            self.promise = nil
            requests = []
            promise.completeWith(result)
        }
    }
}
