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

    @Test(
        "silent connections past the descriptor limit: refused at once, then closed; normal clients recover",
        .timeLimit(.minutes(1)))
    func silentFlood() async throws {
        let serve = try ServeProcess(
            apple: Fixture.apple, appID: Fixture.appID,
            arguments: ["--set", "http.read-timeout=1", "--set", "http.idle-timeout=1"],
            descriptorLimit: (soft: 128, hard: Self.hardLimit))
        defer { serve.stop() }
        let port = try await serve.port()
        #expect(try Self.openFileLimits(pid: serve.processIdentifier) == "\(Self.hardLimit) \(Self.hardLimit)")

        var configuration = HTTPClient.Configuration()
        configuration.connectionPool.idleTimeout = .milliseconds(100)
        let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        do {
            #expect(try await Self.health(client, port: port) == 200)

            var silent: [RawConnection] = []
            for _ in 0..<Self.silentConnections { silent.append(try await RawConnection.open(port: port)) }
            let flooded = ContinuousClock.now
            // Past the maximum, connections are accepted and closed at once.
            try await Task.sleep(for: .milliseconds(200))
            let refused = silent.filter { $0.closedAt != nil }.count
            #expect(refused >= Self.silentConnections - Self.maxConnections - 5, "refused at once: \(refused)")

            // Normal clients are answered again once the silent ones hit the read timeout (1 s).
            var failures = 0
            var recovered: Duration?
            while ContinuousClock.now - flooded < .seconds(10) {
                if (try? await Self.health(client, port: port)) == 200 {
                    recovered = ContinuousClock.now - flooded
                    break
                }
                failures += 1
                try await Task.sleep(for: .milliseconds(50))
            }
            let after = try #require(recovered, "normal clients were never answered again")
            #expect(after <= .milliseconds(2_500), "normal clients recovered after \(after)")
            print(
                "descriptor exhaustion: \(refused) refused at once; normal clients answered after \(after), \(failures) failed before"
            )

            for connection in silent { _ = try await connection.closed(within: .seconds(3)) }
            let stillOpen = silent.filter { $0.closedAt == nil }.count
            #expect(stillOpen == 0, "silent connections still open 3 s after their read timeout: \(stillOpen)")
            for connection in silent { await connection.close() }

            var metrics = HTTPClientRequest(url: "http://127.0.0.1:\(port)/metrics")
            metrics.method = .GET
            let response = try await client.execute(metrics, timeout: .seconds(5))
            let text = String(buffer: try await response.body.collect(upTo: 1 << 20))
            #expect(
                ConnectionDeadlineTests.counter(text, "attestkit_http_connections_refused_total") >= Double(refused))
            #expect(
                ConnectionDeadlineTests.counter(
                    text, #"attestkit_http_connections_closed_total{reason="read_timeout"}"#)
                    >= Double(Self.maxConnections - 10))
        } catch {
            try? await client.shutdown()
            throw error
        }
        try await client.shutdown()
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
