import AttestKit
import AttestKitStore
import Foundation
import Testing

/// Shared budgets: a token bucket in the database, spent atomically, so replicas sharing it share the limit.
@Suite("Shared rate budgets")
struct RateBudgetTests {
    let t0 = TestKeys.t0

    @Test("a budget spends its burst, refills at its rate, and says how long to wait", arguments: await StoreBackend.all())
    func spendsAndRefills(backend: StoreBackend) async throws {
        try await backend.withStore { store in
            let budget = try RateBudget(name: "attestations/ABCDE12345.com.example.app", perMinute: 6)
            for _ in 0..<6 { #expect(try await store.take(from: budget, now: t0) == nil) }
            #expect(try await store.take(from: budget, now: t0) == 10)  // one request per 10 s
            #expect(try await store.take(from: budget, now: t0.addingTimeInterval(4)) == 6)
            #expect(try await store.take(from: budget, now: t0.addingTimeInterval(10)) == nil)
            #expect(try await store.take(from: budget, now: t0.addingTimeInterval(10)) != nil)
            // Another budget is independent; a full minute refills the whole burst, never more.
            let other = try RateBudget(name: "attestations/ABCDE12345.com.example.other", perMinute: 6)
            #expect(try await store.take(from: other, now: t0) == nil)
            let later = t0.addingTimeInterval(3_600)
            for _ in 0..<6 { #expect(try await store.take(from: budget, now: later) == nil) }
            #expect(try await store.take(from: budget, now: later) != nil)
            // A clock going backwards neither refills nor fails.
            #expect(try await store.take(from: budget, now: later.addingTimeInterval(-600)) != nil)
        }
    }

    @Test(
        "64 concurrent takes from a budget of 10, across two clients: exactly 10 succeed",
        arguments: await StoreBackend.clientVariants())
    func concurrentTakes(backend: StoreBackend, clients: Int) async throws {
        try await backend.withStores(count: clients) { stores in
            let budget = try RateBudget(name: "race", perMinute: 10)
            let taken = try await withThrowingTaskGroup(of: Bool.self) { group in
                for index in 0..<64 {
                    let store = stores[index % stores.count]
                    group.addTask { try await store.take(from: budget, now: t0) == nil }
                }
                return try await group.reduce(into: 0) { $0 += $1 ? 1 : 0 }
            }
            #expect(taken == 10)
        }
    }

    @Test(
        "a budget of 50 a second with a burst of one: requests 20 ms apart, 50 in a second however hard it is asked",
        arguments: await StoreBackend.all())
    func perSecond(backend: StoreBackend) async throws {
        try await backend.withStore { store in
            let budget = try RateBudget(name: "receipt-refresh/apple", perSecond: 50)
            func take(_ milliseconds: Int) async throws -> Int? {
                try await store.take(from: budget, now: t0.addingTimeInterval(Double(milliseconds) / 1_000))
            }
            #expect(try await take(0) == nil)
            #expect(try await take(0) == 1, "no burst: refused, with the whole-second wait at least")
            #expect(try await take(19) != nil)
            #expect(try await take(20) == nil)
            // A pause never builds a burst: after a minute, still one request.
            #expect(try await take(60_000) == nil)
            #expect(try await take(60_000) != nil)
            // Asked every millisecond for a second: 50 granted.
            var granted = 0
            for millisecond in 120_000..<121_000 where try await take(millisecond) == nil { granted += 1 }
            #expect(granted == 50)
        }
    }

    @Test(
        "a daily budget (#33): its ceiling for the UTC day, never refilled within it, full again the next day",
        arguments: await StoreBackend.all())
    func daily(backend: StoreBackend) async throws {
        try await backend.withStore { store in
            // 2026-11-27T23:00:00Z: an hour before the day ends.
            let evening = Date(timeIntervalSince1970: 1_795_820_400)
            let budget = try RateBudget.daily(name: "ramp/ABCDE12345.com.example.app", ceiling: 3, now: evening)
            for _ in 0..<3 { #expect(try await store.take(from: budget, now: evening) == nil) }
            #expect(try await store.take(from: budget, now: evening) == 3_600, "until the next UTC day")
            // Fifty-nine minutes on, the same day: still nothing refilled.
            let later = evening.addingTimeInterval(3_540)
            #expect(try await store.take(from: budget, now: later) == 60)
            // The next UTC day is another budget, full.
            let midnight = evening.addingTimeInterval(3_600)
            let next = try RateBudget.daily(name: "ramp/ABCDE12345.com.example.app", ceiling: 3, now: midnight)
            #expect(next != budget)
            for _ in 0..<3 { #expect(try await store.take(from: next, now: midnight) == nil) }
            #expect(try await store.take(from: next, now: midnight) == 86_400)
        }
    }

    @Test(
        "64 concurrent takes from a daily budget of 10, across two clients: exactly 10 succeed (#33)",
        arguments: await StoreBackend.clientVariants())
    func concurrentDailyTakes(backend: StoreBackend, clients: Int) async throws {
        try await backend.withStores(count: clients) { stores in
            let budget = try RateBudget.daily(name: "ramp/race", ceiling: 10, now: t0)
            let taken = try await withThrowingTaskGroup(of: Bool.self) { group in
                for index in 0..<64 {
                    let store = stores[index % stores.count]
                    group.addTask {
                        try await store.take(from: budget, now: t0.addingTimeInterval(Double(index))) == nil
                    }
                }
                return try await group.reduce(into: 0) { $0 += $1 ? 1 : 0 }
            }
            #expect(taken == 10)
        }
    }

    @Test("names and rates out of range are refused")
    func bounds() {
        #expect(throws: StoreError.self) { try RateBudget(name: "a", perSecond: 0) }
        #expect(throws: StoreError.self) { try RateBudget(name: "a", perSecond: 5, burst: 0) }
        #expect(throws: StoreError.self) { try RateBudget(name: "a", perSecond: 5, burst: 6) }
        #expect(throws: StoreError.self) { try RateBudget(name: "", perMinute: 1) }
        #expect(throws: StoreError.self) { try RateBudget(name: String(repeating: "a", count: 257), perMinute: 1) }
        #expect(throws: StoreError.self) { try RateBudget(name: "a", perMinute: 0) }
        #expect(throws: StoreError.self) { try RateBudget(name: "a", perMinute: 1_000_001) }
        #expect(throws: StoreError.self) { try RateBudget.daily(name: "a", ceiling: 0, now: t0) }
        #expect(throws: StoreError.self) { try RateBudget.daily(name: "a", ceiling: 1_000_001, now: t0) }
    }

    @Test(
        "a name with a control character is refused before any store (PostgreSQL refuses NUL, SQLite stops at it)",
        arguments: await StoreBackend.all())
    func controlCharacters(backend: StoreBackend) async throws {
        for name in ["a\u{0}b", "\u{0}a", "a\nb", "a\u{7F}"] {
            #expect(throws: StoreError.invalidInput) { try RateBudget(name: name, perMinute: 5) }
        }
        try await backend.withStore { store in
            let budget = try RateBudget(name: "per-client/2001:db8::1", perMinute: 5)
            #expect(try await store.take(from: budget, now: t0) == nil)
        }
    }
}
