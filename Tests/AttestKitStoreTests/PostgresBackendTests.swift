import AttestKitStore
import Testing

/// Whether the PostgreSQL cases of the other suites run. Skipped, with the reason, when PostgreSQL is neither
/// reachable nor required; failing when it is required (CI, `ATTESTKIT_REQUIRE_POSTGRES=1`) but unreachable.
@Suite("PostgreSQL backend")
struct PostgresBackendTests {
    @Test(
        "the PostgreSQL cases run against a real server",
        .enabled(
            """
            PostgreSQL is not reachable at POSTGRES_HOST:POSTGRES_PORT (default 127.0.0.1:5432): its cases are left \
            out. Run scripts/postgres, or set ATTESTKIT_REQUIRE_POSTGRES=1 to fail instead.
            """
        ) { await PostgresTestServer.shared.shouldRun() })
    func serverAnswers() async throws {
        #expect(await PostgresTestServer.shared.isAvailable())
        let location = PostgresTestServer.configuration(schema: "attestkit").description
        try await StoreBackend.postgres.withStore { store in
            let challenge = try await store.issueChallenge(purpose: .attest, now: TestKeys.t0)
            _ = try await store.consumeChallenge(challenge.id, purpose: .attest, keyID: nil, now: TestKeys.t0)
        }
        print("PostgreSQL cases ran against \(location)")
    }
}
