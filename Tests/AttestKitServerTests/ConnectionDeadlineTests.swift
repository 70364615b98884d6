import AttestKitServer
import AttestKitTestSupport
import Foundation
import Testing

/// Stalled connections are closed when their deadline passes (`http.read-timeout`, `http.idle-timeout`), over real
/// sockets on loopback, and a slow client never delays another one.
@Suite("Connection deadlines")
struct ConnectionDeadlineTests {
    static let read = Duration.seconds(1)
    static let idle = Duration.seconds(2)
    /// How late a close may come: the event loop's timer, the client's 10 ms polling, a loaded machine.
    static let slack = Duration.seconds(1)
    /// How early it may seem to come: an answer reaches the client after the server started the idle deadline.
    static let early = Duration.milliseconds(250)

    static var options: ServerHarness.Options {
        var options = ServerHarness.Options()
        options.transport = .live  // the connection is the subject
        options.connectionLimits = .init(readTimeout: read, idleTimeout: idle)
        return options
    }

    /// One kind of stalled client: what it sends, and which deadline must close it.
    struct Stall: Sendable, CustomTestStringConvertible {
        let name: String
        /// A request answered first, so that the connection is kept alive and the idle deadline applies.
        let answeredFirst: Bool
        /// Sent after the answer (or at once); `nil` sends nothing.
        let then: String?
        /// The deadline expected to close it, counted from the connection (or from the answer).
        let timeout: Duration
        var testDescription: String { name }
    }

    static let health = "GET /health HTTP/1.1\r\nHost: attestkit\r\n\r\n"

    /// Pipelined requests whose answers, unread, fill a loopback connection's buffers many times over (each answer is
    /// the metrics' exposition, tens of kilobytes), at little cost to the event loops other tests share.
    static let metricsRequests = String(
        repeating: "GET /metrics HTTP/1.1\r\nHost: attestkit\r\nAuthorization: Bearer \(Fixture.backendToken)\r\n\r\n",
        count: 2_000)

    static let stalls: [Stall] = [
        Stall(name: "nothing sent", answeredFirst: false, then: nil, timeout: read),
        Stall(name: "half a request line", answeredFirst: false, then: "POST /v1/chall", timeout: read),
        Stall(
            name: "headers and half a body", answeredFirst: false,
            then: "POST /v1/challenges HTTP/1.1\r\nHost: attestkit\r\nContent-Length: 100\r\n\r\n{\"purpose\":",
            timeout: read),
        Stall(name: "idle after a keep-alive answer", answeredFirst: true, then: nil, timeout: idle),
        Stall(
            name: "half a request line after a keep-alive answer", answeredFirst: true, then: "GET /hea", timeout: read),
    ]

    @Test("each stalled connection is closed when its deadline passes, and counted")
    func stalledConnectionsAreClosed() async throws {
        try await ServerHarness.with(.sqlite, Self.options) { harness in
            let port = try #require(URL(string: harness.apiURL)?.port)
            try await withThrowingTaskGroup(of: Void.self) { group in
                for stall in Self.stalls {
                    group.addTask { try await Self.check(stall, port: port) }
                }
                group.addTask { try await Self.checkDrippingBody(port: port) }
                group.addTask { try await Self.checkAnsweredBeforeItsBody(port: port) }
                try await group.waitForAll()
            }
            let metrics = try await harness.get("/metrics").text
            #expect(Self.counter(metrics, #"attestkit_http_connections_closed_total{reason="read_timeout"}"#) >= 5)
            #expect(Self.counter(metrics, #"attestkit_http_connections_closed_total{reason="idle_timeout"}"#) >= 2)
        }
    }

    @Test("a client that pipelines requests and never reads the answers is closed once it stalls, and counted")
    func clientThatStopsReading() async throws {
        try await ServerHarness.with(.sqlite, Self.options) { harness in
            let port = try #require(URL(string: harness.apiURL)?.port)
            let connection = try await RawConnection.open(port: port, reading: false)
            // Far more answers than the client's receive buffer, the server's socket buffer and the channel's hold:
            // the server stops in the middle of writing one, with every request read.
            connection.queue(Self.metricsRequests)
            let closed = try await connection.closed(within: .seconds(120))
            #expect(closed != nil, "the server keeps a connection whose client reads nothing")
            await connection.close()
            let metrics = try await harness.get("/metrics").text
            #expect(Self.counter(metrics, #"attestkit_http_connections_closed_total{reason="write_timeout"}"#) >= 1)
        }
    }

    /// Runs one stall and checks that the server closed it within its timeout, not before.
    static func check(_ stall: Stall, port: Int) async throws {
        let connection = try await RawConnection.open(port: port)
        var start = connection.openedAt
        if stall.answeredFirst {
            try await connection.send(health)
            let answered = try await connection.wait(upTo: .seconds(5)) { $0.received.contains(#"{"status":"ok"}"#) }
            try #require(answered, "\(stall.name): no answer to the first request: \(connection.received)")
            start = try #require(connection.lastReadAt)
        }
        if let then = stall.then {
            if stall.answeredFirst { try await Task.sleep(for: .milliseconds(500)) }
            // Counted from before the send: the server cannot see the bytes earlier, and on a loaded machine the
            // send's return can come a large part of the timeout after the server armed its deadline.
            if stall.answeredFirst { start = .now }
            try await connection.send(then)
        }
        let closedAt = try await connection.closed(within: stall.timeout + slack + .seconds(2))
        await connection.close()
        let after = try #require(closedAt.map { $0 - start }, "\(stall.name): still open")
        #expect(after >= stall.timeout - early, "\(stall.name): closed after \(after)")
        #expect(after <= stall.timeout + slack, "\(stall.name): closed after \(after)")
        print("connection deadline: \(stall.name) closed after \(after)")
    }

    /// A request refused before its body is read (no credential: the audience is checked first) whose body ends after
    /// the answer: the connection is idle from then on, and the idle deadline closes it (it was kept open forever).
    static func checkAnsweredBeforeItsBody(port: Int) async throws {
        let connection = try await RawConnection.open(port: port)
        try await connection.send(
            "POST /v1/assertions/verify HTTP/1.1\r\nHost: attestkit\r\nContent-Length: 1\r\n\r\n")
        let answered = try await connection.wait(upTo: .seconds(5)) { $0.received.contains("\r\n\r\n") }
        try #require(answered, "answered before its body: no answer: \(connection.received)")
        let start = ContinuousClock.now
        try await connection.send("x")
        let closedAt = try await connection.closed(within: idle + slack + .seconds(2))
        await connection.close()
        let after = try #require(closedAt.map { $0 - start }, "answered before its body: still open")
        #expect(after >= idle - early && after <= idle + slack, "answered before its body: closed after \(after)")
        print("connection deadline: answered before its body, closed after \(after)")
    }

    /// A body sent a byte every 200 ms keeps Hummingbird's idle timer alive, but not the read deadline.
    static func checkDrippingBody(port: Int) async throws {
        let connection = try await RawConnection.open(port: port)
        try await connection.send("POST /v1/challenges HTTP/1.1\r\nHost: attestkit\r\nContent-Length: 100\r\n\r\n")
        while connection.closedAt == nil, ContinuousClock.now - connection.openedAt < read + slack + .seconds(1) {
            try? await connection.send(" ")
            try await Task.sleep(for: .milliseconds(200))
        }
        let after = try #require(connection.closedAt.map { $0 - connection.openedAt }, "a dripping body: still open")
        await connection.close()
        #expect(after >= read - early && after <= read + slack, "a dripping body: closed after \(after)")
        print("connection deadline: a dripping body closed after \(after)")
    }

    @Test("a client gone mid-body is a 400 that broke off, not a 500 and a logged bug")
    func clientGoneMidBody() async throws {
        var options = ServerHarness.Options()
        options.transport = .live  // the connection is the subject
        try await ServerHarness.with(.sqlite, options) { harness in
            let port = try #require(URL(string: harness.apiURL)?.port)
            let connection = try await RawConnection.open(port: port)
            try await connection.send(
                "POST /v1/challenges HTTP/1.1\r\nHost: attestkit\r\nContent-Type: application/json\r\n"
                    + "Content-Length: 100\r\n\r\n{\"purpose\"")
            try await Task.sleep(for: .milliseconds(100))
            await connection.close()
            let name = "attestkit_http_requests_total{route=\"/v1/challenges\",method=\"POST\",status="
            var metrics = ""
            let start = ContinuousClock.now
            while Self.counter(metrics, name + "\"400\"}") + Self.counter(metrics, name + "\"500\"}") == 0 {
                try #require(
                    ContinuousClock.now - start < .seconds(60),
                    "never counted: \(metrics.split(separator: "\n").filter { $0.contains("challenges") })")
                try await Task.sleep(for: .milliseconds(20))
                metrics = try await harness.get("/metrics").text
            }
            #expect(Self.counter(metrics, name + "\"500\"}") == 0, "counted as a 500")
            #expect(Self.counter(metrics, name + "\"400\"}") == 1)
        }
    }

    @Test("a slow or silent client never delays another client's request")
    func slowClientsDelayNobody() async throws {
        var options = Self.options
        options.connectionLimits.readTimeout = .seconds(30)
        try await ServerHarness.with(.sqlite, options) { harness in
            let port = try #require(URL(string: harness.apiURL)?.port)
            var stalled: [RawConnection] = []
            for index in 0..<50 {
                let connection = try await RawConnection.open(port: port)
                if index % 2 == 0 {
                    try await connection.send(
                        "POST /v1/challenges HTTP/1.1\r\nHost: attestkit\r\nContent-Length: 100\r\n\r\n{")
                }
                stalled.append(connection)
            }
            for _ in 0..<5 {
                let start = ContinuousClock.now
                let answer = try await harness.post("/v1/challenges", ["purpose": "attest"])
                let elapsed = ContinuousClock.now - start
                #expect(answer.status == 201)
                // A request held behind a stalled client would wait for its 30 s read deadline; 10 s tells that
                // from a loaded machine's slow answer.
                #expect(elapsed < .seconds(10), "a normal request took \(elapsed)")
            }
            #expect(stalled.allSatisfy { $0.closedAt == nil }, "a stalled connection was closed before its deadline")
            for connection in stalled { await connection.close() }
        }
    }

    /// The value of the Prometheus sample `name` (with its labels), or 0.
    static func counter(_ exposition: String, _ name: String) -> Double {
        for line in exposition.split(separator: "\n") where line.hasPrefix(name + " ") {
            return Double(line.dropFirst(name.count + 1)) ?? 0
        }
        return 0
    }
}
