package import AttestKit
package import Foundation

extension SQLStore {
    /// Rows per `INSERT` of ``seedKeys(_:appID:environment:now:)``: two binds each, plus three shared, within
    /// SQLite's smallest limit of bound parameters (999).
    static var seededRowsPerStatement: Int { 400 }

    /// Inserts a benchmark's population in one transaction, ``seededRowsPerStatement`` rows per `INSERT`; the
    /// triggers of `key_counts` count them as any registration.
    func seedKeys(
        _ keys: [SeededKey], appID: AppID, environment: AppAttestEnvironment, now: Date
    ) async throws(StoreError) {
        for key in keys {
            guard key.keyID.count == 32, key.publicKeyX963.count == 65, key.publicKeyX963.first == 0x04 else {
                throw StoreError(.invalidInput, "a seeded key needs a 32-byte identifier and a 65-byte X9.63 point")
            }
        }
        let shared: [SQLValue] = [
            .text(appID.description), .text(environment.rawValue), .integer(try StoreTime.milliseconds(now, "now")),
        ]
        let statements = stride(from: 0, to: keys.count, by: Self.seededRowsPerStatement).map { start in
            let batch = keys[start..<min(start + Self.seededRowsPerStatement, keys.count)]
            return SQLStatement(
                seedText(rows: batch.count),
                shared + batch.flatMap { [SQLValue.bytes($0.keyID), .bytes($0.publicKeyX963)] })
        }
        _ = try await executor.transaction("seeding keys", by: nil) { run in
            for statement in statements { _ = try await run(statement) }
        }
    }

    /// `VACUUM (ANALYZE)` of `keys` on PostgreSQL, `ANALYZE` on SQLite (``KeySeedingStore/settleSeededKeys()``), with
    /// as long as a table of millions of rows takes rather than the operation timeout.
    func settleSeededKeys() async throws(StoreError) {
        let keys = executor.table("keys")
        let sql = executor.dialect == .postgres ? "VACUUM (ANALYZE) \(keys)" : "ANALYZE \(keys)"
        _ = try await executor.query(
            "settling the seeded keys", SQLStatement(sql), access: .write, by: .now + .seconds(3_600))
    }

    /// `INSERT INTO keys … VALUES (…), (…)` of `rows` keys; parameters 1 to 3 are the app, the environment and
    /// the time, then two per key.
    private func seedText(rows: Int) -> String {
        let p = executor.dialect.parameter
        let values = (0..<rows).map { row in "(\(p(4 + 2 * row)), \(p(5 + 2 * row)), \(p(1)), \(p(2)), 0, \(p(3)))" }
        return """
            INSERT INTO \(executor.table("keys")) (key_id, public_key, app_id, environment, counter, created_at_ms)
            VALUES \(values.joined(separator: ", "))
            """
    }
}

extension SQLiteAttestationStore: KeySeedingStore {
    /// Inserts a benchmark's population (``KeySeedingStore``), on the writer.
    package func seedKeys(
        _ keys: [SeededKey], appID: AppID, environment: AppAttestEnvironment, now: Date
    ) async throws(StoreError) {
        try await sql.seedKeys(keys, appID: appID, environment: environment, now: now)
    }

    /// Settles the population once seeded (``KeySeedingStore``).
    package func settleSeededKeys() async throws(StoreError) {
        try await sql.settleSeededKeys()
    }
}

extension PostgresAttestationStore: KeySeedingStore {
    /// Inserts a benchmark's population (``KeySeedingStore``), on one pooled connection.
    package func seedKeys(
        _ keys: [SeededKey], appID: AppID, environment: AppAttestEnvironment, now: Date
    ) async throws(StoreError) {
        try await sql.seedKeys(keys, appID: appID, environment: environment, now: now)
    }

    /// Settles the population once seeded (``KeySeedingStore``).
    package func settleSeededKeys() async throws(StoreError) {
        try await sql.settleSeededKeys()
    }
}
