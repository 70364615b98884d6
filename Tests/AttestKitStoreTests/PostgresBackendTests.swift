import AttestKitTestSupport
import ServiceLifecycle
import Testing

@testable import AttestKitStore

/// Whether the PostgreSQL cases of the other suites run. Skipped, with the reason, when PostgreSQL is neither
/// reachable nor required; failing when it is required (CI, `ATTESTKIT_REQUIRE_POSTGRES=1`) but unreachable.
@Suite("PostgreSQL backend")
struct PostgresBackendTests {
    static let skipReason: Comment = """
        PostgreSQL is not reachable at POSTGRES_HOST:POSTGRES_PORT (default 127.0.0.1:5432): its cases are left \
        out. Run scripts/postgres, or set ATTESTKIT_REQUIRE_POSTGRES=1 to fail instead.
        """

    @Test(
        "the PostgreSQL cases run against a real server",
        .enabled(skipReason) { await PostgresTestServer.shared.shouldRun() })
    func serverAnswers() async throws {
        #expect(await PostgresTestServer.shared.isAvailable())
        let location = PostgresTestServer.configuration(schema: "attestkit").description
        try await StoreBackend.postgres.withStore { store in
            let challenge = try await store.issueChallenge(purpose: .attest, now: TestKeys.t0)
            _ = try await store.consumeChallenge(challenge.id, purpose: .attest, keyID: nil, now: TestKeys.t0)
        }
        print("PostgreSQL cases ran against \(location)")
    }

    @Test(
        "a refused login is storage_unavailable, with a SQLSTATE and without the password",
        .enabled(skipReason) { await PostgresTestServer.shared.shouldRun() })
    func refusedLogin() async throws {
        guard await PostgresTestServer.shared.isAvailable() else { return }
        var configuration = PostgresTestServer.configuration(schema: "attestkit_never")
        configuration.password = "not-the-password-7f3a"
        let store = try PostgresAttestationStore(configuration: configuration)
        let error = await withTaskGroup(of: StoreError?.self) { group in
            group.addTask {
                try? await store.run()
                return nil
            }
            group.addTask {
                do {
                    try await store.prepare()
                    return nil
                } catch let error as StoreError {
                    return error
                } catch {
                    return StoreError(.storageUnavailable, "\(type(of: error))")
                }
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first
        }
        let refusal = try #require(error)
        #expect(refusal.code == .storageUnavailable)
        #expect(refusal.reason.contains("SQLSTATE 28P01"), "\(refusal.reason)")
        #expect(!refusal.reason.contains("not-the-password"))
        #expect(!configuration.description.contains("not-the-password"))
    }
}
