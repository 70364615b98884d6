import AttestKit
import AttestKitStore
import AttestKitTesting
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import NIOHTTP1
import Testing

@testable import AttestKitServer

/// A dashboard session lives in the store and is bound to the admin token: rotating the token ends every session,
/// even in the store the old and the new server share; a store that cannot answer lets nobody in.
@Suite("Dashboard sessions")
struct DashboardSessionTests {
    let t0 = Date(timeIntervalSince1970: 1_800_000_000)

    @Test("a session opened under one admin token is not honoured under another, even from a shared store")
    func boundToTheAdminToken() async throws {
        let store = MemoryAttestationStore()
        let old = DashboardSessions(lifetime: 3_600, adminToken: Array("old-admin-token-0123456789".utf8), store: store)
        let rotated = DashboardSessions(
            lifetime: 3_600, adminToken: Array("new-admin-token-0123456789".utf8), store: store)
        let cookie = try await old.open(now: t0)
        #expect(try await old.isValid(cookie, now: t0 + 1))
        #expect(try await !rotated.isValid(cookie, now: t0 + 1))
        #expect(old.digest(cookie) != rotated.digest(cookie))
        // The digest is keyed: not the plain SHA-256 of the cookie that anyone could compute.
        let fresh = try await rotated.open(now: t0)
        #expect(try await rotated.isValid(fresh, now: t0 + 1))
        #expect(try await !old.isValid(fresh, now: t0 + 1))
        // What the store keeps is the digest, never the cookie value.
        #expect(try await store.isDashboardSessionLive(old.digest(cookie), now: t0 + 1))
    }

    /// The status of `GET /dashboard` with `cookie` on another replica of `harness`'s store, whose admin token is
    /// `adminToken` and previous admin tokens `previous`.
    static func dashboardStatus(
        _ harness: ServerHarness, adminToken: String, previous: [String], cookie: String
    ) async throws -> HTTPResponse.Status {
        let configuration = ServerConfiguration(
            appIDs: [Fixture.appID], environments: .development, storageURL: "memory:",
            trustAnchors: Fixture.apple.trustAnchors, adminToken: adminToken, adminPreviousTokens: previous,
            backendTokens: [Fixture.backendToken], logLevel: .critical)
        let replica = try AttestKitServer(
            configuration: configuration, store: harness.store, logger: ServerHarness.silent,
            now: harness.clock.closure)
        return try await Application(router: replica.buildRouter()).test(.router) { client in
            try await client.execute(uri: "/dashboard", method: .get, headers: [.cookie: cookie]) { $0.status }
        }
    }

    @Test(
        "admin token rotation: a login with a previous admin token opens a session; rotating admin.token ends it",
        arguments: await StoreKind.all())
    func previousTokenSession(kind: StoreKind) async throws {
        let next = TrustBoundaryTests.nextAdminToken
        var options = ServerHarness.Options()
        options.adminToken = next
        options.adminPreviousTokens = [Fixture.adminToken]
        try await ServerHarness.with(kind, options) { harness in
            // Logs in with Fixture.adminToken: the previous token here.
            let cookie = try await DashboardLogoutTests.login(harness)
            #expect(try await harness.get("/dashboard", headers: [("Cookie", cookie)]).status == 200)
            // The session opens no operator API route.
            let key = try await harness.get("/v1/keys/AAAA", headers: [("Cookie", cookie)])
            #expect(key.status == 401 && key.errorCode == "admin_unauthorized", "\(key)")
            // Bound to admin.token alone: a replica with the same admin.token honours it whatever its previous
            // tokens (the rotation's last roll drops them)...
            #expect(try await Self.dashboardStatus(harness, adminToken: next, previous: [], cookie: cookie) == .ok)
            // ...and a replica with another admin.token (the next rotation, or one not rolled yet) honours it not.
            let third = "e2e-admin-token-third-00000"
            #expect(
                try await Self.dashboardStatus(harness, adminToken: third, previous: [next], cookie: cookie)
                    == .unauthorized)
            #expect(
                try await Self.dashboardStatus(harness, adminToken: Fixture.adminToken, previous: [], cookie: cookie)
                    == .unauthorized)
        }
    }

    @Test("a closed session opens nothing; closing another value closes nothing")
    func close() async throws {
        let sessions = DashboardSessions(
            lifetime: 3_600, adminToken: Array("admin-token-0123456789".utf8), store: MemoryAttestationStore())
        let first = try await sessions.open(now: t0)
        let second = try await sessions.open(now: t0)
        try await sessions.close("not-a-session")
        try await sessions.close("")
        try await sessions.close(String(repeating: "a", count: 129))
        #expect(try await sessions.isValid(first, now: t0))
        #expect(try await sessions.isValid(second, now: t0))
        try await sessions.close(first)
        #expect(try await !sessions.isValid(first, now: t0))
        #expect(try await sessions.isValid(second, now: t0))
        #expect(try await !sessions.isValid("", now: t0))
    }

    @Test("a session ends after its lifetime; past the capacity the oldest ends")
    func lifetimeAndCapacity() async throws {
        let sessions = DashboardSessions(
            lifetime: 60, adminToken: Array("admin-token-0123456789".utf8), store: MemoryAttestationStore(),
            capacity: 2)
        let first = try await sessions.open(now: t0)
        let second = try await sessions.open(now: t0 + 1)
        let third = try await sessions.open(now: t0 + 2)
        #expect(try await !sessions.isValid(first, now: t0 + 2))
        #expect(try await sessions.isValid(second, now: t0 + 2))
        #expect(try await sessions.isValid(third, now: t0 + 61.999))
        #expect(try await !sessions.isValid(third, now: t0 + 62))
    }

    @Test("a store that cannot answer: login, the session check and logout answer 503, never let in")
    func storageFailureFailsClosed() async throws {
        try await StorageFailureTests.withSQLiteServer { harness, store, capture in
            let cookie = try await DashboardLogoutTests.login(harness)
            #expect(try await harness.get("/dashboard", headers: [("Cookie", cookie)]).status == 200)

            // The store refuses writes: no session opens, and none ends (the logout says so).
            _ = try await store.executeOnWriter("PRAGMA query_only = ON")
            let login = try await harness.send(
                .POST, "/dashboard/login", body: Array("token=\(Fixture.adminToken)".utf8), allow5xx: true)
            #expect(login.status == 503 && login.errorCode == "storage_unavailable", "\(login)")
            #expect(login.header("Set-Cookie") == nil)
            let logout = try await harness.send(
                .POST, "/dashboard/logout", headers: [("Cookie", cookie), ("Sec-Fetch-Site", "same-origin")],
                allow5xx: true)
            #expect(logout.status == 503 && logout.errorCode == "storage_unavailable", "\(logout)")
            #expect(try await harness.get("/dashboard", headers: [("Cookie", cookie)]).status == 200)
            _ = try await store.executeOnWriter("PRAGMA query_only = OFF")

            // The store cannot read sessions: the cookie is refused with 503, for a browser too (no login form).
            _ = try await store.executeOnWriter("DROP TABLE dashboard_sessions")
            for headers in [[("Cookie", cookie)], [("Cookie", cookie), ("Accept", "text/html")]] {
                let page = try await harness.get("/dashboard", headers: headers, allow5xx: true)
                #expect(page.status == 503 && page.errorCode == "storage_unavailable", "\(page)")
                #expect(!page.text.contains("<html"))
            }
            try StorageFailureTests.expectLogLine(in: capture, naming: "session")
            // The admin token itself needs no session.
            #expect(try await harness.get("/dashboard", headers: ServerHarness.admin).status == 200)
        }
    }

    @Test("once a client's failure budget is spent its cookies are refused (429) without reading the store")
    func spentBudgetReadsNothing() async throws {
        var options = CredentialBudgetTests.options(budget: 2)
        options.sendsBackendToken = true
        try await StorageFailureTests.withSQLiteServer(options: options) { harness, store, _ in
            let cookie = try await DashboardLogoutTests.login(harness)
            for _ in 0..<2 {
                let forged = try await harness.get("/dashboard", headers: [("Cookie", "attestkit_session=forged")])
                #expect(forged.status == 401, "\(forged)")
            }
            // The store could not answer a lookup now; a spent budget answers first, for the live cookie too.
            _ = try await store.executeOnWriter("DROP TABLE dashboard_sessions")
            for sent in ["attestkit_session=forged", cookie] {
                let answer = try await harness.get("/dashboard", headers: [("Cookie", sent)], allow5xx: true)
                #expect(answer.status == 429 && answer.errorCode == "rate_limited", "\(answer)")
            }
        }
    }
}
