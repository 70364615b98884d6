import AsyncHTTPClient
import AttestKit
import AttestKitAppleMock
import AttestKitTestSupport
import AttestKitTesting
import Foundation
import NIOCore
import NIOHTTP1
import Testing

/// `attestkit serve` on PostgreSQL, told to stop: on SIGTERM `/ready` answers 503 `draining` at once while requests
/// are still served, then after the drain period the process exits 0; a second SIGTERM ends the drain early. Time
/// bounds here only tell an answer from a hang: the machine may be slow.
@Suite("Draining replicas", .serialized)
struct DrainingReplicaTests {
    /// A replica on PostgreSQL draining for `drainPeriod` seconds, logging at notice.
    static func replica(drainPeriod: Int) throws -> ServeProcess {
        let apple = try SoftwareApple()
        let appID = try AppID("ABCDE12345.com.example.draining")
        return try ServeProcess(
            apple: apple, appID: appID, storage: ReplicaTests.postgresURL,
            arguments: [
                "--set", "shutdown.drain-period=\(drainPeriod)", "--set", "shutdown.grace-period=900",
                "--set", "log.level=notice", "--set", "log.format=text",
            ])
    }

    /// `GET path`: the status and the error code, or `nil` when nothing answers.
    static func get(_ client: HTTPClient, _ url: String) async -> (status: UInt, code: String?)? {
        guard let response = try? await client.execute(HTTPClientRequest(url: url), timeout: .seconds(10)),
            let body = try? await response.body.collect(upTo: 1 << 16)
        else { return nil }
        let json = (try? JSONSerialization.jsonObject(with: Data(body.readableBytesView))) as? [String: Any]
        return (response.status.code, (json?["error"] as? [String: Any])?["code"] as? String)
    }

    /// Polls `/ready` until it answers 503 `draining` (within 30 s).
    static func waitForDraining(_ client: HTTPClient, _ base: String) async throws -> Bool {
        let start = ContinuousClock.now
        while start.duration(to: .now) < .seconds(30) {
            if let ready = await get(client, base + "/ready"), ready.status == 503, ready.code == "draining" {
                return true
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        return false
    }

    static func withClient(_ body: (HTTPClient) async throws -> Void) async throws {
        let client = HTTPClient(eventLoopGroupProvider: .singleton)
        do {
            try await body(client)
            try await client.shutdown()
        } catch {
            try? await client.shutdown()
            throw error
        }
    }

    @Test(
        "SIGTERM: /ready answers 503 draining while requests are still served, then the process exits 0",
        .enabled(if: ReplicaTests.postgresWanted, "PostgreSQL is not configured (run scripts/postgres)"),
        .timeLimit(.minutes(3)))
    func drainsThenExits() async throws {
        let drainPeriod = 4
        let serve = try Self.replica(drainPeriod: drainPeriod)
        defer { serve.stop() }
        let base = "http://127.0.0.1:\(try await serve.port())"
        try await Self.withClient { client in
            #expect(await Self.get(client, base + "/ready")?.status == 200)
            let signalled = ContinuousClock.now
            serve.signal(SIGTERM)
            let draining = try await Self.waitForDraining(client, base)
            #expect(draining, "\(serve.log)")
            // Still served while draining: an app route and the liveness probe.
            let challenge = try await ServeClient.post(client, base + "/v1/challenges", #"{"purpose":"attest"}"#)
            #expect(challenge.status == 201)
            #expect(await Self.get(client, base + "/health")?.status == 200)
            let status = await serve.waitForExit(within: .seconds(120))
            #expect(status == 0 && serve.exitedNormally, "\(serve.log)")
            // It held the listener open for the drain period (less a little for the signal's delivery).
            #expect(signalled.duration(to: .now) >= .milliseconds(drainPeriod * 1_000 - 500))
            #expect(serve.log.contains("draining: /ready answers 503 draining"), "\(serve.log)")
            #expect(serve.log.contains("drain period over: the listener closes"), "\(serve.log)")
        }
    }

    @Test(
        "a second SIGTERM ends the drain early and the process still exits 0",
        .enabled(if: ReplicaTests.postgresWanted, "PostgreSQL is not configured (run scripts/postgres)"),
        .timeLimit(.minutes(3)))
    func secondSignalEndsDrain() async throws {
        let serve = try Self.replica(drainPeriod: 600)
        defer { serve.stop() }
        let base = "http://127.0.0.1:\(try await serve.port())"
        try await Self.withClient { client in
            serve.signal(SIGTERM)
            let draining = try await Self.waitForDraining(client, base)
            #expect(draining, "\(serve.log)")
            let secondSignal = ContinuousClock.now
            serve.signal(SIGTERM)
            // Far sooner than the 600 s drain period.
            let status = await serve.waitForExit(within: .seconds(120))
            #expect(status == 0 && serve.exitedNormally, "\(serve.log)")
            #expect(secondSignal.duration(to: .now) < .seconds(120))
            #expect(serve.log.contains("drain cut short"), "\(serve.log)")
        }
    }

    @Test(
        "the grace period ends a shutdown that an in-flight request would hold open",
        .enabled(if: ReplicaTests.postgresWanted, "PostgreSQL is not configured (run scripts/postgres)"),
        .timeLimit(.minutes(3)))
    func gracePeriodBoundsShutdown() async throws {
        let apple = try SoftwareApple()
        let workspace = FileManager.default.temporaryDirectory.appendingPathComponent("grace-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: workspace, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: workspace) }
        // Apple holds every DeviceCheck query for two minutes; the service waits up to 100 s for it.
        let appleMock = try ServeMockApple(
            apple: apple, faults: [MockAppleFault(.delay(.seconds(120)), endpoint: .queryTwoBits, count: 100)],
            workspace: workspace)
        let mock = appleMock.mock
        try await appleMock.running {
            let serve = try ServeProcess(
                apple: apple, appID: try AppID("ABCDE12345.com.example.draining"), storage: ReplicaTests.postgresURL,
                arguments: try await appleMock.settings() + [
                    "--set", "apple.timeout=100", "--set", "shutdown.drain-period=0",
                    "--set", "shutdown.grace-period=2",
                ])
            defer { serve.stop() }
            let base = "http://127.0.0.1:\(try await serve.port())"
            try await Self.withClient { client in
                let query = Task {
                    var request = HTTPClientRequest(url: base + "/v1/devicecheck/query")
                    request.method = .POST
                    request.headers.add(name: "Authorization", value: ServeProcess.backendAuthorization)
                    request.headers.add(name: "Content-Type", value: "application/json")
                    request.body = .bytes(ByteBuffer(string: #"{"deviceToken":"\#(Fixture.deviceToken())"}"#))
                    return try? await client.execute(request, timeout: .seconds(150)).status.code
                }
                defer { query.cancel() }
                let start = ContinuousClock.now
                while await mock.state.requestCount(.queryTwoBits) == 0, start.duration(to: .now) < .seconds(60) {
                    try await Task.sleep(for: .milliseconds(20))
                }
                #expect(await mock.state.requestCount(.queryTwoBits) == 1, "the query is in flight at Apple")
                let signalled = ContinuousClock.now
                serve.signal(SIGTERM)
                // Ended by the 2 s grace period, far sooner than the request's 100 s.
                let status = await serve.waitForExit(within: .seconds(60))
                #expect(status != nil, "\(serve.log)")
                #expect(signalled.duration(to: .now) < .seconds(60))
            }
        }
    }
}
