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
            /v1/attestations; for each concurrency level of --keys (e.g. --keys 4 16 64), signs --requests \
            assertions per key in advance (each bound to its request body with a timestamp), then sends them over \
            that many concurrent HTTP/1.1 connections, each key's requests in order (so that every counter \
            increases), to POST /v1/assertions/verify. It reports requests per second and latency percentiles of \
            the 200 answers, and beside each level the single-core in-process verification rate (AssertionVerifier \
            alone) measured in the same run, with the ratio of the two. Every answer must be 200: anything else \
            fails the run.

            With --target URL it starts no server and drives the service at URL instead (through a load balancer, \
            say), as the device of --device-state (written by 'attestkit simulate device --state FILE --out DIR'; \
            the service must trust DIR's roots and allow its app in development), with the backend token of \
            $ATTESTKIT_LOAD_BACKEND_TOKEN: it registers --keys keys, prints 'sending', then for --duration seconds \
            each key sends a challenge request and an assertion check in turn. A service with a backend listener \
            (http.backend-port) takes the assertion check there: give its URL as --backend-target. It prints how \
            many requests succeeded and failed (by kind: status and code, or a connection error) and exits non-zero \
            when one failed.

            With --population N it first writes N registered keys straight into the storage (rows only, a \
            benchmark path the server never takes; --signable-keys of them are keys this run can sign for, spread \
            evenly through the others), then for each level runs the hot run (the --keys keys registered through \
            the service) and the spread run (as many requests over as many connections, cycling through every \
            signable key), and reports both rates and the spread run's share of the hot run's.
            """
    )

    @Option(name: .long, help: "The server's storage URL (sqlite:PATH or postgres://...). Default: a temporary SQLite.")
    var storage: String?

    @Option(
        name: .long, parsing: .upToNextOption,
        help: "Concurrent keys (one connection each); several levels (--keys 4 16 64) run in turn.")
    var keys: [Int] = [16]

    @Option(name: .long, help: "Assertions per key.")
    var requests = 500

    @Option(name: .long, help: "The 'attestkit' binary to run as the server (default: this one).")
    var serverBinary: String?

    @Flag(name: .long, help: "Print JSON.")
    var json = false

    @Option(
        name: .long, help: "Drive the service at this URL instead of starting one (steady traffic, failures counted).")
    var target: String?

    @Option(
        name: .long,
        help: "With --target: the backend listener's URL (http.backend-port) for the backend route; --target's without."
    )
    var backendTarget: String?

    @Option(name: .long, help: "With --target: the state file of 'attestkit simulate device' whose roots it trusts.")
    var deviceState: String?

    @Option(name: .long, help: "With --target: how long to send, in seconds.")
    var duration: Double = 30

    @Option(
        name: .long,
        help: "Seed this many registered keys first, then measure a hot run (--keys keys) and a spread run over them.")
    var population: Int?

    @Option(name: .long, help: "With --population: how many seeded keys the spread run signs for.")
    var signableKeys = 16_384

    func validate() throws {
        guard !keys.isEmpty, keys.allSatisfy({ (1...256).contains($0) }) else {
            throw ValidationError("--keys is 1 to 256")
        }
        guard (1...100_000).contains(requests) else { throw ValidationError("--requests is 1 to 100000") }
        if backendTarget != nil, target == nil { throw ValidationError("--backend-target goes with --target") }
        if target != nil {
            guard deviceState != nil else { throw ValidationError("--target needs --device-state") }
            guard duration > 0, duration <= 3_600 else { throw ValidationError("--duration is 0 to 3600 seconds") }
        }
        if let population {
            guard target == nil else { throw ValidationError("--population starts its own server: not with --target") }
            guard (1...10_000_000).contains(population) else { throw ValidationError("--population is 1 to 10000000") }
            guard (1...1_000_000).contains(signableKeys) else {
                throw ValidationError("--signable-keys is 1 to 1000000")
            }
            guard min(signableKeys, population) >= keys.max() ?? 1 else {
                throw ValidationError("--population and --signable-keys must be at least the largest --keys")
            }
            guard storage.map({ !$0.hasPrefix("memory") }) ?? true else {
                throw ValidationError("--population needs a SQLite or PostgreSQL storage")
            }
        }
    }

    func run() async throws {
        if let target {
            try await drive(target)
            return
        }
        let workspace = FileManager.default.temporaryDirectory.appendingPathComponent(
            "attestkit-load-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: workspace, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: workspace) }
        let apple = try SoftwareApple()
        let appID = try AppID("ABCDE12345.com.example.load")
        let device = SimulatedDevice(apple: apple, configuration: .init(appID: appID, environment: .development))
        let storage = storage ?? "sqlite:\(workspace.path)/load.sqlite"
        var seeded: LoadPopulation?
        if let population {
            seeded = try await LoadPopulation.seed(
                storage: storage, count: population, signable: signableKeys, appID: appID)
        }
        let server = try ChildServer(
            binary: serverBinary ?? Self.currentBinary(), workspace: workspace, apple: apple, appID: appID,
            storage: storage)
        defer { server.stop() }
        guard let port = try await server.waitForPort() else { throw LoadFailure("the server did not start") }
        let base = "http://127.0.0.1:\(port)"
        // One connection per key: the default pool would allow only 8 to the server.
        var settings = HTTPClient.Configuration()
        settings.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = keys.max() ?? 1
        let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: settings)
        do {
            let http = LoadHTTP(client: client, base: base, backendToken: server.backendToken)
            let keyIDs = try await register(keys.max() ?? 1, device: device, http: http)
            var reports: [LoadReport] = []
            var spread: [LoadReport] = []
            for level in keys {
                let hot = try hotPlans(Array(keyIDs.prefix(level)), device: device)
                reports.append(try await measure(hot, keys: level, device: device, http: http, port: port))
                if var population = seeded {
                    let plans = try population.plans(connections: level, requests: requests, body: Self.orderBody)
                    seeded = population
                    spread.append(
                        try await measure(
                            plans, keys: level, device: device, http: http, port: port, run: "spread",
                            population: population))
                }
            }
            try await client.shutdown()
            if let seeded {
                let hot = reports.map { $0.run("hot", population: seeded) }
                print(json ? LoadReport.json(hot: hot, spread: spread) : LoadReport.table(hot: hot, spread: spread))
            } else {
                print(json ? LoadReport.json(reports) : LoadReport.table(reports))
            }
        } catch {
            try? await client.shutdown()
            throw error
        }
    }

    /// `--target`: registers keys at `target`, sends steady traffic for `--duration`, prints what failed.
    private func drive(_ target: String) async throws {
        guard let deviceState else { throw ValidationError("--target needs --device-state") }
        guard let token = ProcessInfo.processInfo.environment["ATTESTKIT_LOAD_BACKEND_TOKEN"], !token.isEmpty else {
            throw LoadFailure("--target needs the service's backend token in ATTESTKIT_LOAD_BACKEND_TOKEN")
        }
        let device = try SimulationArguments.loadDevice(deviceState)
        var settings = HTTPClient.Configuration()
        settings.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = keys.max() ?? 1
        let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: settings)
        let outcome: TargetLoad.Outcome
        do {
            let http = LoadHTTP(client: client, base: target, backendToken: token, backendBase: backendTarget)
            let keyIDs = try await register(keys.max() ?? 1, device: device, http: http)
            FileHandle.standardOutput.write(Data("sending\n".utf8))
            outcome = await TargetLoad(http: http, device: device, keyIDs: keyIDs, duration: .seconds(duration)).run()
            try await client.shutdown()
        } catch {
            try? await client.shutdown()
            throw error
        }
        print(json ? outcome.json : outcome.summary)
        if outcome.failed > 0 {
            throw LoadFailure("\(outcome.failed) of \(outcome.succeeded + outcome.failed) requests failed")
        }
    }

    /// Registers `count` keys through the service.
    private func register(_ count: Int, device: SimulatedDevice, http: LoadHTTP) async throws -> [KeyID] {
        var keyIDs: [KeyID] = []
        for _ in 0..<count {
            let keyID = device.generateKey()
            // The key named, as the app-side client names it: a service with its attestation ramp on needs it.
            let challenge = try await http.post(
                "/v1/challenges", ChallengeRequest(purpose: "attest", keyId: keyID.base64))
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
        return keyIDs
    }

    /// The body every assertion is bound to.
    static let orderBody = #"{"item":"coffee","quantity":1}"#

    /// The body of one `POST /v1/assertions/verify`.
    static func assertionRequest(keyID: KeyID, assertion: [UInt8], body: String, milliseconds: Int64) throws -> Data {
        try WireJSON.encode(
            AssertionRequest(
                keyId: keyID.base64, assertion: Data(assertion).base64EncodedString(),
                request: .init(
                    method: "POST", target: "/v1/orders", body: Data(body.utf8).base64EncodedString(),
                    timestamp: milliseconds)))
    }

    /// The hot run's request bodies: `--requests` assertions by each of `keyIDs`, in order, one list per key.
    /// Signed in advance: the measurement is the server's, not the simulated device's.
    private func hotPlans(_ keyIDs: [KeyID], device: SimulatedDevice) throws -> [[Data]] {
        var plans: [[Data]] = []
        for keyID in keyIDs {
            var bodies: [Data] = []
            bodies.reserveCapacity(requests)
            for _ in 0..<requests {
                let milliseconds = Int64(Date().timeIntervalSince1970 * 1_000)
                let binding = try RequestBinding(
                    method: "POST", target: "/v1/orders", body: Array(Self.orderBody.utf8),
                    freshness: .timestamp(milliseconds: milliseconds))
                let assertion = try device.generateAssertion(keyID, clientDataHash: binding.clientDataHash)
                bodies.append(
                    try Self.assertionRequest(
                        keyID: keyID, assertion: assertion, body: Self.orderBody, milliseconds: milliseconds))
            }
            plans.append(bodies)
        }
        return plans
    }

    /// Sends the request bodies of `plans` concurrently, each list in order on one connection of its own
    /// (``LoadConnection``: requests encoded in advance, only the status read, so that the generator's own cost
    /// stays small beside the server's).
    private func measure(
        _ plans: [[Data]], keys: Int, device: SimulatedDevice, http: LoadHTTP, port: Int, run: String? = nil,
        population: LoadPopulation? = nil
    ) async throws -> LoadReport {
        let inProcess = try Self.inProcessRate(device: device)
        let headers = [("Authorization", "Bearer \(http.backendToken)")]
        let requestPlans = plans.map { bodies in
            bodies.map { LoadConnection.request(path: "/v1/assertions/verify", body: Array($0), headers: headers) }
        }
        var connections: [LoadConnection] = []
        for _ in requestPlans { connections.append(try await LoadConnection.connect(host: "127.0.0.1", port: port)) }
        let cpuBefore = MachineCPU.now()
        let start = ContinuousClock.now
        let latencies: [Double]
        do {
            latencies = try await send(requestPlans, over: connections)
        } catch {
            for connection in connections { await connection.close() }
            throw error
        }
        let elapsed = ContinuousClock.now - start
        let cpu = cpuBefore.flatMap { before in MachineCPU.now()?.since(before, requests: latencies.count) }
        for connection in connections { await connection.close() }
        let report = LoadReport(
            storage: storage.map { url in ["postgres", "memory"].first { url.hasPrefix($0) } ?? "sqlite" } ?? "sqlite",
            keys: keys, requests: latencies.count, seconds: Self.milliseconds(elapsed) / 1_000,
            latencies: latencies.sorted(), inProcessPerSecond: inProcess, machineBusyShare: cpu?.busyShare,
            machineMicrosecondsPerRequest: cpu?.microsecondsPerRequest)
        guard let run, let population else { return report }
        return report.run(run, population: population)
    }

    /// Sends each connection its requests, in order, all connections at once; the latency of every answer.
    private func send(_ plans: [[LoadConnection.Request]], over connections: [LoadConnection]) async throws -> [Double]
    {
        try await withThrowingTaskGroup(of: [Double].self) { group in
            for (connection, requests) in zip(connections, plans) {
                group.addTask {
                    do {
                        return try await connection.send(requests)
                    } catch let refusal as LoadConnection.Refusal {
                        let code = LoadHTTP.Answer(status: refusal.status, body: refusal.body).errorCode
                        throw LoadFailure("assertion: HTTP \(refusal.status) \(code)")
                    }
                }
            }
            var all: [Double] = []
            for try await part in group { all += part }
            return all
        }
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
