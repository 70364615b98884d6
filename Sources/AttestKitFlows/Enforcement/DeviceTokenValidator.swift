public import AttestKitApple
import Crypto
public import Foundation
import Synchronization

/// Validates the DeviceCheck tokens of devices without App Attest (`X-AttestKit-Device-Token`) with Apple, caching
/// the answers: a token Apple validated, or one it called bad, is not sent again while the answer is fresh.
///
/// The cache is bounded (``capacity`` entries, the oldest dropped first) and keyed by the SHA-256 of the token, so it
/// holds no token. Apple's other failures (unavailable, rate limited, a transport error) are not cached and fail
/// closed: the request is refused with the Apple error's code.
public final class DeviceTokenValidator: Sendable {
    /// Asks Apple whether a token is valid: returns for a valid token, throws `bad_device_token` for an invalid one.
    public typealias Validate = @Sendable (String) async throws(AppleServiceError) -> Void

    /// The most answers cached.
    public let capacity: Int
    /// How long an answer is reused.
    public let ttl: TimeInterval
    private let validate: Validate
    private let now: @Sendable () -> Date
    private let cache = Mutex(Cache())

    private struct Cache {
        var answers: [[UInt8]: (valid: Bool, at: Date)] = [:]
        var order: [[UInt8]] = []
    }

    /// A validator calling `validate`, caching up to `capacity` answers for `ttl` seconds.
    public init(
        capacity: Int = 10_000, ttl: TimeInterval = 600, now: @escaping @Sendable () -> Date = { Date() },
        validate: @escaping Validate
    ) {
        self.capacity = max(1, capacity)
        self.ttl = ttl
        self.now = now
        self.validate = validate
    }

    /// A validator over Apple's DeviceCheck client.
    public convenience init(client: DeviceCheckClient, capacity: Int = 10_000, ttl: TimeInterval = 600) {
        self.init(capacity: capacity, ttl: ttl) { (token: String) async throws(AppleServiceError) in
            try await client.validate(deviceToken: token)
        }
    }

    /// Whether Apple calls `token` valid (cached), and whether the answer came from the cache.
    /// - Throws: ``FlowError`` of Apple's failure other than `bad_device_token`, not cached.
    public func isValid(_ token: String) async throws(FlowError) -> (valid: Bool, cached: Bool) {
        let key = Array(SHA256.hash(data: Array(token.utf8)))
        let time = now()
        if let hit = cache.withLock({ cache in cache.answers[key] }), time.timeIntervalSince(hit.at) < ttl {
            return (hit.valid, true)
        }
        let valid: Bool
        do {
            try await validate(token)
            valid = true
        } catch  where error.code == .badDeviceToken {
            valid = false
        } catch {
            throw FlowError(error)
        }
        cache.withLock { cache in
            if cache.answers.updateValue((valid, time), forKey: key) == nil { cache.order.append(key) }
            while cache.order.count > capacity {
                cache.answers.removeValue(forKey: cache.order.removeFirst())
            }
        }
        return (valid, false)
    }

    /// The number of answers cached now.
    public var cachedCount: Int { cache.withLock { $0.answers.count } }
}
