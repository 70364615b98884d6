import AttestKit
import AttestKitStore
import Crypto
import Foundation
import Testing

/// Dashboard sessions in the store: a digest opened with an expiry is live until then on every client of the
/// database, a logout deletes it for all, expired ones are purged, and the store keeps a bounded number.
@Suite("Dashboard session store")
struct DashboardSessionStoreTests {
    let t0 = TestKeys.t0

    /// A session digest as the dashboard computes it: HMAC-SHA256 of a cookie value keyed by the admin token.
    static func digest(_ value: String, adminToken: String = "admin-token-0123456789") -> [UInt8] {
        Array(
            HMAC<SHA256>.authenticationCode(for: Array(value.utf8), using: SymmetricKey(data: Array(adminToken.utf8))))
    }

    @Test("a session opened on one client is live on another until it expires", arguments: await StoreBackend.all())
    func openAndLookUp(backend: StoreBackend) async throws {
        try await backend.withStores(count: 2) { stores throws in
            let (one, two) = (stores[0], stores[1])
            let session = Self.digest("cookie-1")
            try await one.openDashboardSession(session, expiresAt: t0 + 60, capacity: 32, now: t0)
            #expect(try await two.isDashboardSessionLive(session, now: t0))
            #expect(try await two.isDashboardSessionLive(session, now: t0 + 59.999))
            #expect(try await !two.isDashboardSessionLive(session, now: t0 + 60))
            #expect(try await !one.isDashboardSessionLive(Self.digest("cookie-2"), now: t0))
        }
    }

    @Test("a digest under another admin token is not honoured", arguments: await StoreBackend.all())
    func otherAdminToken(backend: StoreBackend) async throws {
        try await backend.withStore { store throws in
            try await store.openDashboardSession(
                Self.digest("cookie", adminToken: "old-admin-token-0123"), expiresAt: t0 + 60, capacity: 32, now: t0)
            let rotated = Self.digest("cookie", adminToken: "new-admin-token-0123")
            #expect(try await !store.isDashboardSessionLive(rotated, now: t0))
            #expect(
                try await store.isDashboardSessionLive(
                    Self.digest("cookie", adminToken: "old-admin-token-0123"), now: t0))
        }
    }

    @Test("a logout on one client ends the session on every client", arguments: await StoreBackend.all())
    func close(backend: StoreBackend) async throws {
        try await backend.withStores(count: 2) { stores throws in
            let (first, second) = (Self.digest("first"), Self.digest("second"))
            for session in [first, second] {
                try await stores[0].openDashboardSession(session, expiresAt: t0 + 60, capacity: 32, now: t0)
            }
            #expect(try await stores[1].closeDashboardSession(first) == true)
            #expect(try await stores[1].closeDashboardSession(first) == false)
            #expect(try await !stores[0].isDashboardSessionLive(first, now: t0))
            #expect(try await stores[0].isDashboardSessionLive(second, now: t0))
        }
    }

    @Test("the cleanup deletes expired sessions only", arguments: await StoreBackend.all())
    func cleanup(backend: StoreBackend) async throws {
        try await backend.withStore { store throws in
            let (short, long) = (Self.digest("short"), Self.digest("long"))
            try await store.openDashboardSession(short, expiresAt: t0 + 60, capacity: 32, now: t0)
            try await store.openDashboardSession(long, expiresAt: t0 + 3_600, capacity: 32, now: t0)
            #expect(try await store.deleteExpiredDashboardSessions(now: t0 + 59) == 0)
            #expect(try await store.deleteExpiredDashboardSessions(now: t0 + 60) == 1)
            #expect(try await store.deleteExpiredDashboardSessions(now: t0 + 60) == 0)
            #expect(try await store.isDashboardSessionLive(long, now: t0 + 60))
            // Gone, not merely expired: a close finds nothing.
            #expect(try await store.closeDashboardSession(short) == false)
        }
    }

    @Test(
        "past the capacity, opening a session drops the oldest others and keeps the new one",
        arguments: await StoreBackend.all())
    func bound(backend: StoreBackend) async throws {
        try await backend.withStore { store throws in
            let sessions = (0..<5).map { Self.digest("session-\($0)") }
            for (index, session) in sessions.enumerated() {
                try await store.openDashboardSession(
                    session, expiresAt: t0 + 3_600, capacity: 3, now: t0 + Double(index))
            }
            var live: [Bool] = []
            for session in sessions { live.append(try await store.isDashboardSessionLive(session, now: t0 + 10)) }
            #expect(live == [false, false, true, true, true])
            // A flood in one millisecond keeps the bound too, and the newest session always survives.
            let flood = (0..<20).map { Self.digest("flood-\($0)") }
            for session in flood {
                try await store.openDashboardSession(session, expiresAt: t0 + 3_600, capacity: 3, now: t0 + 20)
                #expect(try await store.isDashboardSessionLive(session, now: t0 + 20))
            }
            var kept = 0
            for session in sessions + flood where try await store.isDashboardSessionLive(session, now: t0 + 20) {
                kept += 1
            }
            #expect(kept == 3)
            // Expired sessions are purged by the next opening.
            try await store.openDashboardSession(
                Self.digest("late"), expiresAt: t0 + 7_200, capacity: 3, now: t0 + 3_600)
            #expect(try await store.deleteExpiredDashboardSessions(now: t0 + 3_600) == 0)
        }
    }

    @Test(
        "logins at once on two clients of one database keep the capacity, and none fails",
        arguments: await StoreBackend.durable())
    func concurrentLogins(backend: StoreBackend) async throws {
        try await backend.withStores(count: 2) { stores throws in
            var all: [[UInt8]] = []
            for round in 0..<8 {
                let digests = (0..<12).map { Self.digest("round-\(round)-\($0)") }
                all += digests
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for (index, digest) in digests.enumerated() {
                        let store = stores[index % 2]
                        group.addTask {
                            try await store.openDashboardSession(
                                digest, expiresAt: t0 + 3_600, capacity: 4, now: t0 + Double(round))
                        }
                    }
                    try await group.waitForAll()
                }
                var live = 0
                for digest in all where try await stores[round % 2].isDashboardSessionLive(digest, now: t0 + 10) {
                    live += 1
                }
                #expect(live == 4, "round \(round): \(live) sessions live past a capacity of 4")
            }
        }
    }

    @Test(
        "digests that are not 32 bytes, expired openings and capacities out of bounds are refused",
        arguments: await StoreBackend.all())
    func bounds(backend: StoreBackend) async throws {
        try await backend.withStore { store throws in
            let session = Self.digest("cookie")
            for digest in [[], Array(session.prefix(31)), session + [0], Array(repeating: 0, count: 64)] {
                await #expect(throws: StoreError.invalidInput) {
                    try await store.openDashboardSession(digest, expiresAt: t0 + 60, capacity: 32, now: t0)
                }
                await #expect(throws: StoreError.invalidInput) {
                    _ = try await store.isDashboardSessionLive(digest, now: t0)
                }
                await #expect(throws: StoreError.invalidInput) { _ = try await store.closeDashboardSession(digest) }
            }
            for capacity in [0, -1, StoreLimits.maximumDashboardSessions + 1] {
                await #expect(throws: StoreError.invalidInput) {
                    try await store.openDashboardSession(session, expiresAt: t0 + 60, capacity: capacity, now: t0)
                }
            }
            await #expect(throws: StoreError.invalidInput) {
                try await store.openDashboardSession(session, expiresAt: t0, capacity: 32, now: t0)
            }
            #expect(try await !store.isDashboardSessionLive(session, now: t0))
        }
    }
}
