public import AttestKit
public import AttestKitStore
public import AttestKitWire
public import Foundation
import HTTPTypes

/// Verifies an assertion against a registered key and accepts it at most once: the one place where the
/// HTTP endpoint and ``AttestKitMiddleware`` decide.
///
/// In order, cheapest first: the freshness window of a timestamp, the key's state, the signature and counter
/// (AttestKit's ``AssertionVerifier``), the one-time challenge, then the store's atomic compare-and-set of the
/// counter. Of many concurrent copies of one assertion, in one process or across replicas sharing a database,
/// exactly one passes; the others fail with `counter_not_increasing` or `challenge_consumed`.
public struct AssertionGate: Sendable {
    /// How the request proves it is fresh, as far as the gate can check.
    public enum Freshness: Sendable, Hashable {
        /// A one-time challenge issued for this key (or for any key), consumed here.
        case challenge(ChallengeID)
        /// The client's clock in Unix milliseconds, accepted within ``timestampWindow``.
        case timestamp(milliseconds: Int64)
        /// None that the gate can check: the caller vouches (opaque client data). The counter still refuses
        /// replays of the same assertion.
        case vouchedByCaller

        /// `challenge`, `timestamp` or `vouched`: what API answers say was enforced.
        public var name: String {
            switch self {
            case .challenge: "challenge"
            case .timestamp: "timestamp"
            case .vouchedByCaller: "vouched"
            }
        }
    }

    /// The state.
    public let store: any AttestationStore
    /// How far a timestamp may be from `now()`, either way, in seconds.
    public let timestampWindow: TimeInterval
    private let now: @Sendable () -> Date
    private let verifier = AssertionVerifier()

    /// Creates a gate.
    public init(
        store: any AttestationStore, timestampWindow: TimeInterval = 300,
        now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.store = store
        self.timestampWindow = timestampWindow
        self.now = now
    }

    /// The freshness a canonical binding claims.
    /// - Throws: 400 `invalid_freshness` for a challenge id that is not one of ours.
    public static func freshness(of binding: RequestBinding) throws -> Freshness {
        switch binding.freshness {
        case .challenge(let id):
            do {
                return .challenge(try ChallengeID(string: id))
            } catch {
                throw APIError(.badRequest, "invalid_freshness", "the challenge id is not a challenge of this service")
            }
        case .timestamp(let milliseconds): return .timestamp(milliseconds: milliseconds)
        }
    }

    /// Verifies `assertion` by `keyID` over `clientData` and, if it holds, advances the key's counter.
    ///
    /// - Returns: The key, with the counter this assertion was accepted with (the store is not read again).
    /// - Throws: ``APIError`` (`timestamp_outside_window`), `StoreError` (`key_not_found`, `key_revoked`,
    ///   `challenge_*`, `counter_not_increasing`), `AttestKitError` (`signature_invalid`, `app_id_mismatch`,
    ///   `counter_not_increasing`, format codes).
    public func verify(
        keyID: KeyID, assertion: [UInt8], clientData: ClientDataInput, freshness: Freshness
    ) async throws -> AcceptedAssertion {
        let time = now()
        if case .timestamp(let milliseconds) = freshness {
            let offset = Double(milliseconds) / 1_000 - time.timeIntervalSince1970
            guard abs(offset) <= timestampWindow else {
                throw APIError(
                    .forbidden, "timestamp_outside_window",
                    "the timestamp is \(Int(abs(offset).rounded())) s from the server's clock; at most "
                        + "\(Int(timestampWindow)) s is accepted")
            }
        }
        guard let record = try await store.key(keyID) else { throw StoreError.keyNotFound }
        guard record.state == .active else { throw StoreError.keyRevoked }
        let verified = try verifier.verify(
            assertion, publicKeyX963: record.publicKeyX963, appID: record.appID, clientData: clientData,
            previousCounter: record.counter)
        if case .challenge(let id) = freshness {
            _ = try await store.consumeChallenge(id, purpose: .assert, keyID: keyID, now: time)
        }
        try await store.advanceCounter(of: keyID, to: verified.counter, now: time)
        return AcceptedAssertion(key: record.advanced(to: verified.counter, at: time), counter: verified.counter)
    }
}

/// An assertion the gate accepted.
public struct AcceptedAssertion: Sendable {
    /// The key that signed, with ``counter`` and the time of this assertion.
    public let key: KeyRecord
    /// The counter this assertion carried, now the key's stored counter (unless a later one overtook it).
    public let counter: UInt32
}
