public import AttestKitWire
import Crypto
public import Foundation

/// The app side of App Attest: one attested key per install, and an assertion for every protected request.
///
/// - **Attest once, never burn an attestation.** Apple records metrics per attestation that cannot be reset. The
///   manager keeps its ``KeyState`` in the ``KeyIDStore`` and saves it after every step: the generated key with the
///   challenge and client data hash it is attested with, then the attestation object until the service has
///   registered it. A relaunch, a failed registration (network, 5xx, 429) or `serverUnavailable` resumes from
///   there with the same key (and, after `serverUnavailable`, the same client data hash, as Apple asks). A new
///   key is generated only when the old one cannot be used any more: the service refused its attestation for
///   good, the device no longer knows it, or the service reports it unknown or its counter gone back.
/// - **Back off, persisted, with jitter.** Every failure of the device or the service sets the time before which
///   the manager calls neither again (exponential, ``Configuration/initialBackoff`` to
///   ``Configuration/maximumBackoff``, jittered, kept in the store across launches). Until then requests fail
///   with ``AttestKitClientError/Code/unavailable``, which ``AttestKitHTTPClient`` answers by falling back to
///   the next level of its ``AttestationStrategy``: the user is never blocked and attestations never loop.
/// - **Paced by the service.** The key is generated first (no cost at Apple) and the attestation challenge is asked
///   for with its identifier, by which a service ramping App Attest up decides whether this install attests now.
///   When it defers (429 `attestation_deferred` with `Retry-After`), the manager does not call `attestKey`: it
///   keeps the key, saves until when it waits (``KeyState/deferredUntil``, kept across launches) and fails with
///   ``AttestKitClientError/Code/attestationDeferred``, which ``AttestKitHTTPClient`` answers like
///   ``AttestKitClientError/Code/unavailable``, at the strategy's next level. After the wait the same key asks
///   again. A deferral is not a failure: it does not grow the backoff.
/// - **Single flight.** Callers that need the key while it is being attested wait for that one attestation.
/// - **Assertions bound to requests** with `AttestKitWire.RequestBinding` (method, path and query, SHA-256 of the
///   body, and a timestamp or a challenge of the service).
/// - **Revocation is reported**, not undone: after `key_revoked` requests fail with
///   ``AttestKitClientError/Code/keyRevoked`` until the app calls ``resetKey(_:)`` or opts in with
///   ``Configuration/reattestAfterRevocation``.
/// - **Clock skew**: when the service refuses a timestamp as outside its window, the manager switches to one-time
///   challenges of the service (``usesServiceChallenges``).
///
/// The manager is an actor because it owns the key's state; share one instance per key store (a second manager
/// over the same store in one process is refused with ``AttestKitClientError/Code/keyStore``).
public actor AppAttestManager {
    /// How the manager behaves.
    public struct Configuration: Sendable {
        /// How assertions prove they are fresh:
        /// - `.timestamp` (the default): the device's clock in Unix milliseconds (`X-AttestKit-Timestamp`), which
        ///   the service accepts within a window: no extra round trip;
        /// - `.challenge`: a one-time challenge of the service (`POST /v1/challenges` with purpose `assert`, bound
        ///   to the key; `X-AttestKit-Challenge`): one more round trip, no dependence on the device's clock;
        /// - `.vouched` names no freshness an app can send: signing fails with
        ///   ``AttestKitClientError/Code/invalidRequest``.
        public var freshness: AttestKitWire.Freshness.Kind
        /// Whether a refusal as `timestamp_outside_window` switches the manager to service challenges (and the
        /// request is sent again with one); `true` by default.
        public var switchToChallengesOnClockSkew: Bool
        /// Whether a `key_revoked` refusal makes the manager attest a new key on its own; `false` by default, so
        /// that an operator's revocation holds. A key revoked before any assertion of it was accepted is replaced
        /// after the backoff, as any key the service refuses at its first assertion.
        public var reattestAfterRevocation: Bool
        /// The backoff after the first failure, in seconds; it doubles with every failure in a row.
        public var initialBackoff: TimeInterval
        /// The longest backoff, in seconds.
        public var maximumBackoff: TimeInterval
        /// How long App Attest is skipped after `featureUnsupported` from a device that says it supports it (as
        /// in some app extensions), in seconds.
        public var unsupportedBackoff: TimeInterval
        /// The longest the manager honours the service's deferral of its attestation (429 `attestation_deferred`,
        /// the service's ramp), in seconds: a longer `Retry-After` is cut to it, so that a misconfigured service
        /// cannot keep App Attest off for weeks. A deferral without a readable `Retry-After` (integer seconds)
        /// waits an hour, at most this. 24 hours by default.
        public var maximumDeferral: TimeInterval
        /// A debug token of the service's allow-list, sent in `X-AttestKit-Debug-Token` instead of attesting and
        /// asserting (App Attest does not run in the Simulator). It is sent only in a build for the Simulator
        /// (`targetEnvironment(simulator)`), or where ``debugTokenOutsideSimulator`` enables it; a device build
        /// ignores it. `nil` (the default) or empty: never sent.
        public var debugToken: String?
        /// Whether ``debugToken`` is sent outside a Simulator build too, for the app's own tests (CI, Linux);
        /// `false` by default, so that a device build always attests.
        public var debugTokenOutsideSimulator: Bool

        /// Creates a configuration.
        public init(
            freshness: AttestKitWire.Freshness.Kind = .timestamp,
            switchToChallengesOnClockSkew: Bool = true,
            reattestAfterRevocation: Bool = false,
            initialBackoff: TimeInterval = 2,
            maximumBackoff: TimeInterval = 6 * 3600,
            unsupportedBackoff: TimeInterval = 24 * 3600,
            maximumDeferral: TimeInterval = 24 * 3600,
            debugToken: String? = nil,
            debugTokenOutsideSimulator: Bool = false
        ) {
            self.freshness = freshness
            self.switchToChallengesOnClockSkew = switchToChallengesOnClockSkew
            self.reattestAfterRevocation = reattestAfterRevocation
            self.initialBackoff = max(0, initialBackoff)
            self.maximumBackoff = max(self.initialBackoff, maximumBackoff)
            self.unsupportedBackoff = max(0, unsupportedBackoff)
            self.maximumDeferral = max(0, maximumDeferral)
            self.debugToken = debugToken
            self.debugTokenOutsideSimulator = debugTokenOutsideSimulator
        }

        /// The debug token to send instead of an assertion in this build, or `nil`.
        var activeDebugToken: String? {
            guard let debugToken, !debugToken.isEmpty else { return nil }
            #if targetEnvironment(simulator)
                return debugToken
            #else
                return debugTokenOutsideSimulator ? debugToken : nil
            #endif
        }
    }

    /// An assertion made for one request, and the headers that carry it.
    public struct SignedRequest: Sendable, Hashable {
        /// The key identifier, Base64.
        public let keyID: String
        /// The assertion object.
        public let assertion: Data
        /// The freshness proof the client data names.
        public let freshness: Freshness

        /// `X-AttestKit-Key-Id`, `X-AttestKit-Assertion` and `X-AttestKit-Timestamp` or `X-AttestKit-Challenge`.
        public var headers: [String: String] {
            var headers = [
                AttestKitHeaderNames.keyID: keyID, AttestKitHeaderNames.assertion: assertion.base64EncodedString(),
            ]
            if let header = AttestKitHeaderNames.header(of: freshness) { headers[header.name] = header.value }
            return headers
        }
    }

    let provider: any AppAttestProvider
    let keyStore: any KeyIDStore
    let service: AttestKitService
    let configuration: Configuration
    let now: @Sendable () -> Date
    let random: @Sendable () -> Double
    /// The key store identity this manager holds, or `nil` when another manager held it.
    let claim: String?

    /// The key's state, once read from the store.
    var state: KeyState?
    /// The attestation under way, which concurrent callers share.
    var obtaining: Task<String, any Error>?
    /// The attempt of ``attestedKeyID()`` under way (``obtaining`` unless it attests with app data, or a reset
    /// detached it).
    var keyAttempt: Task<String, any Error>?
    /// How many times ``resetKey(_:)`` forgot the key: an attempt of ``attestedKeyID()`` started before the last
    /// reset saves nothing more, so that the reset stands.
    var keyResets = 0
    /// The freshness in use: the configured one, until a clock skew switches it to service challenges.
    var freshness: Freshness.Kind

    /// A logical clock of the actor, stamping when each tracked signing starts and ends.
    var clock = 0
    /// The tracked assertions sent and not answered yet, by their start stamp.
    var pending: [Int: PendingAssertion] = [:]
    /// Per key, the latest signing end stamp of the assertions the server did not refuse as not increasing.
    var latestAccepted: [String: Int] = [:]
    /// The keys whose last refusal as not increasing nothing explained: the request was sent again with a fresh
    /// assertion (it may have been a copy of an accepted one), and another such refusal replaces the key.
    var counterSuspects: Set<String> = []

    /// The key attestations under way, by app key, which concurrent callers share.
    var keyAttestations: [Data: Task<KeyAttestationResponse, any Error>] = [:]
    /// The attestations with app data under way, by app data, which concurrent callers share.
    var appDataAttestations: [Data: Task<KeyRecordResponse, any Error>] = [:]
    /// The attestations of new keys (for an app key, or with app data) a passing failure interrupted, to go on with
    /// (this run only).
    var pendingAttestations: [AttestationBinding: PendingAttestation] = [:]
    /// The keys generated for such attestations that have no challenge yet (deferred by the service's ramp, or the
    /// challenge failed; this run only).
    var keptKeys: [AttestationBinding: KeptKey] = [:]

    /// How many attestations this manager has registered with the service (for diagnostics and tests).
    public internal(set) var attestationCount = 0

    /// Creates a manager.
    ///
    /// - Parameters:
    ///   - provider: The device's App Attest.
    ///   - keyStore: Where the key's state is kept between launches; one manager per store.
    ///   - service: The AttestKit service that issues challenges and registers attestations.
    ///   - configuration: Freshness, backoff, revocation and clock-skew behaviour.
    ///   - now: The clock of timestamps and backoffs (injectable for tests).
    ///   - random: A uniform random number in `0..<1` for the backoff's jitter (injectable for tests).
    public init(
        provider: any AppAttestProvider,
        keyStore: any KeyIDStore,
        service: AttestKitService,
        configuration: Configuration = Configuration(),
        now: @escaping @Sendable () -> Date = { Date() },
        random: @escaping @Sendable () -> Double = { Double.random(in: 0..<1) }
    ) {
        self.provider = provider
        self.keyStore = keyStore
        self.service = service
        self.configuration = configuration
        self.now = now
        self.random = random
        self.freshness = configuration.freshness
        let identity = keyStore.identity
        self.claim = KeyStoreClaims.claim(identity) ? identity : nil
    }

    deinit {
        if let claim { KeyStoreClaims.release(claim) }
    }

    /// Whether assertions use one-time challenges of the service: configured so, or switched after the service
    /// refused the device's clock.
    public var usesServiceChallenges: Bool { freshness == .challenge }

    /// The key's state as last read or saved (`nil` before the first request).
    public var keyState: KeyState? { state }
}
