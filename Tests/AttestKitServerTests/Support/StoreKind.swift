import AttestKitStore
import AttestKitTestSupport
import Foundation
import Testing

/// The stores the end-to-end tests run the server on.
///
/// PostgreSQL comes from `POSTGRES_HOST`, `POSTGRES_PORT`, `POSTGRES_USER`, `POSTGRES_PASSWORD` and `POSTGRES_DB`
/// (set by `eval "$(scripts/postgres)"`; defaults 127.0.0.1, 5432, attestkit, attestkit, attestkit_test), as in
/// the store's own tests. When it cannot be reached its cases are left out, unless `CI` is set or
/// `ATTESTKIT_REQUIRE_POSTGRES=1`: then they run and fail. Every PostgreSQL harness works in a schema of its own,
/// dropped at the end, so runs never collide.
enum StoreKind: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case sqlite
    case postgres

    var testDescription: String { rawValue }

    /// The stores to test: PostgreSQL when it answers or is required.
    static func all() async -> [StoreKind] {
        await PostgresTestServer.shared.shouldRun() ? allCases : [.sqlite]
    }

    /// A new, empty store of this kind, not running yet; for SQLite in `directory` when given (created and removed
    /// afterwards like the temporary one).
    func makeStore(in directory: URL? = nil) async throws -> TestStore {
        switch self {
        case .sqlite:
            let directory =
                directory
                ?? FileManager.default.temporaryDirectory.appendingPathComponent("attestkit-e2e-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            let store = SQLiteAttestationStore(path: directory.appendingPathComponent("store.sqlite").path)
            return TestStore(store: store, dropSchema: nil, directory: directory)
        case .postgres:
            guard await PostgresTestServer.shared.isAvailable() else { throw PostgresUnavailable() }
            let schema = "e2e_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
            let store = try PostgresTestServer.store(schema: schema)
            return TestStore(store: store, dropSchema: { try? await store.dropSchema() }, directory: nil)
        }
    }
}

/// A store made for one harness, and how to remove what it leaves behind.
struct TestStore: Sendable {
    let store: any AttestationStore
    /// Drops the PostgreSQL schema; works after `close()`, while the store's `run()` still runs.
    let dropSchema: (@Sendable () async -> Void)?
    /// The SQLite file's folder, removed once the store stopped.
    let directory: URL?

    /// Removes what is left once the store has stopped.
    func removeFiles() {
        if let directory { try? FileManager.default.removeItem(at: directory) }
    }
}

/// PostgreSQL was required but did not answer (already recorded as an issue).
struct PostgresUnavailable: Error {}
