import ArgumentParser
import AsyncHTTPClient
import AttestKit
import AttestKitTesting
import AttestKitWire
import Crypto
import Foundation
import NIOCore

/// `attestkit load`: assertion-verified requests per second and latency of a real `attestkit serve`, measured
/// from another process over loopback HTTP, beside the in-process verification rate.
struct LoadCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "load",
        abstract: "Measure assertion-verified requests/s and p50/p99 latency of attestkit serve (use a release build).",
        discussion: """
            Starts 'attestkit serve' as a child process (this binary) on a free loopback port, trusting a new \
            software Apple, with the given storage; registers --keys simulated keys through POST \
            /v1/attestations; signs --requests assertions per key in advance (each bound to its request with a \
            timestamp); then sends them over --keys concurrent HTTP/1.1 connections, each key's requests in order \
            (so that every counter increases), to POST /v1/assertions/verify. It reports requests per second and \
            latency percentiles of the 200 answers, and in the same run the single-core in-process verification \
            rate (AssertionVerifier alone) for comparison. Every answer must be 200: anything else fails the run.
            """
    )

    @Option(name: .long, help: "The server's storage URL (sqlite:PATH or postgres://...). Default: a temporary SQLite.")
    var storage: String?

    @Option(name: .long, help: "Concurrent keys (one connection each).")
    var keys = 16

    @Option(name: .long, help: "Assertions per key.")
    var requests = 500

    @Option(name: .long, help: "The 'attestkit' binary to run as the server (default: this one).")
    var serverBinary: String?

    @Flag(name: .long, help: "Print JSON.")
    var json = false

    func validate() throws {
        guard (1...256).contains(keys) else { throw ValidationError("--keys is 1 to 256") }
        guard (1...100_000).contains(requests) else { throw ValidationError("--requests is 1 to 100000") }
    }

    func run() async throws {
        let workspace = FileManager.default.temporaryDirectory.appendingPathComponent(
            "attestkit-load-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: workspace, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: workspace) }
        let apple = try SoftwareApple()
        let appID = try AppID("ABCDE12345.com.example.load")
        let device = SimulatedDevice(apple: apple, configuration: .init(appID: appID, environment: .development))
        let server = try ChildServer(
            binary: serverBinary ?? Self.currentBinary(), workspace: workspace, apple: apple, appID: appID,
            storage: storage ?? "sqlite:\(workspace.path)/load.sqlite")
        defer { server.stop() }
        let base = try await server.waitForPort().map { "http://127.0.0.1:\($0)" } ?? ""
        let client = HTTPClient(eventLoopGroupProvider: .singleton)
        do {
            let report = try await measure(
                base: base, backendToken: server.backendToken, device: device, client: client)
            try await client.shutdown()
            print(json ? report.json : report.text)
        } catch {
            try? await client.shutdown()
            throw error
        }
    }

    private func measure(
        base: String, backendToken: String, device: SimulatedDevice, client: HTTPClient
    ) async throws -> LoadReport {
        let http = LoadHTTP(client: client, base: base, backendToken: backendToken)
        var keyIDs: [KeyID] = []
        for _ in 0..<keys {
            let keyID = device.generateKey()
            let challenge = try await http.post("/v1/challenges", ChallengeRequest(purpose: "attest"))
            guard challenge.status == 201, let issued = challenge.decode(ChallengeResponse.self),
                let bytes = Data(base64Encoded: issued.challenge)
            else { throw LoadFailure("challenge: HTTP \(challenge.status)") }
            let object = try device.attestKey(keyID, clientDataHash: Array(SHA256.hash(data: bytes)))
            let registered = try await http.post(
                "/v1/attestations",
                AttestationRequest(
                    keyId: keyID.base64, attestation: Data(object).base64EncodedString(),
                    challengeId: issued.challengeId))
            guard registered.status == 201 else {
                throw LoadFailure("attestation: HTTP \(registered.status) \(registered.errorCode)")
            }
            keyIDs.append(keyID)
        }
        // Sign every request in advance: the measurement is the server's, not the simulated device's.
        let orderBody = #"{"item":"coffee","quantity":1}"#
        let bodyBase64 = Data(orderBody.utf8).base64EncodedString()
        var plans: [[Data]] = []
        for keyID in keyIDs {
            var bodies: [Data] = []
            bodies.reserveCapacity(requests)
            for _ in 0..<requests {
                let milliseconds = Int64(Date().timeIntervalSince1970 * 1_000)
                let binding = try RequestBinding(
                    method: "POST", target: "/v1/orders", body: Array(orderBody.utf8),
                    freshness: .timestamp(milliseconds: milliseconds))
                let assertion = try device.generateAssertion(keyID, clientDataHash: binding.clientDataHash)
                bodies.append(
                    try WireJSON.encode(
                        AssertionRequest(
                            keyId: keyID.base64, assertion: Data(assertion).base64EncodedString(),
                            request: .init(
                                method: "POST", target: "/v1/orders", body: bodyBase64, timestamp: milliseconds))))
            }
            plans.append(bodies)
        }
        let inProcess = try Self.inProcessRate(device: device)
        let start = ContinuousClock.now
        let latencies = try await withThrowingTaskGroup(of: [Double].self) { group in
            for bodies in plans {
                group.addTask {
                    var latencies: [Double] = []
                    latencies.reserveCapacity(bodies.count)
                    for body in bodies {
                        let sent = ContinuousClock.now
                        let answer = try await http.post("/v1/assertions/verify", body: body)
                        guard answer.status == 200 else {
                            throw LoadFailure("assertion: HTTP \(answer.status) \(answer.errorCode)")
                        }
                        latencies.append(Self.milliseconds(ContinuousClock.now - sent))
                    }
                    return latencies
                }
            }
            var all: [Double] = []
            for try await part in group { all += part }
            return all
        }
        let elapsed = ContinuousClock.now - start
        return LoadReport(
            storage: storage.map { $0.hasPrefix("postgres") ? "postgres" : "sqlite" } ?? "sqlite",
            keys: keys, requests: latencies.count, seconds: Self.milliseconds(elapsed) / 1_000,
            latencies: latencies.sorted(), inProcessPerSecond: inProcess)
    }

    /// Single-core in-process assertion verifications per second (parse, SHA-256, one P-256 check).
    private static func inProcessRate(device: SimulatedDevice) throws -> Double {
        let keyID = device.generateKey()
        _ = try device.attestKey(keyID, clientDataHash: Array(repeating: 1, count: 32))
        guard let publicKey = device.publicKey(for: keyID) else { throw LoadFailure("no key") }
        let clientData = Array("attestkit-load".utf8)
        let assertion = try device.generateAssertion(keyID, clientDataHash: Array(SHA256.hash(data: clientData)))
        let verifier = AssertionVerifier()
        let appID = device.configuration.appID
        let count = 2_000
        let start = ContinuousClock.now
        for _ in 0..<count {
            _ = try verifier.verify(
                assertion, publicKey: publicKey, appID: appID, clientData: .clientData(clientData), previousCounter: 0)
        }
        return Double(count) / (milliseconds(ContinuousClock.now - start) / 1_000)
    }

    static func milliseconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) * 1_000 + Double(duration.components.attoseconds) / 1e15
    }

    private static func currentBinary() -> String {
        Bundle.main.executablePath ?? CommandLine.arguments[0]
    }
}

/// A failed load run.
struct LoadFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
