import AttestKit
import AttestKitStore
import Foundation
import SQLiteNIO
import Synchronization
import Testing

@Suite("SQLite store")
struct SQLiteStoreTests {
    @Test("the file and its directories are created on first use, owner-only, in WAL mode")
    func firstUse() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.url.appendingPathComponent("x/y/store.sqlite").path
        let store = SQLiteAttestationStore(path: path)
        #expect(!FileManager.default.fileExists(atPath: path))
        #expect(try await store.keyCounts().total == 0)
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)
        await store.close()

        let connection = try await SQLiteConnection.open(storage: .file(path: path))
        let mode = try await connection.query("PRAGMA journal_mode").first?.column("journal_mode")?.string
        let version = try await connection.query("SELECT version FROM schema_version").first?.column("version")?.integer
        try await connection.close()
        #expect(mode == "wal")
        // The tables, the shared rate budgets, the consumed tokens, app keys, compatibility, leases and counts,
        // dashboard sessions, receipt expiry, fillfactor, key access control, then the app of a challenge.
        #expect(version == 10)
    }

    @Test("a schema newer than this release is refused, not touched")
    func newerSchema() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.url.appendingPathComponent("store.sqlite").path
        let store = SQLiteAttestationStore(path: path)
        try await store.prepare()
        await store.close()

        let connection = try await SQLiteConnection.open(storage: .file(path: path))
        _ = try await connection.query("UPDATE schema_version SET version = 99, compatible_from = 99")
        try await connection.close()

        let newer = SQLiteAttestationStore(path: path)
        await #expect(throws: StoreError.storageUnavailable) { try await newer.prepare() }
        await #expect(throws: StoreError.storageUnavailable) { _ = try await newer.keyCounts() }
        await newer.close()
    }

    @Test("a file that is not a database is reported as unavailable")
    func notADatabase() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.url.appendingPathComponent("store.sqlite").path
        try Data(repeating: 0x42, count: 4_096).write(to: URL(fileURLWithPath: path))
        let store = SQLiteAttestationStore(path: path)
        await #expect(throws: StoreError.storageUnavailable) { try await store.prepare() }
        await store.close()
    }

    @Test("readers that cannot be opened fail every caller waiting for one; none is left waiting")
    func failedReaderOpensWakeTheWaiters() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.url.appendingPathComponent("store.sqlite").path
        let store = SQLiteAttestationStore(configuration: .init(path: path, readerCount: 2))
        try await store.prepare()
        // The writer keeps the open file; a reader opened from now on finds a directory where the file was.
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
        // More callers than readers: two open, the others wait for a place that a failed open frees. A caller left
        // waiting would wait forever: the test polls (60 s tells "answered" from "hung"), then closes the store,
        // which fails any waiter still there.
        final class Answered: Sendable {
            let count = Mutex(0)
        }
        let answered = Answered()
        let reads = (0..<6).map { _ in
            Task {
                defer { answered.count.withLock { $0 += 1 } }
                return try? await store.isTokenConsumed("token")
            }
        }
        let deadline = ContinuousClock.now + .seconds(60)
        while answered.count.withLock({ $0 }) < reads.count, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(answered.count.withLock { $0 } == reads.count, "callers left waiting for a reader")
        await store.close()
        for read in reads { #expect(await read.value == nil, "a reader opened on a directory") }
    }

    @Test("reads and writes from many tasks share few connections")
    func manyTasks() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let store = SQLiteAttestationStore(
            configuration: .init(path: directory.url.appendingPathComponent("store.sqlite").path, readerCount: 1))
        let registration = try TestKeys.registration()
        _ = try await store.registerKey(registration, now: TestKeys.t0)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for value in 1...200 {
                group.addTask {
                    if value.isMultiple(of: 2) {
                        _ = try await store.key(registration.keyID)
                    } else {
                        _ = try await store.issueChallenge(purpose: .assert, now: TestKeys.t0)
                    }
                }
            }
            try await group.waitForAll()
        }
        await store.close()
        await #expect(throws: StoreError.storageUnavailable) { _ = try await store.key(registration.keyID) }
    }
}
