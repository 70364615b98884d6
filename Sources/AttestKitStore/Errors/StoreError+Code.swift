public import AttestKit

extension StoreError {
    /// A stable failure code. New codes may be added in later releases; existing ones never change.
    public struct Code: StableErrorCode {
        /// The stable snake_case string, e.g. `challenge_consumed`.
        public let rawValue: String

        private init(_ rawValue: String) {
            self.rawValue = rawValue
        }

        /// Every code, for documentation and exhaustive tests.
        public static var allCases: [Code] {
            [
                .challengeNotFound, .challengeExpired, .challengeConsumed, .challengePurposeMismatch,
                .challengeKeyMismatch, .keyExists, .keyNotFound, .keyRevoked, .keyExpired, .counterNotIncreasing,
                .receiptNotNewer, .invalidInput, .invalidURL, .storageUnavailable,
            ]
        }

        // MARK: challenges

        /// No challenge has this identifier (never issued, or already garbage-collected).
        public static let challengeNotFound = Code("challenge_not_found")
        /// The challenge's time to live has passed.
        public static let challengeExpired = Code("challenge_expired")
        /// The challenge was already used once.
        public static let challengeConsumed = Code("challenge_consumed")
        /// The challenge was issued for the other purpose (`attest` versus `assert`). It is consumed all the same.
        public static let challengePurposeMismatch = Code("challenge_purpose_mismatch")
        /// The challenge is bound to another key, or to a key while none was named. It is consumed all the same.
        public static let challengeKeyMismatch = Code("challenge_key_mismatch")

        // MARK: keys

        /// A key with this identifier is already registered.
        public static let keyExists = Code("key_exists")
        /// No key has this identifier.
        public static let keyNotFound = Code("key_not_found")
        /// The key was revoked.
        public static let keyRevoked = Code("key_revoked")
        /// The key was not used (registered or asserted) for longer than the deployment keeps idle keys
        /// (`keys.expire-after`); the app attests a new key.
        public static let keyExpired = Code("key_expired")
        /// The new counter is not greater than the stored one (a replay, or a concurrent copy that lost).
        public static let counterNotIncreasing = Code("counter_not_increasing")
        /// The receipt is not newer than the one already stored.
        public static let receiptNotNewer = Code("receipt_not_newer")

        // MARK: input and storage

        /// An argument is out of bounds or badly encoded; it never reached the database.
        public static let invalidInput = Code("invalid_input")
        /// A storage URL is not `memory:`, `sqlite:PATH` or `postgres://…`, or is malformed.
        public static let invalidURL = Code("invalid_url")
        /// The database failed, refused the connection, or has a schema newer than this release.
        public static let storageUnavailable = Code("storage_unavailable")
    }
}

extension StoreError {
    // Static values so that `#expect(throws: StoreError.challengeConsumed)` reads naturally.
    // Equality is by code, so the placeholder reason does not matter.

    /// An error value with the given code, for comparisons.
    public static let challengeNotFound = StoreError(.challengeNotFound, "challenge not found")
    /// An error value with the given code, for comparisons.
    public static let challengeExpired = StoreError(.challengeExpired, "challenge expired")
    /// An error value with the given code, for comparisons.
    public static let challengeConsumed = StoreError(.challengeConsumed, "challenge already consumed")
    /// An error value with the given code, for comparisons.
    public static let challengePurposeMismatch = StoreError(.challengePurposeMismatch, "challenge purpose mismatch")
    /// An error value with the given code, for comparisons.
    public static let challengeKeyMismatch = StoreError(.challengeKeyMismatch, "challenge key mismatch")
    /// An error value with the given code, for comparisons.
    public static let keyExists = StoreError(.keyExists, "key exists")
    /// An error value with the given code, for comparisons.
    public static let keyNotFound = StoreError(.keyNotFound, "key not found")
    /// An error value with the given code, for comparisons.
    public static let keyRevoked = StoreError(.keyRevoked, "key revoked")
    /// An error value with the given code, for comparisons.
    public static let keyExpired = StoreError(.keyExpired, "key expired")
    /// An error value with the given code, for comparisons.
    public static let counterNotIncreasing = StoreError(.counterNotIncreasing, "counter not increasing")
    /// An error value with the given code, for comparisons.
    public static let receiptNotNewer = StoreError(.receiptNotNewer, "receipt not newer")
    /// An error value with the given code, for comparisons.
    public static let invalidInput = StoreError(.invalidInput, "invalid input")
    /// An error value with the given code, for comparisons.
    public static let invalidURL = StoreError(.invalidURL, "invalid storage URL")
    /// An error value with the given code, for comparisons.
    public static let storageUnavailable = StoreError(.storageUnavailable, "storage unavailable")
}
