public import AttestKit
public import AttestKitStore
public import Foundation

/// Issues one-time challenges: for an attestation (bound to no key), or for an assertion (bound to one key, or to
/// any), each living ``ttl`` and consumed at most once by ``AttestationRegistrar`` or ``AssertionGate``.
///
/// ```swift
/// let issuer = ChallengeIssuer(store: store, ttl: .seconds(300))
/// let challenge = try await issuer.issue(purpose: .assert, keyID: keyID)
/// ```
public struct ChallengeIssuer: Sendable {
    /// The state.
    public let store: any AttestationStore
    /// How long a challenge lives.
    public let ttl: Duration
    private let now: @Sendable () -> Date

    /// Creates an issuer.
    public init(
        store: any AttestationStore, ttl: Duration = .seconds(300), now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.store = store
        self.ttl = ttl
        self.now = now
    }

    /// The purpose named `name` (`attest` or `assert`); `nil` is `attest`.
    /// - Throws: `invalid_field` (`purpose`).
    public static func purpose(named name: String?) throws(FlowError) -> ChallengePurpose {
        switch name ?? "attest" {
        case "attest": .attest
        case "assert": .assert
        default: throw FlowError.invalidField("purpose", "is attest or assert")
        }
    }

    /// Issues and stores a challenge for `purpose`, bound to `keyID` when given: an assert challenge to the key that
    /// asserts, an attest challenge to the key the app generated (the one the attestation ramp admitted), which
    /// ``AttestationRegistrar`` then requires the attestation to be of; an attest challenge also to `appID` when
    /// given (the app the ramp admitted it for, or the one the request named), which the attestation must be of too.
    /// - Throws: `invalid_field` (`appId`) for an assert challenge bound to an app: an assertion is checked against
    ///   its key's registered app, never a challenge's, so the binding would promise what nothing enforces; the
    ///   store's codes.
    public func issue(
        purpose: ChallengePurpose, keyID: KeyID? = nil, appID: AppID? = nil
    ) async throws(FlowError) -> StoredChallenge {
        if purpose == .assert, appID != nil {
            throw FlowError.invalidField("appId", "names the app of attest challenges only")
        }
        do {
            return try await store.issueChallenge(purpose: purpose, keyID: keyID, appID: appID, ttl: ttl, now: now())
        } catch {
            throw FlowError(error)
        }
    }
}
