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
