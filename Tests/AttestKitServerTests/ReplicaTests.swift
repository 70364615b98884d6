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
/// accepted, and the per-app attestation budget is one budget for both.
@Suite("Replicas sharing PostgreSQL", .serialized)
struct ReplicaTests {
    static var postgresWanted: Bool {
        let environment = ProcessInfo.processInfo.environment
        return environment["ATTESTKIT_REQUIRE_POSTGRES"] == "1" || environment["POSTGRES_HOST"] != nil
    }

    static var postgresURL: String {
        let environment = ProcessInfo.processInfo.environment
        let user = environment["POSTGRES_USER"] ?? "attestkit"
        let password = environment["POSTGRES_PASSWORD"] ?? "attestkit"
        let host = environment["POSTGRES_HOST"] ?? "127.0.0.1"
        let port = environment["POSTGRES_PORT"] ?? "5432"
        let database = environment["POSTGRES_DB"] ?? "attestkit_test"
        let schema = "replicas_\(UInt32.random(in: 0...UInt32.max))"
        return "postgres://\(user):\(password)@\(host):\(port)/\(database)?schema=\(schema)&sslmode=disable"
    }

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
}
