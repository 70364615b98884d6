import AsyncHTTPClient
import AttestKitTestSupport
import Foundation
import NIOCore
import NIOHTTP1
import Testing

/// `attestkit serve` under a low descriptor limit, flooded with silent connections: it raises its soft limit to the
/// hard one, refuses connections past its maximum by closing them at once, closes the silent ones at the read
/// timeout, and answers normal clients again within it.
@Suite("Descriptor exhaustion")
struct DescriptorExhaustionTests {
    static let hardLimit = 256
    /// The default maximum under that limit: 256 minus a reserve of 64.
    static let maxConnections = 192
    static let silentConnections = 300
    /// Long enough for the flood to be open before the first silent connection times out, on a loaded machine.
    static let readTimeout = Duration.seconds(3)

    @Test(
        "silent connections past the descriptor limit: refused at once, then closed; normal clients recover",
        .timeLimit(.minutes(1)))
    func silentFlood() async throws {
        let serve = try ServeProcess(
            apple: Fixture.apple, appID: Fixture.appID,
            arguments: ["--set", "http.read-timeout=3", "--set", "http.idle-timeout=1"],
            descriptorLimit: (soft: 128, hard: Self.hardLimit))
        defer { serve.stop() }
        let port = try await serve.port()
        #expect(try Self.openFileLimits(pid: serve.processIdentifier) == "\(Self.hardLimit) \(Self.hardLimit)")

        var configuration = HTTPClient.Configuration()
        configuration.connectionPool.idleTimeout = .milliseconds(100)
        let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        do {
            #expect(try await Self.health(client, port: port) == 200)
            try await Task.sleep(for: .milliseconds(300))  // the client's pooled connection closes (idle 100 ms)
            try await Self.flood(port: port, client: client)
        } catch {
            try? await client.shutdown()
            throw error
        }
        try await client.shutdown()
    }

    /// Opens the silent connections, then measures how soon a normal client is answered again.
    static func flood(port: Int, client: HTTPClient) async throws {
        let start = ContinuousClock.now
        let silent = try await withThrowingTaskGroup(of: RawConnection.self) { group in
            for _ in 0..<silentConnections { group.addTask { try await RawConnection.open(port: port) } }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        let flooded = ContinuousClock.now
        try #require(flooded - start < readTimeout, "the flood took \(flooded - start)")
        // Past the maximum, connections are accepted and closed at once: all of them long before the first admitted
        // one could reach its read timeout (counted from its accept, after `start`). The server accepts a few per
        // turn of its event loops, so on a loaded machine the last refusals may take a few hundred milliseconds.
        let expected = silentConnections - maxConnections - 5
        var refused = 0
        repeat {
            try await Task.sleep(for: .milliseconds(50))
            refused = silent.filter { $0.closedAt != nil }.count
        } while refused < expected && ContinuousClock.now < start + readTimeout - .milliseconds(500)
        #expect(refused >= expected, "refused at once: \(refused)")

        // Normal clients are refused until the silent ones hit the read timeout, then answered.
        var failures = 0
        var recovered: Duration?
        while ContinuousClock.now - flooded < readTimeout + .seconds(5) {
            if (try? await health(client, port: port)) == 200 {
                recovered = ContinuousClock.now - flooded
                break
            }
            failures += 1
            try await Task.sleep(for: .milliseconds(50))
        }
        let after = try #require(recovered, "normal clients were never answered again")
        #expect(failures > 0, "a normal client was answered at once: the flood did not take every slot")
        #expect(after <= readTimeout + .milliseconds(1_500), "normal clients recovered after \(after)")
        print(
            "descriptor exhaustion: \(silentConnections) silent connections open in \(flooded - start), "
                + "\(refused) refused at once; normal clients answered \(after) after the flood, "
                + "\(failures) attempts refused before")

        for connection in silent { _ = try await connection.closed(within: .seconds(3)) }
        let stillOpen = silent.filter { $0.closedAt == nil }.count
        #expect(stillOpen == 0, "silent connections still open 3 s after their read timeout: \(stillOpen)")
        for connection in silent { await connection.close() }

        var metrics = HTTPClientRequest(url: "http://127.0.0.1:\(port)/metrics")
        metrics.headers.add(name: "Authorization", value: ServeProcess.backendAuthorization)
        let response = try await client.execute(metrics, timeout: .seconds(5))
        let text = String(buffer: try await response.body.collect(upTo: 1 << 20))
        let refusedTotal = ConnectionDeadlineTests.counter(text, "attestkit_http_connections_refused_total")
        #expect(refusedTotal >= Double(refused), "\(text)")
        let closed = ConnectionDeadlineTests.counter(
            text, #"attestkit_http_connections_closed_total{reason="read_timeout"}"#)
        #expect(closed >= Double(maxConnections - 10), "\(text)")
    }

    /// `GET /health`'s status, within 2 s.
    static func health(_ client: HTTPClient, port: Int) async throws -> Int {
        let response = try await client.execute(
            HTTPClientRequest(url: "http://127.0.0.1:\(port)/health"), timeout: .seconds(2))
        _ = try await response.body.collect(upTo: 1 << 16)
        return Int(response.status.code)
    }

    /// `SOFT HARD` of the process's "Max open files", from `/proc`.
    static func openFileLimits(pid: Int32) throws -> String {
        let limits = try String(contentsOfFile: "/proc/\(pid)/limits", encoding: .utf8)
        let line = try #require(limits.split(separator: "\n").first { $0.hasPrefix("Max open files") })
        return line.split(separator: " ").dropFirst(3).prefix(2).joined(separator: " ")
    }
}
