import AttestKit
import AttestKitStore
import Foundation
import Testing

/// Races on one challenge and one counter: of many concurrent identical requests exactly one wins, in one
/// process and across two clients of one database (two replicas).
@Suite("Concurrency")
struct ConcurrencyTests {
    let t0 = TestKeys.t0
    static let contenders = 64

    @Test(
        "64 concurrent consumers of one challenge: exactly one succeeds", arguments: await StoreBackend.clientVariants()
    )
    func consumeRace(backend: StoreBackend, clients: Int) async throws {
        try await backend.withStores(count: clients) { stores in
            let challenge = try await stores[0].issueChallenge(purpose: .attest, now: t0)
            let outcomes = await withTaskGroup(of: StoreError.Code?.self) { group in
                for index in 0..<Self.contenders {
                    let store = stores[index % stores.count]
                    group.addTask {
                        await outcome {
                            _ = try await store.consumeChallenge(challenge.id, purpose: .attest, keyID: nil, now: t0)
                        }
                    }
                }
                return await group.reduce(into: [StoreError.Code?]()) { $0.append($1) }
            }
            #expect(outcomes.filter { $0 == nil }.count == 1)
            #expect(outcomes.filter { $0 == .challengeConsumed }.count == Self.contenders - 1)
        }
    }

    @Test(
        "64 concurrent advances to the same counter: exactly one succeeds",
        arguments: await StoreBackend.clientVariants())
    func advanceRace(backend: StoreBackend, clients: Int) async throws {
        try await backend.withStores(count: clients) { stores in
            let registration = try TestKeys.registration()
            _ = try await stores[0].registerKey(registration, now: t0)
            try await stores[0].advanceCounter(of: registration.keyID, to: 6, now: t0)
            let outcomes = await withTaskGroup(of: StoreError.Code?.self) { group in
                for index in 0..<Self.contenders {
                    let store = stores[index % stores.count]
                    group.addTask {
                        await outcome { try await store.advanceCounter(of: registration.keyID, to: 7, now: t0) }
                    }
                }
                return await group.reduce(into: [StoreError.Code?]()) { $0.append($1) }
            }
            #expect(outcomes.filter { $0 == nil }.count == 1)
            #expect(outcomes.filter { $0 == .counterNotIncreasing }.count == Self.contenders - 1)
            #expect(try await stores[0].key(registration.keyID)?.counter == 7)
        }
    }

    /// Eight tasks advance one key through 1…160, each value tried by two tasks, each task in increasing order.
    /// A value is accepted at most once; after a task's advance to `v` is accepted, every later read sees
    /// at least `v` (the counter never moves back); the final counter is the largest accepted value.
    @Test(
        "increasing advances: the final counter is the largest accepted, never moving back",
        arguments: await StoreBackend.clientVariants())
    func increasingAdvances(backend: StoreBackend, clients: Int) async throws {
        let tasks = 8
        let top: UInt32 = 160
        try await backend.withStores(count: clients) { stores in
            let registration = try TestKeys.registration()
            let keyID = registration.keyID
            _ = try await stores[0].registerKey(registration, now: t0)
            let results = try await withThrowingTaskGroup(of: (accepted: [UInt32], backwards: [UInt32]).self) { group in
                for task in 0..<tasks {
                    let store = stores[task % stores.count]
                    group.addTask {
                        var accepted: [UInt32] = []
                        var backwards: [UInt32] = []
                        for value in stride(from: UInt32(task % (tasks / 2) + 1), through: top, by: tasks / 2) {
                            do {
                                try await store.advanceCounter(of: keyID, to: value, now: t0)
                                accepted.append(value)
                                let seen = try await store.key(keyID)?.counter ?? 0
                                if seen < value { backwards.append(value) }
                            } catch let error as StoreError where error.code == .counterNotIncreasing {
                                continue
                            }
                        }
                        return (accepted, backwards)
                    }
                }
                return try await group.reduce(into: [(accepted: [UInt32], backwards: [UInt32])]()) { $0.append($1) }
            }
            let accepted = results.flatMap(\.accepted)
            #expect(Set(accepted).count == accepted.count, "a value was accepted twice")
            #expect(results.flatMap(\.backwards).isEmpty, "the counter moved back after an accepted advance")
            #expect(accepted.contains(top))
            #expect(try await stores[0].key(keyID)?.counter == accepted.max())
            #expect(try await stores[stores.count - 1].key(keyID)?.counter == top)
        }
    }

    @Test("concurrent registrations of one key: exactly one succeeds", arguments: await StoreBackend.clientVariants())
    func registerRace(backend: StoreBackend, clients: Int) async throws {
        try await backend.withStores(count: clients) { stores in
            let registration = try TestKeys.registration()
            let outcomes = await withTaskGroup(of: StoreError.Code?.self) { group in
                for index in 0..<16 {
                    let store = stores[index % stores.count]
                    group.addTask { await outcome { _ = try await store.registerKey(registration, now: t0) } }
                }
                return await group.reduce(into: [StoreError.Code?]()) { $0.append($1) }
            }
            #expect(outcomes.filter { $0 == nil }.count == 1)
            #expect(outcomes.filter { $0 == .keyExists }.count == 15)
        }
    }

    @Test("replicas preparing one new schema together migrate it once", arguments: await StoreBackend.durable())
    func concurrentPrepare(backend: StoreBackend) async throws {
        // withStores prepares all four stores at once on a fresh database.
        try await backend.withStores(count: 4) { stores in
            let registration = try TestKeys.registration()
            _ = try await stores[3].registerKey(registration, now: t0)
            #expect(try await stores[0].key(registration.keyID) != nil)
        }
    }
}

@Suite("Fleet work")
struct FleetWorkTests {
    let t0 = TestKeys.t0

    @Test(
        "8 concurrent claimers over 40 due receipts, on one or two clients: each key claimed exactly once",
        arguments: await StoreBackend.clientVariants())
    func claimsShareTheWork(backend: StoreBackend, clients: Int) async throws {
        try await backend.withStores(count: clients) { stores in
            var due: Set<KeyID> = []
            for _ in 0..<40 {
                let registration = try TestKeys.registration(receiptRefreshAt: t0)
                _ = try await stores[0].registerKey(registration, now: t0)
                due.insert(registration.keyID)
            }
            let claims = try await withThrowingTaskGroup(of: [KeyID].self) { group in
                for claimer in 0..<8 {
                    let store = stores[claimer % stores.count]
                    group.addTask {
                        var mine: [KeyID] = []
                        while true {
                            let claimed = try await store.claimReceiptRefresh(
                                now: t0.addingTimeInterval(60), limit: 3, lease: .seconds(600), activeSince: t0)
                            if claimed.isEmpty { return mine }
                            mine += claimed.map(\.keyID)
                        }
                    }
                }
                return try await group.reduce(into: []) { $0 += $1 }
            }
            #expect(claims.count == 40)
            #expect(Set(claims) == due)
        }
    }

    @Test(
        "a job lease: one holder of 16 concurrent callers, renewed by its holder, taken over once it expires",
        arguments: await StoreBackend.clientVariants())
    func jobLease(backend: StoreBackend, clients: Int) async throws {
        try await backend.withStores(count: clients) { stores in
            let lease = Duration.seconds(180)
            let winners = try await withThrowingTaskGroup(of: String?.self) { group in
                for caller in 0..<16 {
                    let store = stores[caller % stores.count]
                    group.addTask {
                        try await store.acquireLease(on: "cleanup", holder: "replica-\(caller)", duration: lease, now: t0)
                            ? "replica-\(caller)" : nil
                    }
                }
                return try await group.compactMap { $0 }.reduce(into: []) { $0.append($1) }
            }
            #expect(winners.count == 1)
            let holder = try #require(winners.first)
            let other = holder == "replica-0" ? "replica-1" : "replica-0"
            // The holder renews; another is refused until the lease expires, then takes it.
            #expect(try await stores[0].acquireLease(on: "cleanup", holder: holder, duration: lease, now: t0 + 60))
            #expect(try await !stores[0].acquireLease(on: "cleanup", holder: other, duration: lease, now: t0 + 239))
            #expect(try await stores[0].acquireLease(on: "cleanup", holder: other, duration: lease, now: t0 + 240))
            #expect(try await !stores[0].acquireLease(on: "cleanup", holder: holder, duration: lease, now: t0 + 241))
            // Another job is another lease.
            #expect(try await stores[0].acquireLease(on: "counts", holder: holder, duration: lease, now: t0 + 241))
            for (job, holder) in [("", "a"), ("a", ""), (String(repeating: "j", count: 65), "a"), ("a\n", "a")] {
                await #expect(throws: StoreError.invalidInput) {
                    _ = try await stores[0].acquireLease(on: job, holder: holder, duration: lease, now: t0)
                }
            }
            await #expect(throws: StoreError.invalidInput) {
                _ = try await stores[0].acquireLease(on: "a", holder: "b", duration: .zero, now: t0)
            }
        }
    }

    @Test(
        "key counts kept by the store: 48 concurrent registrations on one or two clients, then revocations",
        arguments: await StoreBackend.clientVariants())
    func countsKept(backend: StoreBackend, clients: Int) async throws {
        try await backend.withStores(count: clients) { stores in
            let registrations = try (0..<48).map { index in
                try TestKeys.registration(environment: index % 3 == 0 ? .development : .production)
            }
            try await withThrowingTaskGroup(of: Void.self) { group in
                for (index, registration) in registrations.enumerated() {
                    let store = stores[index % stores.count]
                    group.addTask { _ = try await store.registerKey(registration, now: t0) }
                }
                try await group.waitForAll()
            }
            // A registration refused (the key exists) counts nothing.
            await #expect(throws: StoreError.keyExists) { _ = try await stores[0].registerKey(registrations[0], now: t0) }
            for registration in registrations.prefix(6) { _ = try await stores[0].revokeKey(registration.keyID, now: t0) }
            _ = try await stores[0].revokeKey(registrations[0].keyID, now: t0 + 1)
            for store in stores {
                let counts = try await store.keyCounts()
                #expect(counts.count(environment: .development, state: .active) == 14)
                #expect(counts.count(environment: .development, state: .revoked) == 2)
                #expect(counts.count(environment: .production, state: .active) == 28)
                #expect(counts.count(environment: .production, state: .revoked) == 4)
            }
        }
    }
}
