public import Foundation
import Synchronization

/// Token buckets keyed by a string (a client address, an App ID): each key may spend `perMinute` requests a
/// minute, refilled continuously, with a burst of the same size.
///
/// Thread-safe, bounded in memory: at most ``maximumKeys`` buckets are kept; when the table is full, full buckets
/// are dropped first and then the oldest, down to 90 % of the cap (which errs towards letting a request through
/// rather than growing without bound).
public final class RateLimiter: Sendable {
    /// The most buckets kept at once.
    public let maximumKeys: Int
    /// Requests a key may make a minute; 0 disables the limit.
    public let perMinute: Int
    private let buckets: Mutex<[String: Bucket]>
    /// How many buckets exist, kept beside the table so that ``isExhausted(_:now:)`` answers without the lock
    /// while no key has spent anything (the usual state of a failure budget).
    private let tracked = Atomic<Int>(0)

    private struct Bucket {
        var tokens: Double
        var updated: Date
    }

    /// Creates a limiter.
    public init(perMinute: Int, maximumKeys: Int = 100_000) {
        self.perMinute = max(0, perMinute)
        self.maximumKeys = max(1, maximumKeys)
        self.buckets = Mutex([:])
    }

    /// Takes one request from `key`'s budget at `now`.
    /// - Returns: `nil` when allowed, otherwise the whole seconds to wait.
    public func acquire(_ key: String, now: Date) -> Int? {
        guard perMinute > 0 else { return nil }
        let capacity = Double(perMinute)
        let rate = capacity / 60
        return buckets.withLock { buckets -> Int? in
            var bucket = buckets[key] ?? Bucket(tokens: capacity, updated: now)
            let elapsed = max(0, now.timeIntervalSince(bucket.updated))
            bucket.tokens = min(capacity, bucket.tokens + elapsed * rate)
            bucket.updated = max(bucket.updated, now)
            guard bucket.tokens >= 1 else {
                buckets[key] = bucket
                tracked.store(buckets.count, ordering: .relaxed)
                return max(1, Int(((1 - bucket.tokens) / rate).rounded(.up)))
            }
            bucket.tokens -= 1
            if buckets[key] == nil && buckets.count >= maximumKeys {
                // Prune to 90 %, not to one below the cap, so that a flood of new addresses pays for a prune once
                // per tenth of the table rather than on every request.
                Self.prune(&buckets, capacity: capacity, rate: rate, now: now, keep: max(0, maximumKeys * 9 / 10 - 1))
            }
            buckets[key] = bucket
            tracked.store(buckets.count, ordering: .relaxed)
            return nil
        }
    }

    /// The whole seconds until `key` has a request again when it has none left at `now`, or `nil`; takes nothing.
    /// Answers without the lock while no key is tracked.
    /// `key` and `now` are evaluated only then: a caller whose key costs something to work out pays it only once
    /// some client has spent part of its budget.
    public func exhaustion(_ key: @autoclosure () -> String, now: @autoclosure () -> Date) -> Int? {
        guard perMinute > 0, tracked.load(ordering: .relaxed) > 0 else { return nil }
        let capacity = Double(perMinute)
        let rate = capacity / 60
        let (key, now) = (key(), now())
        return buckets.withLock { buckets -> Int? in
            guard let bucket = buckets[key] else { return nil }
            let tokens = min(capacity, bucket.tokens + max(0, now.timeIntervalSince(bucket.updated)) * rate)
            guard tokens < 1 else { return nil }
            return max(1, Int(((1 - tokens) / rate).rounded(.up)))
        }
    }

    /// Gives back one request taken from `key`'s budget by ``acquire(_:now:)`` (a reservation that turned out not
    /// to count: a credential that was right), never beyond the burst.
    public func refund(_ key: String, now: Date) {
        guard perMinute > 0 else { return }
        let capacity = Double(perMinute)
        let rate = capacity / 60
        buckets.withLock { buckets in
            guard var bucket = buckets[key] else { return }
            let elapsed = max(0, now.timeIntervalSince(bucket.updated))
            bucket.tokens = min(capacity, bucket.tokens + elapsed * rate + 1)
            bucket.updated = max(bucket.updated, now)
            buckets[key] = bucket
        }
    }

    /// How many keys are tracked (for tests and metrics).
    public var trackedKeys: Int { buckets.withLock { $0.count } }

    private static func prune(
        _ buckets: inout [String: Bucket], capacity: Double, rate: Double, now: Date, keep: Int
    ) {
        buckets = buckets.filter { $0.value.tokens + max(0, now.timeIntervalSince($0.value.updated)) * rate < capacity }
        if buckets.count > keep {
            let oldest = buckets.sorted { $0.value.updated < $1.value.updated }.prefix(buckets.count - keep)
            for (key, _) in oldest { buckets[key] = nil }
        }
    }
}
