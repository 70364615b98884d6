import AttestKit
import AttestKitTestSupport
import Foundation
import Testing

@testable import AttestKitStore

/// What PostgreSQL says of a statement reaches the operator, and a migration does not stall the fleet.
extension PostgresBackendTests {
    @Test(
        "a statement refused inside a transaction keeps its SQLSTATE in the error (the transaction's wrapper is opened)",
        .enabled(skipReason) { await PostgresTestServer.shared.shouldRun() })
    func transactionErrorKeepsItsState() async throws {
        guard await PostgresTestServer.shared.isAvailable() else { return }
        try await StoreBackend.postgres.withStore { store in
            let postgres = try #require(store as? PostgresAttestationStore)
            let registration = try TestKeys.registration()
            _ = try await store.registerKey(registration, now: TestKeys.t0)
            // Every risk metric refused by a constraint: storing a receipt (one transaction) fails inside it.
            try await postgres.execute(
                """
                ALTER TABLE \(postgres.executor.schema.table("risk_metrics"))
                    ADD CONSTRAINT no_metric CHECK (risk_metric < 0) NOT VALID
                """)
            let error = await #expect(throws: StoreError.self) {
                _ = try await store.storeReceipt(
                    try TestKeys.receipt(at: 60, riskMetric: 1), for: registration.keyID, now: TestKeys.t0)
            }
            #expect(error?.reason.contains("SQLSTATE 23514") == true, "\(String(describing: error?.reason))")
        }
    }

    @Test(
        "migration 10's CHECK on challenges is added NOT VALID (no scan under the exclusive lock) and still enforced",
        .enabled(skipReason) { await PostgresTestServer.shared.shouldRun() })
    func migrationTenDoesNotScanChallenges() async throws {
        guard await PostgresTestServer.shared.isAvailable() else { return }
        try await StoreBackend.postgres.withStore { store in
            let postgres = try #require(store as? PostgresAttestationStore)
            let schema = postgres.executor.schema
            let rows = try await postgres.executor.query(
                "reading a constraint",
                SQLStatement(
                    """
                    SELECT convalidated::int AS validated FROM pg_constraint
                    WHERE conname = 'challenges_rp_id_hash_check'
                        AND conrelid = '\(schema.quoted).challenges'::regclass
                    """), access: .read)
            #expect(try rows.first?.integer("validated") == 0)
            await #expect(throws: StoreError.self) {
                try await postgres.execute(
                    """
                    INSERT INTO \(schema.table("challenges")) (id, challenge, purpose, created_at_ms, expires_at_ms,
                        rp_id_hash)
                    VALUES ('\\x00112233445566778899aabbccddeeff', '\\x00', 'attest', 0, 1, '\\x0011')
                    """)
            }
        }
    }
}

@Suite("What a database server says, repeated in logs and errors")
struct SQLStateTests {
    @Test("only a well-formed SQLSTATE is repeated: five digits or capital letters, nothing a server could forge")
    func sqlStates() {
        for state in ["23514", "57P01", "08006", "XX000"] { #expect(PostgresExecutor.sqlState(state) == state) }
        for forged in ["\n{\"level\":\"critical\"}", "\u{1b}[2J", "2351", "235140", "57p01", "", "23 14", "٢٣٥١٤"] {
            #expect(PostgresExecutor.sqlState(forged) == nil, "\(forged)")
        }
    }
}
