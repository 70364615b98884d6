import AttestKitFlows
import AttestKitServer
import AttestKitStore
import AttestKitTestSupport
import AttestKitWire
import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import NIOHTTP1
import Testing

/// An SQLite database that cannot be written (a read-only file, a full disk) gives 503 `storage_unavailable` and an
/// error log line naming the cause, never a 500 or a crash; once writable again, the service answers as before.
///
/// The failing states are put on the store's writer connection: `PRAGMA query_only` fails writes with
/// `SQLITE_READONLY` as a read-only file does (file modes do not stop root, who runs CI), `PRAGMA max_page_count`
/// fails a write that needs a new page with `SQLITE_FULL` as a full disk does.
@Suite("Storage failures")
struct StorageFailureTests {
    @Test("a read-only SQLite database: 503 storage_unavailable and a log line; reads still answer")
    func readOnly() async throws {
        try await Self.withSQLiteServer { harness, store, capture in
            let device = try await TestDevice.registered(harness)
            _ = try await store.executeOnWriter("PRAGMA query_only = ON")

            let challenge = try await harness.post("/v1/challenges", ["purpose": "attest"], allow5xx: true)
            #expect(challenge.status == 503 && challenge.errorCode == "storage_unavailable", "\(challenge)")
            let verify = try await harness.post(
                "/v1/assertions/verify",
                try device.verifyBody(freshness: .timestamp(milliseconds: Self.milliseconds(harness.clock.now()))),
                allow5xx: true)
            #expect(verify.status == 503 && verify.errorCode == "storage_unavailable", "\(verify)")
            let key = try await harness.get("/v1/keys/\(device.keyID.pathComponent)", headers: ServerHarness.admin)
            #expect(key.status == 200, "a read: \(key)")

            try Self.expectLogLine(in: capture, naming: "readonly")

            _ = try await store.executeOnWriter("PRAGMA query_only = OFF")
            let again = try await harness.post("/v1/challenges", ["purpose": "attest"])
            #expect(again.status == 201, "\(again)")
        }
    }

    @Test("every route that writes: a storage outage answers 503 with its own log line and storage error count")
    func outageSignalOnEveryRoute() async throws {
        var options = ServerHarness.Options()
        options.tokens = try TokenService.Configuration(signingKey: TokenSigningKey(privateKey: P256.Signing.PrivateKey()))
        try await Self.withSQLiteServer(options: options) { harness, store, capture in
            let device = try await TestDevice.registered(harness)
            let (issued, _) = try await TokenRouteTests.requestToken(harness, device)
            let token = try #require(issued.string("token"), "\(issued)")
            let (newcomer, other) = (TestDevice(harness), TestDevice(harness))
            let challenges = [try await harness.challenge(), try await harness.challenge()]
            let attestation = newcomer.attestationBody(
                try newcomer.attestation(for: challenges[0]), challengeID: challenges[0].id)
            // The store fails before the attestation is looked at: its client data need not bind the app key.
            let appKey = P256.Signing.PrivateKey().publicKey.derRepresentation
            let keyAttestation = other.attestationBody(
                try other.attestation(for: challenges[1]), challengeID: challenges[1].id
            ).setting("appKey", .base64(Array(appKey)))
            _ = try await store.executeOnWriter("PRAGMA query_only = ON")

            let calls: [(String, @Sendable () async throws -> HTTPResult)] = [
                ("POST /v1/challenges", { try await harness.post("/v1/challenges", ["purpose": "attest"], allow5xx: true) }),
                ("POST /v1/assertions/verify", {
                    try await harness.post(
                        "/v1/assertions/verify", try device.verifyBody(freshness: device.now), allow5xx: true)
                }),
                ("POST /v1/attestations", { try await harness.post("/v1/attestations", attestation, allow5xx: true) }),
                ("POST /v1/key-attestations", {
                    try await harness.post("/v1/key-attestations", keyAttestation, allow5xx: true)
                }),
                ("POST /v1/tokens", {
                    let headers = try device.guardedHeaders(
                        method: "POST", target: "/v1/tokens", body: [], freshness: device.now)
                    return try await harness.send(.POST, "/v1/tokens", headers: headers, allow5xx: true)
                }),
                ("POST /v1/tokens/consume", {
                    try await harness.post("/v1/tokens/consume", ["token": .string(token)], allow5xx: true)
                }),
            ]
            for (route, call) in calls {
                let lines = capture.logged.filter { $0.message.hasPrefix("storage unavailable") }.count
                let counted = Self.storageErrors(harness)
                let answer = try await call()
                #expect(answer.status == 503 && answer.errorCode == "storage_unavailable", "\(route): \(answer)")
                let logged = capture.logged.filter { $0.message.hasPrefix("storage unavailable") }.count
                #expect(logged == lines + 1, "\(route): one log line of its own")
                #expect(Self.storageErrors(harness) == counted + 1, "\(route): counted once")
            }
        }
    }

    @Test("a guarded route: a storage outage under the middleware is counted and logged once, by the guard")
    func outageSignalUnderTheMiddleware() async throws {
        try await Self.withSQLiteServer { harness, store, capture in
            let device = try await TestDevice.registered(harness)
            let router = Router(context: ServerRequestContext.self)
            router.group("orders").add(middleware: AttestKitMiddleware(guard: try harness.server.routeGuard()))
                .post { _, _ in "ok" }
            let headers = try device.guardedHeaders(method: "POST", target: "/orders", body: [], freshness: device.now)
            _ = try await store.executeOnWriter("PRAGMA query_only = ON")
            try await Application(router: router).test(.router) { client in
                var fields = HTTPFields()
                for (name, value) in headers { if let name = HTTPField.Name(name) { fields[name] = value } }
                let response = try await client.executeRequest(uri: "/orders", method: .post, headers: fields, body: ByteBuffer())
                #expect(response.status == .serviceUnavailable)
            }
            #expect(capture.logged.filter { $0.message.hasPrefix("storage unavailable") }.count == 1)
            #expect(Self.storageErrors(harness) == 1)
        }
    }

    @Test("a request cancelled (a stop past its grace period) is answered 503 but not counted as a storage outage")
    func cancelledRequestNotAnOutage() async throws {
        try await Self.withSQLiteServer { harness, store, capture in
            _ = try await store.executeOnWriter("PRAGMA query_only = ON")
            let application = harness.server.application
            let request = ChallengeRequest(purpose: "assert")
            let cancelled = Task { () async -> String? in
                try? await Task.sleep(for: .seconds(60))  // cancelled at once
                do throws(FlowError) {
                    _ = try await application.issueChallenge(request, client: "192.0.2.1")
                    return nil
                } catch {
                    return error.code.rawValue
                }
            }
            cancelled.cancel()
            #expect(await cancelled.value == "storage_unavailable")
            #expect(Self.storageErrors(harness) == 0)
            #expect(!capture.logged.contains { $0.message.hasPrefix("storage unavailable") })

            // The same failure in a request going on is the outage it is.
            let live = try await harness.post("/v1/challenges", ["purpose": "assert"], allow5xx: true)
            #expect(live.status == 503 && live.errorCode == "storage_unavailable", "\(live)")
            #expect(Self.storageErrors(harness) == 1)
            try Self.expectLogLine(in: capture, naming: "readonly")
        }
    }

    /// The value of `attestkit_storage_errors_total` in the server's exposition.
    static func storageErrors(_ harness: ServerHarness) -> Int {
        let text = String(decoding: harness.server.metrics.exposition(), as: UTF8.self)
        let line = text.split(separator: "\n").first { $0.hasPrefix("attestkit_storage_errors_total ") }
        return line.flatMap { Double($0.split(separator: " ").last ?? "") }.map { Int($0) } ?? 0
    }

    @Test("a full SQLite disk: 503 storage_unavailable and a log line, never a 500; room again, it answers")
    func fullDisk() async throws {
        try await Self.withSQLiteServer { harness, store, capture in
            _ = try await store.executeOnWriter("PRAGMA max_page_count = 1")  // the current size: no new page

            try await Self.expectFull(harness, capture)

            _ = try await store.executeOnWriter("PRAGMA max_page_count = 1073741823")
            let again = try await harness.post("/v1/challenges", ["purpose": "attest"])
            #expect(again.status == 201, "\(again)")
        }
    }

    @Test(
        "a real full disk (a 2 MiB tmpfs): 503 storage_unavailable and a log line; room again, it answers",
        .enabled(if: SmallFileSystem.isAvailable, "mounting a tmpfs needs root"))
    func realFullDisk() async throws {
        let disk = try #require(SmallFileSystem.mount(size: "2m"))
        defer { disk.unmount() }
        try await Self.withSQLiteServer(in: disk.directory.appendingPathComponent("store")) { harness, _, capture in
            #expect(try await harness.post("/v1/challenges", ["purpose": "attest"]).status == 201)
            try disk.fill()
            try await Self.expectFull(harness, capture)

            disk.free()
            let again = try await harness.post("/v1/challenges", ["purpose": "attest"])
            #expect(again.status == 201, "\(again)")
        }
    }

    /// Issues challenges until the store refuses one (they fill the room left, then the file would have to grow),
    /// and requires that refusal to be a 503 `storage_unavailable` with its log line, while `/health` answers.
    static func expectFull(
        _ harness: ServerHarness, _ capture: LogCapture, sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        var answer = try await harness.post("/v1/challenges", ["purpose": "attest"], allow5xx: true)
        var issued = 0
        while answer.status == 201, issued < 2_000 {
            issued += 1
            answer = try await harness.post("/v1/challenges", ["purpose": "attest"], allow5xx: true)
        }
        #expect(
            answer.status == 503 && answer.errorCode == "storage_unavailable", "after \(issued): \(answer)",
            sourceLocation: sourceLocation)
        try expectLogLine(in: capture, naming: "full", sourceLocation: sourceLocation)
        #expect(try await harness.get("/health").status == 200, sourceLocation: sourceLocation)
    }

    /// Runs `body` against a server on SQLite (in `directory` when given) whose errors are captured.
    static func withSQLiteServer(
        in directory: URL? = nil, options: ServerHarness.Options = ServerHarness.Options(),
        _ body: @Sendable (ServerHarness, SQLiteAttestationStore, LogCapture) async throws -> Void
    ) async throws {
        let capture = LogCapture()
        var options = options
        options.logger = capture.logger(level: .error)
        options.sqliteDirectory = directory
        try await ServerHarness.with(.sqlite, options) { harness in
            try await body(harness, try #require(harness.store as? SQLiteAttestationStore), capture)
        }
    }

    /// Requires the error line of a storage failure whose reason names `cause`.
    static func expectLogLine(
        in capture: LogCapture, naming cause: String, sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        let line = try #require(
            capture.logged.first { $0.message.hasPrefix("storage unavailable") }, sourceLocation: sourceLocation)
        #expect(line.level == .error)
        #expect(
            line.metadata["reason"]?.lowercased().contains(cause) == true, "\(line)", sourceLocation: sourceLocation)
        print("storage failure log: \(line.message) \(line.metadata)")
    }

    static func milliseconds(_ date: Date) -> Int64 { Int64((date.timeIntervalSince1970 * 1_000).rounded()) }
}
