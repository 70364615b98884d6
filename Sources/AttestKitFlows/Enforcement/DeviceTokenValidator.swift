import AttestKit
public import AttestKitApple
public import AttestKitStore
import AttestKitWire
import Crypto
public import Foundation
import Synchronization

/// Validates the DeviceCheck tokens of devices without App Attest (`X-AttestKit-Device-Token`) with Apple, and
/// uses each valid token up: a token proves one request (or buys one session token), once across every replica
/// sharing the store.
///
/// Apple's quota is the team's, so the validator spends it sparingly:
/// - **A per-client budget**: at most ``validationsPerClient`` validations a minute start per client (its address,
///   as the edge names it); past it, `rate_limited` (429) without asking Apple.
/// - **Single flight**: concurrent validations of one token share one call to Apple.
/// - **A bounded cache** of Apple's answers (``capacity`` entries, the oldest dropped first, each reused for
///   ``ttl`` seconds), keyed by the SHA-256 of the token, so that it holds no token. A replayed token is answered
///   from it and then refused as used, without a second call.
/// - **Used tokens remembered** (as many as ``capacity``, by the same digest): a token this process saw used is
///   refused again without asking the store, so that replaying one costs neither Apple nor a store write.
///
/// Apple's other failures (unavailable, rate limited, a transport error) are not cached and fail closed: the
/// request is refused with the Apple error's code. Whether Apple is asked at all is the ``RouteGuard``'s decision:
/// only when the answer can change the outcome.
public final class DeviceTokenValidator: Sendable {
    /// Asks Apple whether a token is valid: returns for a valid token, throws `bad_device_token` for an invalid one.
    public typealias Validate = @Sendable (String) async throws(AppleServiceError) -> Void

    /// The most answers cached.
    public let capacity: Int
    /// How long an answer is reused.
    public let ttl: TimeInterval
    /// Validations a client may start a minute (0: no limit).
    public var validationsPerClient: Int { budget.perMinute }
    /// How long a used token is remembered by the store: Apple does not say how long a token stays valid, so a used
    /// token is refused for at least this long (a day by default).
    public let usedTokenRetention: TimeInterval
    private let budget: RateLimiter
    private let validate: Validate
    private let now: @Sendable () -> Date
    /// Apple's answers by token digest, with when they were given; the oldest dropped first.
    private let answers: BoundedCache<[UInt8], Answer>
    /// Tokens seen used, by digest, each until the store may forget it (or, used elsewhere, for ``ttl``).
    private let used: BoundedCache<[UInt8], Date>
    private let inFlight = Mutex<[[UInt8]: Task<Result<Bool, FlowError>, Never>]>([:])

    private struct Answer: Sendable {
        let valid: Bool
        let at: Date
    }

    /// What a validation found under the in-flight lock: an answer just cached, or the call to wait for.
    private enum Started {
        case cached(Bool)
        case running(Task<Result<Bool, FlowError>, Never>)
    }

    /// The name of the per-client budget, in `rate_limited` answers and the `attestkit_rate_limited_total` metric.
    public static let budgetName = "devicecheck_validations_per_client"
    /// The default of ``validationsPerClient``: 30 a minute.
    public static let defaultValidationsPerClient = 30
    /// The default of ``usedTokenRetention``: a day.
    public static let defaultUsedTokenRetention: TimeInterval = 86_400

    /// `seconds` as a time this validator can keep: 0 for a time that is not a number or negative, at most a year.
    static func bounded(_ seconds: TimeInterval) -> TimeInterval {
        seconds.isNaN ? 0 : min(max(seconds, 0), 366 * 86_400)
    }

    /// A validator calling `validate`, caching up to `capacity` answers for `ttl` seconds, starting at most
    /// `validationsPerClient` validations a minute per client (0: no limit).
    public init(
        capacity: Int = 10_000, ttl: TimeInterval = 600,
        validationsPerClient: Int = defaultValidationsPerClient,
        usedTokenRetention: TimeInterval = defaultUsedTokenRetention,
        now: @escaping @Sendable () -> Date = { Date() },
        validate: @escaping Validate
    ) {
        self.capacity = max(1, capacity)
        self.answers = BoundedCache(capacity: capacity)
        self.used = BoundedCache(capacity: capacity)
        // A time that is not a number, negative or past a year would make every use of a token fail to record
        // (after Apple validated it): such a cache time counts as none (or a year), such a retention as the default
        // (never shorter: it is what keeps a used token refused).
        let ttl = Self.bounded(ttl)
        self.ttl = ttl
        self.budget = RateLimiter(perMinute: validationsPerClient)
        self.usedTokenRetention = max(
            ttl, usedTokenRetention.isNaN ? Self.defaultUsedTokenRetention : Self.bounded(usedTokenRetention))
        self.now = now
        self.validate = validate
    }

    /// A validator over Apple's DeviceCheck client.
    public convenience init(
        client: DeviceCheckClient, capacity: Int = 10_000, ttl: TimeInterval = 600,
        validationsPerClient: Int = defaultValidationsPerClient,
        now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.init(capacity: capacity, ttl: ttl, validationsPerClient: validationsPerClient, now: now) {
            (token: String) async throws(AppleServiceError) in
            try await client.validate(deviceToken: token)
        }
    }

    /// Whether Apple calls `token` valid (cached, one call for concurrent askers), and whether the answer came from
    /// the cache. Does not use the token up (``useUp(_:store:)`` does).
    /// - Parameters:
    ///   - token: The DeviceCheck token, as the device sent it (Base64).
    ///   - client: Who asks (a client address), for the per-client budget; `nil` shares one budget with
    ///     every unnamed client.
    /// - Throws: ``FlowError``: `rate_limited` once `client` spent its budget; Apple's failure other than
    ///   `bad_device_token`, not cached.
    public func isValid(_ token: String, client: String? = nil) async throws(FlowError) -> (valid: Bool, cached: Bool) {
        let token = Self.canonical(token)
        let key = Self.digest(token)
        let time = now()
        if let hit = answers[key], time.timeIntervalSince(hit.at) < ttl {
            return (hit.valid, true)
        }
        let started = try inFlight.withLock { calls throws(FlowError) -> Started in
            if let running = calls[key] { return .running(running) }
            // Answered between the look at the cache and this lock: no second call to Apple.
            if let hit = answers[key], time.timeIntervalSince(hit.at) < ttl { return .cached(hit.valid) }
            if let wait = budget.acquire(client ?? "unknown", now: time) {
                throw FlowError.rateLimited(Self.budgetName, retryAfter: wait)
            }
            let (validate, answers) = (self.validate, self.answers)
            let running = Task { () -> Result<Bool, FlowError> in
                let valid: Bool
                do throws(AppleServiceError) {
                    try await validate(token)
                    valid = true
                } catch  where error.code == .badDeviceToken {
                    valid = false
                } catch {
                    return .failure(FlowError(error))
                }
                // Cached before the call leaves the in-flight map, so that a caller in between finds one or the other.
                answers.insert(Answer(valid: valid, at: time), for: key)
                return .success(valid)
            }
            calls[key] = running
            return .running(running)
        }
        let task: Task<Result<Bool, FlowError>, Never>
        switch started {
        case .cached(let valid): return (valid, true)
        case .running(let running): task = running
        }
        let outcome = await task.value
        inFlight.withLock { calls in
            if calls[key] == task { calls[key] = nil }
        }
        return (try outcome.get(), false)
    }

    /// Validates `token` (``isValid(_:client:)``) and uses it up in `store` (``useUp(_:store:)``); a token this
    /// validator remembers as used is refused first, without asking Apple. What ``RouteGuard`` does with a token.
    /// - Parameters:
    ///   - token: The DeviceCheck token the request presented (Base64).
    ///   - client: Who sent it (an address), for the per-client budget of validations.
    ///   - store: Where used tokens are recorded.
    ///   - validated: Told the validation's answer (valid or not, from the cache or from Apple), for metrics.
    /// - Throws: ``FlowError``: 403 `device_token_invalid` when Apple does not validate it, 409 `device_token_used`
    ///   when it was used before, `rate_limited`, Apple's failures, `storage_unavailable`.
    public func redeem(
        _ token: String, client: String?, store: any ConsumedTokenStore,
        validated: (_ valid: Bool, _ cached: Bool) -> Void = { _, _ in }
    ) async throws(FlowError) {
        try refuseIfRemembered(token)
        let answer = try await isValid(token, client: client)
        validated(answer.valid, answer.cached)
        guard answer.valid else { throw FlowError.deviceTokenInvalid }
        // Apple's answer may take up to its own timeout, longer than the store's: the write after it has the store's
        // whole deadline, not what Apple left of the request's.
        let recorded = await StoreRequestDeadline.restarting { () async -> Result<Void, FlowError> in
            do throws(FlowError) {
                return .success(try await useUp(token, store: store))
            } catch {
                return .failure(error)
            }
        }
        try recorded.get()
    }

    /// Records in `store` that a token Apple validated was used: of every request presenting one token, in this
    /// process or on any replica sharing the store, exactly one gets through; the record is kept for
    /// ``usedTokenRetention``. It needs only the store's used tokens: any `ConsumedTokenStore` (an `AttestationStore`
    /// is one).
    /// - Throws: ``FlowError``: 409 `device_token_used` when it was used before, `storage_unavailable`.
    ///
    /// A token this process saw used (here or, as the store said, elsewhere) is refused again from memory, without a
    /// store write, for as long as the store keeps its record (``usedTokenRetention``; ``ttl`` for one used
    /// elsewhere, whose record's age is unknown): a replay's refusal, never an acceptance, is all the memory decides.
    /// The memory is the validator's, whatever store it is given: a validator serves one store of used tokens.
    public func useUp(_ token: String, store: any ConsumedTokenStore) async throws(FlowError) {
        let time = now()
        let key = Self.digest(Self.canonical(token))
        try refuseIfRemembered(key: key, at: time)
        let first: Bool
        do throws(StoreError) {
            first = try await store.consumeToken(
                Self.usedTokenID(token), expiresAt: time.addingTimeInterval(usedTokenRetention), now: time)
        } catch {
            throw FlowError(error)
        }
        used.insert(time.addingTimeInterval(first ? usedTokenRetention : ttl), for: key)
        guard first else { throw FlowError.deviceTokenUsed }
    }

    /// Refuses a token this validator remembers as used (``useUp(_:store:)``), before Apple is asked: a replay costs
    /// neither an Apple call nor the client's budget, and is answered `device_token_used` even while Apple fails.
    /// - Throws: ``FlowError``: 409 `device_token_used`.
    private func refuseIfRemembered(_ token: String) throws(FlowError) {
        try refuseIfRemembered(key: Self.digest(Self.canonical(token)), at: now())
    }

    private func refuseIfRemembered(key: [UInt8], at time: Date) throws(FlowError) {
        if let until = used[key], time < until { throw FlowError.deviceTokenUsed }
    }

    /// The number of answers cached now.
    public var cachedCount: Int { answers.count }

    /// The store's record of a used token: `devicecheck:` and the base64url of its SHA-256, never the token (and
    /// never a session token's `jti`, which has no `:`).
    static func usedTokenID(_ token: String) -> String {
        "devicecheck:" + Base64URL.encode(digest(canonical(token)))
    }

    /// One spelling of a token: standard Base64 with its padding, re-encoded from the bytes it decodes to.
    ///
    /// Tokens are accepted in either alphabet, padded or not, and the unused low bits of the last character are not
    /// checked, so one token has many spellings; keyed by its text, each would be a first use and miss the cache. The
    /// spelling a device sends (standard, padded) is its own canonical form, so records of used tokens written
    /// before keep their meaning. Text that does not decode is kept as it is (Apple refuses it).
    static func canonical(_ token: String) -> String {
        guard let bytes = Base64.decode(token) else { return token }
        return Data(bytes).base64EncodedString()
    }

    private static func digest(_ token: String) -> [UInt8] {
        Array(SHA256.hash(data: Array(token.utf8)))
    }
}

extension FlowError.Code {
    /// A DeviceCheck token that already proved a request or bought a session token (`device_token_used`).
    public static let deviceTokenUsed = FlowError.Code("device_token_used")
}

extension FlowError {
    /// 403 `device_token_invalid`: Apple does not validate the DeviceCheck token.
    public static var deviceTokenInvalid: FlowError {
        FlowError(.deviceTokenInvalid, .refused, "Apple does not validate the DeviceCheck token")
    }

    /// 409 `device_token_used`: the DeviceCheck token was used before; a device sends a new one for each request.
    public static var deviceTokenUsed: FlowError {
        FlowError(
            .deviceTokenUsed, .conflict,
            "this DeviceCheck token was used before; generate a new one for each request")
    }
}
