public import Foundation

/// Where the identifiers of used-up tokens live (limited-use session tokens, DeviceCheck tokens), until they expire.
///
/// One of the small protocols ``AttestationStore`` composes. Using a DeviceCheck token up (`DeviceTokenValidator`'s
/// `useUp(_:store:)` in AttestKitFlows) needs only this one, so a test or an adopter can give it a store of its own.
public protocol ConsumedTokenStore: Sendable {
    /// Records that the token `tokenID` (a session token's `jti`) is used, with one atomic statement: of many
    /// concurrent calls with one identifier, in one process or across replicas, exactly one returns `true`.
    /// - Parameters:
    ///   - tokenID: The token's unique identifier, 1 to 128 ASCII characters.
    ///   - expiresAt: When the token expires; the record may be deleted after (``deleteExpiredTokens(now:)``).
    ///   - now: The time of use.
    /// - Returns: `true` when this call consumed the token, `false` when it was consumed before.
    /// - Throws: ``StoreError/Code/invalidInput`` for an identifier outside the bounds.
    func consumeToken(_ tokenID: String, expiresAt: Date, now: Date) async throws(StoreError) -> Bool

    /// Whether the token `tokenID` was consumed (``consumeToken(_:expiresAt:now:)``) and its record is still kept:
    /// until it expires, and then until ``deleteExpiredTokens(now:)`` deletes it. Token introspection answers
    /// inactive for a consumed token; an expired one is inactive whatever this says.
    /// - Throws: ``StoreError/Code/invalidInput`` for an identifier outside the bounds.
    func isTokenConsumed(_ tokenID: String) async throws(StoreError) -> Bool

    /// Deletes the records of consumed tokens that expired at or before `now` (they can no longer be presented)
    /// and returns how many.
    func deleteExpiredTokens(now: Date) async throws(StoreError) -> Int
}
