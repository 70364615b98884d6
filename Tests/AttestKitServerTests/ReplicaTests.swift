import AsyncHTTPClient
import AttestKit
import AttestKitTestSupport
import AttestKitTesting
import AttestKitWire
import Crypto
import Foundation
import NIOCore
import NIOHTTP1
import Testing

/// Two `attestkit serve` processes sharing one PostgreSQL database behave as one service: a challenge issued by
/// one is consumed by the other, of 50 concurrent copies of one assertion spread over both exactly one is
/// accepted, the per-app attestation budget is one budget for both, and a dashboard session opened on one is
/// honoured by the other until a logout on either ends it on both.
@Suite("Replicas sharing PostgreSQL", .serialized)
struct ReplicaTests {
    static var postgresWanted: Bool {
        let environment = ProcessInfo.processInfo.environment
        return environment["ATTESTKIT_REQUIRE_POSTGRES"] == "1" || environment["POSTGRES_HOST"] != nil
    }

    static var postgresURL: String { PostgresTestServer.storageURL(schemaPrefix: "replicas_") }

    @Test(
        "two server processes on one PostgreSQL: shared challenges, one winner of 50 concurrent copies",
        .enabled(if: postgresWanted, "PostgreSQL is not configured (run scripts/postgres)"),
        .timeLimit(.minutes(3)))
    func twoProcesses() async throws {
        let workspace = FileManager.default.temporaryDirectory.appendingPathComponent("replicas-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: workspace, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: workspace) }
        let apple = try SoftwareApple()
        let appID = try AppID("ABCDE12345.com.example.replicas")
        let device = SimulatedDevice(apple: apple, configuration: .init(appID: appID, environment: .development))
        let storage = Self.postgresURL
        let budget = ["--set", "rate-limit.attestations-per-app=\(Self.appBudget)"]
        let first = try ServeProcess(apple: apple, appID: appID, storage: storage, arguments: budget)
        defer { first.stop() }
        let second = try ServeProcess(apple: apple, appID: appID, storage: storage, arguments: budget)
        defer { second.stop() }
        let a = "http://127.0.0.1:\(try await first.port())"
        let b = "http://127.0.0.1:\(try await second.port())"
        let client = HTTPClient(eventLoopGroupProvider: .singleton)
        do {
            try await Self.exercise(client: client, a: a, b: b, device: device)
            try await client.shutdown()
        } catch {
            try? await client.shutdown()
            throw error
        }
    }

    static func exercise(client: HTTPClient, a: String, b: String, device: SimulatedDevice) async throws {

        // Attest through A.
        let keyID = device.generateKey()
        let twin = try device.twin()
        let (registered, _) = try await ServeClient.attest(client, a, device, keyID)
        #expect(registered.status == 201)

        // B knows the key: a second genuine attestation of it through B is a duplicate.
        let (duplicate, _) = try await ServeClient.attest(client, b, twin, keyID)
        #expect(duplicate.status == 409 && duplicate.code == "key_exists")

        // A challenge issued by A is consumed by B, once.
        let assertChallenge = try await ServeClient.post(
            client, a + "/v1/challenges", #"{"purpose":"assert","keyId":"\#(keyID.base64)"}"#)
        let assertID = try #require(assertChallenge.json["challengeId"] as? String)
        let bound = try ServeClient.assertion(device, keyID, freshness: .challenge(assertID), challengeID: assertID)
        let onB = try await ServeClient.post(client, b + "/v1/assertions/verify", bound)
        #expect(onB.status == 200, "\(onB.code ?? "")")
        let replayOnA = try await ServeClient.post(client, a + "/v1/assertions/verify", bound)
        #expect(replayOnA.status == 409)

        // 50 concurrent copies of one assertion, alternating between the replicas: exactly one 200.
        let copy = try ServeClient.assertion(device, keyID, freshness: ServeClient.now, challengeID: nil)
        let statuses = try await withThrowingTaskGroup(of: (UInt, String?).self) { group in
            for index in 0..<50 {
                let base = index.isMultiple(of: 2) ? a : b
                group.addTask {
                    let answer = try await ServeClient.post(client, base + "/v1/assertions/verify", copy)
                    return (answer.status, answer.code)
                }
            }
            var all: [(UInt, String?)] = []
            for try await status in group { all.append(status) }
            return all
        }
        #expect(statuses.filter { $0.0 == 200 }.count == 1)
        #expect(statuses.filter { $0.0 == 409 && $0.1 == "counter_not_increasing" }.count == 49)

        // The per-app budget is shared: one key was registered above; the others alternate between the
        // replicas, and the one past the budget is refused by whichever replica it reaches.
        for index in 1...Self.appBudget {
            let base = index.isMultiple(of: 2) ? a : b
            let answer = try await ServeClient.attest(client, base, device, device.generateKey()).answer
            if index < Self.appBudget {
                #expect(answer.status == 201, "\(index): \(answer.code ?? "")")
            } else {
                #expect(answer.status == 429 && answer.code == "rate_limited", "\(index): \(answer.code ?? "")")
            }
        }
    }

    /// The attestations per minute each replica allows for the app.
    static let appBudget = 4

    @Test(
        "a dashboard session opened on one replica is honoured by the other; a logout on either ends it on both",
        .enabled(if: postgresWanted, "PostgreSQL is not configured (run scripts/postgres)"),
        .timeLimit(.minutes(3)))
    func dashboardSessions() async throws {
        let apple = try SoftwareApple()
        let appID = try AppID("ABCDE12345.com.example.replicas")
        let storage = Self.postgresURL
        let admin = ["ATTESTKIT_ADMIN_TOKEN": Self.adminToken]
        let first = try ServeProcess(apple: apple, appID: appID, storage: storage, environment: admin)
        defer { first.stop() }
        let second = try ServeProcess(apple: apple, appID: appID, storage: storage, environment: admin)
        defer { second.stop() }
        let a = "http://127.0.0.1:\(try await first.port())"
        let b = "http://127.0.0.1:\(try await second.port())"
        // The redirects are the answers under test, not to be followed.
        let client = HTTPClient(
            eventLoopGroupProvider: .singleton, configuration: .init(redirectConfiguration: .disallow))
        do {
            try await Self.exerciseDashboard(client: client, a: a, b: b)
            try await client.shutdown()
        } catch {
            try? await client.shutdown()
            throw error
        }
    }

    static func exerciseDashboard(client: HTTPClient, a: String, b: String) async throws {
        // Log in on A (a browser's form post from the dashboard's own page).
        let login = try await Self.send(
            client, .POST, a + "/dashboard/login", body: "token=\(Self.adminToken)",
            headers: [("Content-Type", "application/x-www-form-urlencoded"), ("Sec-Fetch-Site", "same-origin")])
        #expect(login.status == 303, "\(login.status)")
        let setCookie = try #require(login.headers.first(name: "Set-Cookie"))
        let cookie = String(try #require(setCookie.split(separator: ";").first))
        #expect(cookie.hasPrefix("attestkit_session=") && cookie.count > "attestkit_session=".count)

        // B honours the session A opened, and so does A.
        for base in [b, a] {
            let page = try await Self.send(client, .GET, base + "/dashboard", headers: [("Cookie", cookie)])
            #expect(page.status == 200, "\(base): \(page.status)")
        }

        // Logging out on B ends the session on A too.
        let logout = try await Self.send(
            client, .POST, b + "/dashboard/logout", headers: [("Cookie", cookie), ("Sec-Fetch-Site", "same-origin")])
        #expect(logout.status == 303, "\(logout.status)")
        for base in [a, b] {
            let after = try await Self.send(client, .GET, base + "/dashboard", headers: [("Cookie", cookie)])
            #expect(after.status == 401, "\(base): \(after.status)")
        }
    }

    /// Sends a request and returns the status and headers (the body is read and dropped).
    static func send(
        _ client: HTTPClient, _ method: HTTPMethod, _ url: String, body: String? = nil,
        headers: [(String, String)] = []
    ) async throws -> (status: UInt, headers: HTTPHeaders) {
        var request = HTTPClientRequest(url: url)
        request.method = method
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        if let body { request.body = .bytes(ByteBuffer(string: body)) }
        let response = try await client.execute(request, timeout: .seconds(60))
        _ = try await response.body.collect(upTo: 1 << 20)
        return (response.status.code, response.headers)
    }

    /// The admin token both replicas share.
    static let adminToken = "replica-admin-token-0123456789abcdef"
}
