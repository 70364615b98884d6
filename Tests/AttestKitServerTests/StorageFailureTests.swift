import AttestKitServer
import AttestKitStore
import AttestKitWire
import Foundation
import Logging
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
        in directory: URL? = nil,
        _ body: @Sendable (ServerHarness, SQLiteAttestationStore, LogCapture) async throws -> Void
    ) async throws {
        let capture = LogCapture()
        var options = ServerHarness.Options()
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
