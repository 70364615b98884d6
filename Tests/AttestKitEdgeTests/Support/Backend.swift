import AttestKitStore
import AttestKitTestSupport
import Foundation
import ServiceLifecycle

/// The stores the shared suite runs on.
enum Backend: String, CaseIterable, Sendable, CustomStringConvertible {
    /// A SQLite file of its own.
    case sqlite
    /// A PostgreSQL schema of its own (dropped at the end).
    case postgres

    var description: String { rawValue }

    /// SQLite, and PostgreSQL when it answers or is required (`ATTESTKIT_REQUIRE_POSTGRES=1`: then it must run).
    static func available() async -> [Backend] {
        await PostgresTestServer.shared.shouldRun() ? [.sqlite, .postgres] : [.sqlite]
    }

    /// Runs `body` with a fresh, running and prepared store of this backend, then drops and closes it.
    func withStore(_ body: @Sendable (any AttestationStore) async throws -> Void) async throws {
        switch self {
        case .sqlite:
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent(UUID().uuidString)
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: directory) }
            let store = SQLiteAttestationStore(path: directory.appendingPathComponent("store.sqlite").path)
            try await Self.running(store, body) {}
        case .postgres:
            // Unreachable while required: isAvailable records the failure.
            guard await PostgresTestServer.shared.isAvailable() else { return }
            let gate = PostgresTestServer.shared.gate
            await gate.enter()
            do {
                let schema = "e_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
                let store = try PostgresTestServer.store(schema: schema)
                try await Self.running(store, body) { try? await store.dropSchema() }
            } catch {
                await gate.leave()
                throw error
            }
            await gate.leave()
        }
    }

    private static func running<Store: AttestationStore>(
        _ store: Store, _ body: @Sendable (any AttestationStore) async throws -> Void,
        cleanup: () async -> Void
    ) async throws {
        let task = Task { try? await store.run() }
        do {
            try await store.prepare()
            try await body(store)
        } catch {
            await cleanup()
            await store.close()
            task.cancel()
            await task.value
            throw error
        }
        await cleanup()
        await store.close()
        task.cancel()
        await task.value
    }
}
