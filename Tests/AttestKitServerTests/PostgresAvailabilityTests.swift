import AttestKitTestSupport
import AttestKitStore
import Testing

/// Whether the PostgreSQL cases of the other suites run: reported skipped, with the reason, when PostgreSQL is
/// neither reachable nor required; failing when it is required (CI, `ATTESTKIT_REQUIRE_POSTGRES=1`) but unreachable.
@Suite("PostgreSQL availability")
struct PostgresAvailabilityTests {
    static let skipReason: Comment = """
        PostgreSQL is not reachable at POSTGRES_HOST:POSTGRES_PORT (default 127.0.0.1:5432): the server's PostgreSQL \
        cases are left out. Run `eval "$(scripts/postgres)"`, or set ATTESTKIT_REQUIRE_POSTGRES=1 to fail instead.
        """

    @Test(
        "the server's PostgreSQL cases run against a real server",
        .enabled(skipReason) { await PostgresTestServer.shared.shouldRun() })
    func serverAnswers() async throws {
        #expect(await PostgresTestServer.shared.isAvailable())
        #expect(await StoreKind.all() == StoreKind.allCases)
    }
}
