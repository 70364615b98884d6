public import AttestKit
public import AttestKitStore
public import AttestKitWire
public import Foundation

/// Verifies an assertion against a registered key and accepts it at most once: the one place where the HTTP
/// endpoint, the Hummingbird middleware and any other edge decide.
///
/// In order, cheapest first: the freshness window of a timestamp, the key's state, the signature and counter
/// (AttestKit's `AssertionVerifier`), the one-time challenge, then the store's atomic compare-and-set of the
/// counter. Of many concurrent copies of one assertion, in one process or across replicas sharing a database,
/// exactly one passes; the others fail with `counter_not_increasing` or `challenge_consumed`.
///
/// What a key's assertions are verified with (its public key and App ID) never changes once it is registered, so
/// the gate keeps the keys it has read in a bounded cache (`KeyRecordCache`) and reads the store only for a key
/// it has not seen. Whether the key is still active is decided by the store, in the same statement that advances
/// the counter (`… AND revoked_at_ms IS NULL`): a revocation, made by this process or by another replica, refuses
/// the very next assertion with `key_revoked`. So is its expiry: with ``keyExpiry``, a key unused for longer is
/// refused with `key_expired` by the same statement, and never advances. The accepted key is the row that statement
/// returned. A key whose App ID or environment the configuration no longer accepts (``acceptance``) is refused with
/// `app_not_accepted` or `environment_not_accepted` before its challenge is consumed or its counter advanced.
///
/// ```swift
/// let gate = AssertionGate(store: store)
/// let binding = try AssertionBinding(method: "POST", target: "/orders", body: body, freshness: .timestamp(milliseconds: ms))
/// let accepted = try await gate.verify(keyID: keyID, assertion: assertion, binding: binding)
/// ```
public struct AssertionGate: Sendable {
    /// The state.
    public let store: any AttestationStore
    /// How far a timestamp may be from `now()`, either way, in seconds (a negative, NaN or infinite window given
    /// counts as 0).
    public let timestampWindow: TimeInterval
    /// How long a key may go unused (no assertion since its last one, or since its registration) before its
    /// assertions are refused with `key_expired`, in seconds; `nil`: keys never expire (`keys.expire-after`).
    public let keyExpiry: TimeInterval?
    /// Writes a bundle for every failed verification (opt-in), or `nil`.
    public let recorder: VerificationRecorder?
    /// The apps and environments whose keys may still assert, or `nil`: any registered key (a gate built by hand).
    /// ``AttestKitApplication`` gives its configuration's.
    public let acceptance: KeyAcceptance?
    /// The deployment's assertion rules (``DeploymentPolicy/assertionPolicy``: iOS 27 category, minimum bundle
    /// version, category change), checked once the signature and counter verified and before the challenge is
    /// consumed or the counter advanced; `nil`: none.
    public let policy: (any AssertionPolicy)?
    /// Whether an assertion whose validation category differs from its key's registration, once it met ``policy``,
    /// is accepted with ``AcceptedAssertion/validationCategoryChanged`` set: step-up asked for
    /// (``DeploymentPolicy/ValidationCategoryChange/stepUp``). Off, nothing is marked.
    public let stepsUpOnValidationCategoryChange: Bool
    /// The clock.
    let now: @Sendable () -> Date
    private let verifier = AssertionVerifier()
    /// The store, with the keys already read kept.
    let keys: KeyRecordCache
    /// The mark this gate's guards set on what they proved (``ProofMark``).
    package let proofMark = ProofMark()

    /// Forgets what the gate keeps of `keyID` (its record, for assertions verified without a read of the store), so
    /// that nothing of a key deleted or revoked through this process is read from memory again: call it after
    /// `KeyAdministration.delete(_:)` or `revoke(_:)` (``AttestKitApplication`` does). Other processes forget the
    /// key at its next assertion, which the store refuses.
    public func forget(_ keyID: KeyID) {
        keys.forget(keyID)
    }

    /// Creates a gate.
    public init(
        store: any AttestationStore, timestampWindow: TimeInterval = 300, keyExpiry: TimeInterval? = nil,
        recorder: VerificationRecorder? = nil, acceptance: KeyAcceptance? = nil,
        policy: (any AssertionPolicy)? = nil, stepsUpOnValidationCategoryChange: Bool = false,
        now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.stepsUpOnValidationCategoryChange = stepsUpOnValidationCategoryChange
        self.keys = KeyRecordCache(store: store)
        self.store = store
        // A negative, NaN or infinite window would refuse every timestamp by crashing the process (NaN) or accept
        // any (infinity): it counts as 0, the strictest, as the verifier's leeways do.
        self.timestampWindow = timestampWindow.asLeeway
        self.keyExpiry = keyExpiry
        self.recorder = recorder
        self.acceptance = acceptance
        self.policy = policy
        self.now = now
    }

    /// The challenge `freshness` names, `nil` for another freshness.
    /// - Throws: `invalid_freshness` (malformed) for a challenge id that is not one of this service's.
    public static func challengeID(of freshness: Freshness) throws(FlowError) -> ChallengeID? {
        guard case .challenge(let id) = freshness else { return nil }
        do {
            return try ChallengeID(string: id)
        } catch {
            throw FlowError(.invalidFreshness, .malformed, "the challenge id is not a challenge of this service")
        }
    }

    /// Verifies `assertion` by `keyID` over the client data of `binding`, with its freshness.
    public func verify(
        keyID: KeyID, assertion: [UInt8], binding: AssertionBinding
    ) async throws(FlowError) -> AcceptedAssertion {
        try await verify(
            keyID: keyID, assertion: assertion, clientData: binding.clientData, freshness: binding.freshness)
    }

    /// Verifies `assertion` by `keyID` over `clientData` and, if it holds, advances the key's counter.
    ///
    /// A `Freshness.challenge(_:)` is consumed (issued for this key or for any key), a
    /// `Freshness.timestamp(milliseconds:)` must be within ``timestampWindow``, and with
    /// `Freshness.vouchedByCaller` only the counter refuses replays of the same assertion.
    ///
    /// - Returns: The key, with the counter this assertion was accepted with (the store is not read again).
    /// - Throws: ``FlowError``: `timestamp_outside_window`; the store's `key_not_found`, `key_revoked`,
    ///   `key_expired` (with ``keyExpiry``), `challenge_*`, `counter_not_increasing`; `app_not_accepted`,
    ///   `environment_not_accepted` (with ``acceptance``); the policy codes of ``policy`` (`policy_validation_category`,
    ///   `policy_bundle_version`, `policy_validation_category_changed`); AttestKit's `signature_invalid`, `app_id_mismatch`,
    ///   `counter_not_increasing` and format codes.
    public func verify(
        keyID: KeyID, assertion: [UInt8], clientData: ClientDataInput, freshness: Freshness
    ) async throws(FlowError) -> AcceptedAssertion {
        try await verify(
            keyID: keyID, assertion: assertion, clientData: clientData, freshness: freshness, records: { _ in true })
    }

    /// ``verify(keyID:assertion:clientData:freshness:)``, writing a refusal to ``recorder`` only when `records`
    /// says so (a caller that tries another form of the request after a `signature_invalid` records only the last).
    package func verify(
        keyID: KeyID, assertion: [UInt8], clientData: ClientDataInput, freshness: Freshness,
        records: (FlowError) -> Bool
    ) async throws(FlowError) -> AcceptedAssertion {
        let time = now()
        guard let recorder else {
            return try await decide(
                keyID: keyID, assertion: assertion, clientData: clientData, freshness: freshness, at: time, store: keys)
        }
        return try await verify(
            keyID: keyID, assertion: assertion, clientData: clientData, freshness: freshness, at: time,
            recordingTo: recorder, records: records)
    }

    /// The gate's decision at `time`, reading and advancing keys through `store`.
    func decide(
        keyID: KeyID, assertion: [UInt8], clientData: ClientDataInput, freshness: Freshness, at time: Date,
        store: some DecisionStore
    ) async throws(FlowError) -> AcceptedAssertion {
        let challengeID = try Self.challengeID(of: freshness)
        if case .timestamp(let milliseconds) = freshness {
            let offset = Double(milliseconds) / 1_000 - time.timeIntervalSince1970
            guard abs(offset) <= timestampWindow else {
                throw FlowError(
                    .timestampOutsideWindow, .refused,
                    "the timestamp is \(Int(exactly: abs(offset).rounded()) ?? Int.max) s from the server's clock; "
                        + "at most "
                        + "\(Int(exactly: timestampWindow.rounded(.down)) ?? Int.max) s is accepted")
            }
        }
        let record: KeyRecord
        do throws(StoreError) {
            guard let found = try await store.key(keyID) else { throw StoreError.keyNotFound }
            guard found.state == .active else { throw StoreError.keyRevoked }
            record = found
        } catch {
            throw FlowError(error)
        }
        // A key the configuration no longer accepts is refused before anything is consumed or advanced.
        try acceptance?.check(record)
        var verified: VerifiedAssertion
        do throws(AttestKitError) {
            verified = try verifier.verify(
                assertion, publicKeyX963: record.publicKeyX963, appID: record.appID, clientData: clientData,
                previousCounter: record.counter)
        } catch {
            throw FlowError(error)
        }
        // The iOS 27 data the assertion signed, held to the deployment's rules before anything moves. A key attested
        // without the map (before iOS 27) cannot vouch for one at its assertions: the app could have passed it in the
        // client data hash (`VerifiedAssertion.ignoringExtensions()`), so none is reported.
        let registered = RegisteredKey(
            bundleVersion: record.bundleVersion, validationCategory: record.validationCategory)
        verified = verified.reported(for: registered)
        if let policy, case .failsToMeetPolicy(let reason) = policy.check(verified, of: registered) {
            throw FlowError(reason.error())
        }
        let categoryChanged =
            stepsUpOnValidationCategoryChange && ValidationCategoryChangePolicy.changed(verified, of: registered)
        do throws(StoreError) {
            if let challengeID {
                _ = try await store.consumeChallenge(challengeID, purpose: .assert, keyID: keyID, now: time)
            }
            // An idle key's expiry is decided by the advance itself: an expired key never advances.
            let usedSince = keyExpiry.map { time.addingTimeInterval(-$0) }
            let advanced = try await store.advanceCounter(
                of: keyID, to: verified.counter, now: time, usedSince: usedSince)
            return AcceptedAssertion(
                key: advanced, counter: verified.counter, bundleVersion: verified.bundleVersion,
                validationCategory: verified.validationCategory, validationCategoryChanged: categoryChanged)
        } catch {
            throw FlowError(error)
        }
    }
}

/// An assertion the gate accepted.
public struct AcceptedAssertion: Sendable {
    /// The key that signed, with ``counter`` and the time of this assertion.
    public let key: KeyRecord
    /// The counter this assertion carried, now the key's stored counter (unless a later one overtook it).
    public let counter: UInt32
    /// iOS 27+: the bundle version this assertion reported (signed with it); `nil` before iOS 27.
    public let bundleVersion: String?
    /// iOS 27+: the validation category this assertion reported (AttestKit's `ValidationCategory` names it); `nil`
    /// before iOS 27.
    public let validationCategory: UInt32?
    /// Whether step-up is asked for because this assertion reports another validation category than its key's
    /// attestation did (`policy.validation-category-change` `step-up`; never set otherwise): ask for more (a new
    /// login, a second factor) before a sensitive action.
    public let validationCategoryChanged: Bool

    /// An accepted assertion.
    public init(
        key: KeyRecord, counter: UInt32, bundleVersion: String? = nil, validationCategory: UInt32? = nil,
        validationCategoryChanged: Bool = false
    ) {
        self.validationCategoryChanged = validationCategoryChanged
        self.key = key
        self.counter = counter
        self.bundleVersion = bundleVersion
        self.validationCategory = validationCategory
    }
}
