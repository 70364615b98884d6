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

/// A dashboard session lives in the store and is bound to the admin token that opened it: removing that token ends
/// its sessions, even in the store the old and the new server share; a store that cannot answer lets nobody in.
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
        "admin token rotation: a login with a previous admin token opens a session; removing that token ends it",
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
            // Bound to the token that opened it: honoured wherever that token is still accepted...
            let rolled = try await Self.dashboardStatus(
                harness, adminToken: next, previous: [Fixture.adminToken], cookie: cookie)
            #expect(rolled == .ok)
            #expect(
                try await Self.dashboardStatus(harness, adminToken: Fixture.adminToken, previous: [], cookie: cookie)
                    == .ok)
            // ...and nowhere else: the rotation's last roll (the previous token removed) ends it, on every replica.
            let removed = try await Self.dashboardStatus(harness, adminToken: next, previous: [], cookie: cookie)
            #expect(removed == .unauthorized)
            let third = "e2e-admin-token-third-00000"
            #expect(
                try await Self.dashboardStatus(harness, adminToken: third, previous: [next], cookie: cookie)
                    == .unauthorized)
        }
    }

    @Test("a session lives while the admin token that opened it is accepted, on every replica of one store")
    func boundToTheTokenThatOpenedIt() async throws {
        let store = MemoryAttestationStore()
        let (old, new) = (Array("old-admin-token-0123456789".utf8), Array("new-admin-token-0123456789".utf8))
        let before = DashboardSessions(lifetime: 3_600, adminToken: old, store: store)
        let rolling = DashboardSessions(lifetime: 3_600, adminToken: new, previousAdminTokens: [old], store: store)
        let after = DashboardSessions(lifetime: 3_600, adminToken: new, store: store)
        // Opened before the rotation, with the token that is current then.
        let early = try await before.open(now: t0)
        // Opened during it: with the old token (now a previous one) and with the new.
        let withOld = try await rolling.open(now: t0, token: old)
        let withNew = try await rolling.open(now: t0, token: new)
        let byDefault = try await rolling.open(now: t0)
        for cookie in [early, withOld, withNew, byDefault] { #expect(try await rolling.isValid(cookie, now: t0 + 1)) }
        // A replica not rolled yet accepts only the old token: the sessions it opened.
        #expect(try await before.isValid(withOld, now: t0 + 1))
        #expect(try await !before.isValid(withNew, now: t0 + 1))
        // The last roll drops the old token: its sessions end, the new token's go on.
        #expect(try await !after.isValid(early, now: t0 + 1))
        #expect(try await !after.isValid(withOld, now: t0 + 1))
        #expect(try await after.isValid(withNew, now: t0 + 1))
        #expect(try await after.isValid(byDefault, now: t0 + 1))
        // A logout ends a session whichever accepted token opened it.
        try await rolling.close(withOld)
        try await rolling.close(withNew)
        #expect(try await !rolling.isValid(withOld, now: t0 + 1))
        #expect(try await !before.isValid(withOld, now: t0 + 1))
        #expect(try await !after.isValid(withNew, now: t0 + 1))
        #expect(try await store.isDashboardSessionLive(rolling.digest(withOld, token: old), now: t0 + 1) == false)
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
