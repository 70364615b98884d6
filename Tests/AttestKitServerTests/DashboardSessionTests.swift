import Foundation
import Testing

@testable import AttestKitServer

/// A dashboard session is bound to the admin token: rotating the token ends every session, even where the sessions
/// are kept in a table the old and the new server share.
@Suite("Dashboard sessions")
struct DashboardSessionTests {
    let t0 = Date(timeIntervalSince1970: 1_800_000_000)

    @Test("a session opened under one admin token is not honoured under another, even from a shared table")
    func boundToTheAdminToken() {
        let table = DashboardSessions.Table()
        let old = DashboardSessions(lifetime: 3_600, adminToken: Array("old-admin-token-0123456789".utf8), table: table)
        let rotated = DashboardSessions(
            lifetime: 3_600, adminToken: Array("new-admin-token-0123456789".utf8), table: table)
        let cookie = old.open(now: t0)
        #expect(old.isValid(cookie, now: t0 + 1))
        #expect(!rotated.isValid(cookie, now: t0 + 1))
        #expect(old.digest(cookie) != rotated.digest(cookie))
        // The digest is keyed: not the plain SHA-256 of the cookie that anyone could compute.
        let fresh = rotated.open(now: t0)
        #expect(rotated.isValid(fresh, now: t0 + 1) && !old.isValid(fresh, now: t0 + 1))
    }

    @Test("a closed session opens nothing; closing another value closes nothing")
    func close() {
        let sessions = DashboardSessions(lifetime: 3_600, adminToken: Array("admin-token-0123456789".utf8))
        let first = sessions.open(now: t0)
        let second = sessions.open(now: t0)
        sessions.close("not-a-session")
        sessions.close("")
        #expect(sessions.isValid(first, now: t0) && sessions.isValid(second, now: t0))
        sessions.close(first)
        #expect(!sessions.isValid(first, now: t0) && sessions.isValid(second, now: t0))
    }
}
