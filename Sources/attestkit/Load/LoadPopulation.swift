import AttestKit
import AttestKitStore
import AttestKitTesting
import AttestKitWire
import Crypto
import Foundation

/// `attestkit load --population N`: N registered keys written straight into the store before the server starts,
/// `signable` of them keys the load can sign for, spread evenly through the others, and the spread run's requests.
///
/// The other keys are rows only: a random identifier and the public key of a signable key (a valid point), enough
/// for the tables and their indexes to be the size of a real population. The rows go in through
/// ``KeySeedingStore`` (multi-row `INSERT`s in transactions of ``rowsPerTransaction``), a path `serve` never takes.
struct LoadPopulation {
    /// The keys the spread run signs with.
    let keys: KeyPopulation
    /// How many keys were seeded.
    let count: Int
    /// How long seeding took, in seconds.
    let seedSeconds: Double
    /// The counter of every signable key's last assertion, so that a later level goes on from it.
    private var counters: [UInt32]

    init(keys: KeyPopulation, count: Int, seedSeconds: Double) {
        self.keys = keys
        self.count = count
        self.seedSeconds = seedSeconds
        self.counters = Array(repeating: 0, count: keys.count)
    }

    /// Keys written per transaction.
    static let rowsPerTransaction = 5_000

    /// Seeds `count` keys of `appID` (development) into the store at `storage`, `signable` of them signable.
    static func seed(
        storage: String, count: Int, signable: Int, appID: AppID, seed: UInt64 = UInt64.random(in: 0...UInt64.max)
    ) async throws -> LoadPopulation {
        let keys = KeyPopulation(count: min(signable, count), appID: appID, seed: seed)
        let start = ContinuousClock.now
        try await StoreURL(withEnvironmentPassword(storage)).withStore { store in
            guard let seeding = store as? any KeySeedingStore else {
                throw LoadFailure("--population needs a SQLite or PostgreSQL storage")
            }
            let now = Date()
            for first in stride(from: 0, to: count, by: rowsPerTransaction) {
                let rows = (first..<min(first + rowsPerTransaction, count)).map { row(at: $0, of: count, keys, seed) }
                try await seeding.seedKeys(rows, appID: appID, environment: .development, now: now)
            }
            try await seeding.settleSeededKeys()
        }
        return LoadPopulation(
            keys: keys, count: count, seedSeconds: LoadCommand.milliseconds(ContinuousClock.now - start) / 1_000)
    }

    /// `storage` with the password `ATTESTKIT_STORAGE_PASSWORD` holds, when it is a PostgreSQL URL with a user and no
    /// password of its own: the seeding's own connection reads the password where the server it starts does (the
    /// child `serve` gets it in its environment), so that no password need be on the command line.
    static func withEnvironmentPassword(
        _ storage: String, environment: [String: String] = ProcessInfo.processInfo.environment
    ) -> String {
        guard let password = environment["ATTESTKIT_STORAGE_PASSWORD"], !password.isEmpty,
            var components = URLComponents(string: storage),
            ["postgres", "postgresql"].contains(components.scheme?.lowercased() ?? ""),
            components.user != nil, components.password == nil
        else { return storage }
        components.password = password
        return components.string ?? storage
    }

    /// Row `index` of `count`: every `count / keys.count`-th row a signable key (in order), the others fillers.
    static func row(at index: Int, of count: Int, _ keys: KeyPopulation, _ seed: UInt64) -> SeededKey {
        let stride = max(1, count / max(1, keys.count))
        if index % stride == 0, index / stride < keys.count {
            return SeededKey(keyID: keys.keyIDs[index / stride].bytes, publicKeyX963: keys.publicKeys[index / stride])
        }
        let material =
            withUnsafeBytes(of: seed.bigEndian) { Array($0) }
            + withUnsafeBytes(of: index.bigEndian) {
                Array($0)
            }
        return SeededKey(
            keyID: Array(SHA256.hash(data: Array("attestkit-load-population".utf8) + material)),
            publicKeyX963: keys.publicKeys[index % keys.count])
    }

    /// The spread run's request bodies, one list per connection: connection `c` cycles through the signable keys
    /// `c`, `c + connections`, `c + 2 × connections`, …, so every key's counter increases on one connection and
    /// the requests reach all of them, `requests` per connection. Each key's counters go on from the previous call's.
    mutating func plans(connections: Int, requests: Int, body: String) throws -> [[Data]] {
        var plans: [[Data]] = []
        for connection in 0..<connections {
            let owned = Array(stride(from: connection, to: keys.count, by: connections))
            guard !owned.isEmpty else { throw LoadFailure("fewer signable keys than connections") }
            var bodies: [Data] = []
            bodies.reserveCapacity(requests)
            for request in 0..<requests {
                let index = owned[request % owned.count]
                counters[index] += 1
                let milliseconds = Int64(Date().timeIntervalSince1970 * 1_000)
                let binding = try RequestBinding(
                    method: "POST", target: "/v1/orders", body: Array(body.utf8),
                    freshness: .timestamp(milliseconds: milliseconds))
                let assertion = try keys.assertion(
                    of: index, counter: counters[index], clientDataHash: binding.clientDataHash)
                bodies.append(
                    try LoadCommand.assertionRequest(
                        keyID: keys.keyIDs[index], assertion: assertion, body: body, milliseconds: milliseconds))
            }
            plans.append(bodies)
        }
        return plans
    }
}
