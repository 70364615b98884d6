import AttestKitTestSupport
import AttestKit
import Foundation
import ServiceLifecycle
import Testing

@testable import AttestKitStore

/// The backends every store test runs against.
enum StoreBackend: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case memory
    case sqlite
    case postgres

    var testDescription: String { rawValue }

    /// The backends to test: PostgreSQL when it answers or is required (see ``PostgresTestServer``).
    static func all() async -> [StoreBackend] {
        await PostgresTestServer.shared.shouldRun() ? allCases : [.memory, .sqlite]
    }

    /// Backends with a durable file or server, which can be closed and reopened.
    static func durable() async -> [StoreBackend] {
        await all().filter { $0 != .memory }
    }

    /// Each backend with one store, and the SQL backends also with two separate stores (two processes' worth
    /// of connections on one SQLite file; two `PostgresClient`s, as two replicas).
    static func clientVariants() async -> [(StoreBackend, Int)] {
        await all().flatMap { backend in backend == .memory ? [(backend, 1)] : [(backend, 1), (backend, 2)] }
    }

    /// Runs `body` with a fresh, prepared store of this backend, then closes and removes it.
    func withStore(_ body: (any AttestationStore) async throws -> Void) async throws {
        try await withStores(count: 1) { stores in try await body(stores[0]) }
    }

    /// Runs `body` with `count` stores sharing one fresh database (the same instance for `memory`).
    func withStores(count: Int, _ body: ([any AttestationStore]) async throws -> Void) async throws {
        switch self {
        case .memory:
            let store = MemoryAttestationStore()
            try await Self.running(Array(repeating: store, count: count), body)
        case .sqlite:
            let directory = try TemporaryDirectory()
            defer { directory.remove() }
            let path = directory.url.appendingPathComponent("nested/store.sqlite").path
            try await Self.running((0..<count).map { _ in SQLiteAttestationStore(path: path) }, body)
        case .postgres:
            guard await PostgresTestServer.shared.isAvailable() else { return }
            let gate = PostgresTestServer.shared.gate
            await gate.enter()
            do {
                let schema = "t_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
                let stores = try (0..<count).map { _ in try PostgresTestServer.store(schema: schema) }
                try await Self.running(stores.map { $0 as any AttestationStore }) { running in
                    do {
                        try await body(running)
                        try await stores[0].dropSchema()
                    } catch {
                        try? await stores[0].dropSchema()
                        throw error
                    }
                }
            } catch {
                await gate.leave()
                throw error
            }
            await gate.leave()
        }
    }

    /// Runs the stores' services, prepares them all at once, runs `body`, closes them.
    static func running(
        _ stores: [any AttestationStore], _ body: ([any AttestationStore]) async throws -> Void
    ) async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            for store in stores { group.addTask { try await store.run() } }
            do {
                try await withThrowingTaskGroup(of: Void.self) { prepare in
                    for store in stores { prepare.addTask { try await store.prepare() } }
                    try await prepare.waitForAll()
                }
                try await body(stores)
            } catch {
                for store in stores { await store.close() }
                group.cancelAll()
                throw error
            }
            for store in stores { await store.close() }
            group.cancelAll()
        }
    }
}

/// A directory under the system's temporary directory, removed by ``remove()``.
struct TemporaryDirectory {
    let url: URL

    init() throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("attestkit-store-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    func remove() {
        try? FileManager.default.removeItem(at: url)
    }
}
