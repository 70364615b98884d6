import ArgumentParser
import AsyncHTTPClient
import Foundation

/// `attestkit demo`: the whole platform on loopback in a few seconds, what a newcomer runs first.
///
/// It starts a mock of Apple's services and an AttestKit server backed by a software Apple, drives simulated
/// devices through the server's HTTP API (``DemoScenario``), prints what happened (``DemoReport``) and stops
/// everything again (``DemoEnvironment``). It exits 0 only when every step behaved as expected.
struct DemoCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract: "Run AttestKit end to end on loopback: a server, a mock Apple and simulated devices.",
        discussion: """
            Makes a software Apple (a test CA, never trusted in production) and a provider key, starts a mock \
            of Apple's DeviceCheck and receipt exchange (risk metric 7) and an AttestKit server on 127.0.0.1 \
            (free ports, a temporary SQLite database, development keys of DEMOTEAM01.com.example.demo, \
            step-up above risk metric 5), then sends real HTTP requests as simulated devices would:
              1. POST /v1/challenges: 201, a challenge for an attestation.
              2. attestKey over SHA-256 of the challenge, POST /v1/attestations: 201, key registered.
              3. three assertions bound to POST, PATCH and DELETE requests (one-time challenge, then \
            timestamps), POST /v1/assertions/verify: 200 with counters 1, 2, 3.
              4. the third assertion again: 409 counter_not_increasing.
              5. an assertion made for one body, sent with another: 403 signature_invalid.
              6. an attestation by a device of another app: 403 app_id_mismatch.
              7. DeviceCheck through the server and the mock: query (not found), update bit0, query (bit0 true).
              8. a receipt refresh round (a new key's receipt is due at once; the mock Apple answers risk \
            metric 7), then the admin GET /v1/keys/{keyId}: riskMetric 7, stepUp true, a risk history entry.
            It prints one line per check and 'demo: N of 8 steps behaved as expected', then exits 0 only if \
            all 8 did. The server and the mock are shut down and the temporary directory removed in every \
            case (--keep keeps it). Keys, tokens and attestation objects are never printed; the server warns \
            on standard error that it trusts a test CA.
            """
    )

    @Flag(name: .long, help: "Show the server's and the mock's logs (debug level) on standard error.")
    var verbose = false

    @Flag(name: .long, help: "Print the report as JSON.")
    var json = false

    @Flag(name: .long, help: "Keep the temporary directory (with the SQLite database) and print its path.")
    var keep = false

    func run() async throws {
        let start = ContinuousClock.now
        var report = try await DemoEnvironment.withRunning(verbose: verbose, keep: keep) { environment in
            var configuration = HTTPClient.Configuration()
            configuration.connectionPool.retryConnectionEstablishment = false
            configuration.redirectConfiguration = .disallow
            let steps = try await HTTPClient.withHTTPClient(configuration: configuration) { http in
                var scenario = DemoScenario(
                    environment: environment,
                    client: DemoClient(
                        http: http, baseURL: environment.serverURL, adminToken: environment.adminToken,
                        backendToken: environment.backendToken))
                return await scenario.run()
            }
            return DemoReport(
                server: environment.serverURL, mockApple: environment.mockURL, storage: environment.storageURL,
                directory: environment.directory.path, kept: keep, steps: steps, seconds: 0)
        }
        let elapsed = ContinuousClock.now - start
        report.seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        print(json ? try report.json() : report.text)
        guard report.ok else { throw ExitCode(1) }
    }
}
