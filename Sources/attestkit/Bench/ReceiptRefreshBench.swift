import ArgumentParser
import AttestKit
import AttestKitApple
import AttestKitAppleMock
import AttestKitFlows
import AttestKitServer
import AttestKitStore
import AttestKitTesting
import AttestKitWire
import Crypto
import Foundation
import Logging

/// `attestkit bench --receipt-refresh`: receipts a replica trades a second against a mock of Apple that answers
/// after a fixed latency, beside the floor it cannot beat (concurrency / latency, and the ceiling).
struct ReceiptRefreshBenchOptions: ParsableArguments {
    @Flag(
        name: .long,
        help: """
            Measure the receipt refresh instead of verification: keys registered with software-Apple receipts on \
            SQLite, traded with a mock of Apple answering after --apple-latency-ms, at each --refresh-concurrency.
            """)
    var receiptRefresh = false

    @Option(name: .long, help: "Keys to register and trade at each concurrency.")
    var refreshKeys = 200

    @Option(name: .long, help: "Milliseconds the mock of Apple waits before each answer.")
    var appleLatencyMs = 100

    @Option(name: .long, help: "Comma-separated receipt-refresh.concurrency values to measure.")
    var refreshConcurrency = "1,8,16"

    @Option(name: .long, help: "receipt-refresh.max-per-second (0: no ceiling).")
    var refreshMaxPerSecond = 0

    /// Runs the receipt refresh bench when `--receipt-refresh` was given; returns whether it did.
    func runIfRequested(json: Bool) async throws -> Bool {
        guard receiptRefresh else { return false }
        let levels = refreshConcurrency.split(separator: ",").compactMap { Int($0) }
        guard !levels.isEmpty, levels.allSatisfy((1...64).contains), (1...10_000).contains(refreshKeys) else {
            throw ValidationError("--refresh-concurrency: 1 to 64 each; --refresh-keys: 1 to 10000")
        }
        let figures = try await ReceiptRefreshBench(
            keys: refreshKeys, latency: .milliseconds(appleLatencyMs), ceiling: refreshMaxPerSecond
        ).measure(levels)
        if json {
            try BenchJSON.print(figures)
        } else {
            #if DEBUG
                print(
                    "warning: debug build; run `swift run -c release attestkit bench "
                        + "--receipt-refresh` for meaningful numbers")
            #endif
            print("concurrency   keys  latency ms  ceiling/s   seconds   receipts/s   floor/s")
            for figure in figures {
                print(
                    String(
                        format: "%11d %6d %11d %10d %9.2f %12.1f %9.1f", figure.concurrency, figure.keys,
                        figure.latencyMilliseconds, figure.ceiling, figure.seconds, figure.receiptsPerSecond,
                        figure.floor))
            }
        }
        return true
    }
}

/// One receipt refresh figure.
struct ReceiptRefreshFigure: Encodable {
    var concurrency: Int
    var keys: Int
    var latencyMilliseconds: Int
    var ceiling: Int
    var seconds: Double
    var receiptsPerSecond: Double
    /// The best rate possible: concurrency / latency, or the ceiling when lower.
    var floor: Double

    enum CodingKeys: String, CodingKey {
        case concurrency, keys, ceiling, seconds, floor
        case latencyMilliseconds = "latency_ms"
        case receiptsPerSecond = "receipts_per_second"
    }
}

/// Registers keys through the application (attestations of a simulated device, whose receipts the software Apple
/// signs), then makes them all due and times refresh rounds until every receipt was traded once.
struct ReceiptRefreshBench {
    var keys: Int
    var latency: Duration
    var ceiling: Int

    static let teamID = "BENCHTEAM1"
    static let providerKeyID = "BENCHKEY01"

    func measure(_ levels: [Int]) async throws -> [ReceiptRefreshFigure] {
        let quiet = Logger(label: "attestkit.bench") { _ in SwiftLogNoOpLogHandler() }
        let apple = try SoftwareApple()
        let providerKey = P256.Signing.PrivateKey()
        let appID = try AppID(teamID: Self.teamID, bundleID: "com.example.bench")
        let mock = try MockAppleServer(
            configuration: .init(
                verificationKeyPEM: providerKey.publicKey.pemRepresentation, keyID: Self.providerKeyID,
                teamID: Self.teamID, environment: .development, riskMetric: 7,
                faults: [MockAppleFault(.delay(latency), endpoint: .attestationData, count: 100_000_000)]),
            softwareApple: apple, logger: quiet)
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("attestkit-bench-\(UUID())")
        defer { try? FileManager.default.removeItem(at: directory) }
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let storage = try StoreURL("sqlite:" + directory.appendingPathComponent("refresh.sqlite").path)
        return try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await mock.run() }
            defer { group.cancelAll() }
            let mockURL = try await mock.baseURL()
            return try await storage.withStore { store in
                var configuration = ServerConfiguration(
                    appIDs: [appID], environments: .development, host: "127.0.0.1", port: 0,
                    storageURL: "memory:",  // unused: the server is given the store
                    apple: .init(
                        privateKeyPEM: providerKey.pemRepresentation, keyID: Self.providerKeyID, teamID: Self.teamID,
                        deviceCheckEnvironment: .development, deviceCheckBaseURL: mockURL,
                        receiptExchangeURL: mockURL + AppAttestEnvironment.receiptExchangePath, timeout: 30),
                    trustAnchors: apple.trustAnchors,
                    rateLimits: .init(attestationsPerIP: 0, attestationsPerApp: 0, challengesPerIP: 0),
                    logLevel: .critical)
                configuration.receiptRefreshConcurrency = levels.max() ?? 8
                let server = try AttestKitServer(configuration: configuration, store: store, logger: quiet)
                let application = server.application
                guard let exchange = application.apple?.receiptExchange else {
                    throw ValidationError("no receipt exchange configured")
                }
                let device = SimulatedDevice(
                    apple: apple, configuration: .init(appID: appID, environment: .development))
                var figures: [ReceiptRefreshFigure] = []
                for concurrency in levels {
                    // Fresh keys at each level: an attestation's receipt is traded at once, a traded one not before
                    // its Not Before. Registered, they are due at once.
                    for _ in 0..<keys {
                        let keyID = device.generateKey()
                        let issued = try await application.issueChallenge(
                            ChallengeRequest(purpose: "attest"), client: "bench")
                        let bytes = Data(base64Encoded: issued.challenge) ?? Data()
                        let object = try device.attestKey(keyID, clientDataHash: Array(SHA256.hash(data: bytes)))
                        _ = try await application.registerAttestation(
                            AttestationRequest(
                                keyId: keyID.base64, attestation: Data(object).base64EncodedString(),
                                challengeId: issued.challengeId), client: "bench")
                        try await store.postponeReceiptRefresh(of: keyID, until: Date())
                    }
                    let refresh = ReceiptRefreshService(
                        store: store, exchange: exchange, interval: .seconds(60), batch: keys, lease: .seconds(3_600),
                        concurrency: concurrency, maxPerSecond: ceiling, riskThreshold: nil, metrics: FlowMetrics(),
                        logger: quiet)
                    let start = ContinuousClock.now
                    var traded = 0
                    while traded < keys {
                        let round = await refresh.round()
                        guard round.refreshed > 0 else {
                            throw ValidationError("a round traded nothing (\(round)); \(traded) of \(keys) traded")
                        }
                        traded += round.refreshed
                    }
                    let seconds = Bench.seconds(ContinuousClock.now - start)
                    let bound = Double(concurrency) / Bench.seconds(latency)
                    figures.append(
                        ReceiptRefreshFigure(
                            concurrency: concurrency, keys: keys,
                            latencyMilliseconds: Int(Bench.seconds(latency) * 1_000), ceiling: ceiling,
                            seconds: seconds, receiptsPerSecond: Double(traded) / seconds,
                            floor: ceiling > 0 ? min(bound, Double(ceiling)) : bound))
                }
                return figures
            }
        }
    }
}
