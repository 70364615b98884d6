public import AttestKit
public import Foundation
public import Logging
public import ServiceLifecycle

/// Durable, race-free App Attest state: one-time challenges, registered keys, their counters, receipts and
/// risk-metric history.
///
/// Three backends implement it with the same semantics and pass the same test suite:
/// ``MemoryAttestationStore`` (tests, one process), ``SQLiteAttestationStore`` (the embedded default) and
/// ``PostgresAttestationStore`` (several replicas sharing one database). ``StoreURL`` picks one from a URL.
///
/// Every operation that decides something (consume a challenge, register a key, advance a counter) is one
/// atomic statement or transaction in the database: of many concurrent identical requests, in one process
/// or across replicas, exactly one wins. Arguments are checked before they reach SQL, every statement is
/// parameterised, and failures are ``StoreError``s with stable codes.
///
/// A store is a `Service`: run it in a `ServiceGroup` (or use ``StoreURL/withStore(logger:_:)``), call
/// ``prepare()`` once it runs, and it closes its connections when the group shuts down. Times are
/// parameters (`now`), stored to the millisecond.
public protocol AttestationStore: Service, Sendable {
    /// Opens the database and brings its schema up to date; idempotent, and safe to call from several
    /// replicas at once. Other methods call it on first use where the backend allows.
    /// - Throws: ``StoreError/Code/storageUnavailable`` when the database cannot be reached or its schema is
    ///   newer than this release.
    func prepare() async throws(StoreError)

    /// Closes the store's connections. Further calls fail with ``StoreError/Code/storageUnavailable``.
    func close() async

    // MARK: Challenges

    /// Stores a new challenge, as built by ``StoredChallenge/random(purpose:keyID:ttl:byteCount:now:using:)``.
    /// Prefer ``issueChallenge(purpose:keyID:ttl:byteCount:now:using:)``, which does both.
    /// - Throws: ``StoreError/Code/invalidInput`` for a consumed challenge or a reused identifier.
    func insertChallenge(_ challenge: StoredChallenge) async throws(StoreError)

    /// Consumes a challenge exactly once, atomically, and returns it.
    ///
    /// One statement marks the challenge consumed if it exists, is not consumed and has not expired at `now`.
    /// The purpose and key binding are checked after: a mismatch is refused, and the challenge stays consumed.
    /// - Parameters:
    ///   - id: The identifier the client sent back.
    ///   - purpose: What the caller is about to verify.
    ///   - keyID: The key the request is for, or `nil` (an attestation, before the key is registered).
    ///   - now: The time of the request.
    /// - Throws: ``StoreError/Code/challengeNotFound``, ``StoreError/Code/challengeExpired``,
    ///   ``StoreError/Code/challengeConsumed``, ``StoreError/Code/challengePurposeMismatch``,
    ///   ``StoreError/Code/challengeKeyMismatch``.
    func consumeChallenge(
        _ id: ChallengeID, purpose: ChallengePurpose, keyID: KeyID?, now: Date
    ) async throws(StoreError) -> StoredChallenge

    /// Deletes every challenge that expired at or before `now`, consumed or not, and returns how many.
    func deleteExpiredChallenges(now: Date) async throws(StoreError) -> Int

    // MARK: Keys

    /// Registers a key with counter 0, only if its identifier is absent.
    /// - Throws: ``StoreError/Code/keyExists`` when the identifier is registered (even if revoked).
    func registerKey(_ registration: KeyRegistration, now: Date) async throws(StoreError) -> KeyRecord

    /// The key with this identifier, or `nil`.
    func key(_ keyID: KeyID) async throws(StoreError) -> KeyRecord?

    /// Advances a key's counter with one compare-and-set: accepted only when `counter` is greater than the
    /// stored counter and the key is active.
    /// - Returns: The key as stored once advanced (its current risk metric and receipt included), read by the same
    ///   statement that advanced it.
    /// - Throws: ``StoreError/Code/counterNotIncreasing`` (a replay, or a concurrent copy that lost),
    ///   ``StoreError/Code/keyNotFound``, ``StoreError/Code/keyRevoked``.
    @discardableResult
    func advanceCounter(of keyID: KeyID, to counter: UInt32, now: Date) async throws(StoreError) -> KeyRecord

    /// Stores a newer receipt for an active key and, when it carries a risk metric, appends the metric to
    /// the key's history, in one transaction.
    /// - Throws: ``StoreError/Code/receiptNotNewer`` when the stored receipt was created at the same time or
    ///   later, ``StoreError/Code/keyNotFound``, ``StoreError/Code/keyRevoked``.
    func storeReceipt(_ update: ReceiptUpdate, for keyID: KeyID, now: Date) async throws(StoreError) -> KeyRecord

    /// Moves a key's next receipt exchange to `refreshAt` (`nil`: never), for example after Apple answered
    /// 304 or 429.
    /// - Throws: ``StoreError/Code/keyNotFound``.
    func postponeReceiptRefresh(of keyID: KeyID, until refreshAt: Date?) async throws(StoreError)

    /// A key's risk metrics, newest first, at most `limit`.
    func riskHistory(of keyID: KeyID, limit: Int) async throws(StoreError) -> [RiskMetricEntry]

    /// Revokes a key; revoking a revoked key returns it unchanged.
    /// - Throws: ``StoreError/Code/keyNotFound``.
    func revokeKey(_ keyID: KeyID, now: Date) async throws(StoreError) -> KeyRecord

    /// Active keys with a receipt whose refresh time is at or before `now`, earliest first, at most `limit`.
    func keysDueForReceiptRefresh(now: Date, limit: Int) async throws(StoreError) -> [KeyRecord]

    /// How many keys the store holds, by environment and state.
    func keyCounts() async throws(StoreError) -> KeyCounts

    // MARK: Shared budgets

    /// Takes one request from `budget` at `now`, with one atomic statement, so that every replica sharing the
    /// database spends the same budget (the per-app attestation limit of the service).
    /// - Returns: `nil` when the request fits, otherwise the whole seconds until one would.
    func take(from budget: RateBudget, now: Date) async throws(StoreError) -> Int?

    // MARK: Limited-use tokens

    /// Records that the token `tokenID` (a session token's `jti`) is used, with one atomic statement: of many
    /// concurrent calls with one identifier, in one process or across replicas, exactly one returns `true`.
    /// - Parameters:
    ///   - tokenID: The token's unique identifier, 1 to 128 ASCII characters.
    ///   - expiresAt: When the token expires; the record may be deleted after (``deleteExpiredTokens(now:)``).
    ///   - now: The time of use.
    /// - Returns: `true` when this call consumed the token, `false` when it was consumed before.
    /// - Throws: ``StoreError/Code/invalidInput`` for an identifier outside the bounds.
    func consumeToken(_ tokenID: String, expiresAt: Date, now: Date) async throws(StoreError) -> Bool

    /// Deletes the records of consumed tokens that expired at or before `now` (they can no longer be presented)
    /// and returns how many.
    func deleteExpiredTokens(now: Date) async throws(StoreError) -> Int
}

extension AttestationStore {
    /// Issues a challenge of `byteCount` random bytes from `generator`, valid for `ttl` from `now`.
    ///
    /// - Parameters:
    ///   - purpose: ``ChallengePurpose/attest`` or ``ChallengePurpose/assert``.
    ///   - keyID: The key the challenge is for (assertions), or `nil` for any.
    ///   - ttl: How long the challenge lives: between 1 ms and one day.
    ///   - byteCount: The number of random bytes, 32 to 1024.
    ///   - now: The time of issue.
    ///   - generator: The source of randomness.
    /// - Throws: ``StoreError/Code/invalidInput`` for a bound outside ``StoreLimits``.
    public func issueChallenge(
        purpose: ChallengePurpose,
        keyID: KeyID? = nil,
        ttl: Duration = .seconds(300),
        byteCount: Int = StoreLimits.minimumChallengeBytes,
        now: Date,
        using generator: inout some RandomNumberGenerator
    ) async throws(StoreError) -> StoredChallenge {
        let challenge = try StoredChallenge.random(
            purpose: purpose, keyID: keyID, ttl: ttl, byteCount: byteCount, now: now, using: &generator)
        try await insertChallenge(challenge)
        return challenge
    }

    /// Issues a challenge with the system's secure random number generator.
    /// - Throws: ``StoreError/Code/invalidInput`` for a bound outside ``StoreLimits``.
    public func issueChallenge(
        purpose: ChallengePurpose,
        keyID: KeyID? = nil,
        ttl: Duration = .seconds(300),
        byteCount: Int = StoreLimits.minimumChallengeBytes,
        now: Date
    ) async throws(StoreError) -> StoredChallenge {
        var generator = SystemRandomNumberGenerator()
        return try await issueChallenge(
            purpose: purpose, keyID: keyID, ttl: ttl, byteCount: byteCount, now: now, using: &generator)
    }
}

/// Loggers for stores. Stores are silent by default and never log keys, receipts or challenges.
public enum StoreLogging {
    /// A logger that drops everything: the default of every store.
    public static let silent = Logger(label: "attestkit.store", factory: { _ in SwiftLogNoOpLogHandler() })
}
