import Crypto
import Foundation

extension AppAttestManager {
    /// The identifier of the registered key, generating, attesting and registering one first when there is none.
    ///
    /// Concurrent callers share one attempt. Every step is saved to the key store before the next one, so that a
    /// failure or a relaunch resumes with the same key (see ``KeyState``).
    /// - Throws: ``AttestKitClientError``: ``AttestKitClientError/Code/unavailable`` while App Attest cannot be used
    ///   now (unsupported, Apple or the service unavailable, backing off: ``AttestKitClientError/retryAfter``),
    ///   ``AttestKitClientError/Code/attestationDeferred`` while the service defers the attestation (its ramp:
    ///   ``AttestKitClientError/retryAfter`` says until when),
    ///   ``AttestKitClientError/Code/keyRevoked`` after the service revoked the key,
    ///   ``AttestKitClientError/Code/keyStore`` when the store fails or another manager uses it; and
    ///   ``AttestKitClientError/Code/unavailable`` to the callers of an attempt that ``resetKey(_:)`` interrupted
    ///   (the reset stands: nothing of that attempt is saved; a call after the reset obtains a new key).
    public func attestedKeyID() async throws -> String {
        if let state, state.stage == .registered, let keyID = state.keyID { return keyID }
        if let obtaining { return try await obtaining.value }
        let resets = keyResets
        let task = Task { try await self.obtainKey(since: resets) }
        obtaining = task
        keyAttempt = task
        defer {
            if obtaining == task { obtaining = nil }
            if keyAttempt == task { keyAttempt = nil }
        }
        return try await task.value
    }

    /// Forgets the key `keyID` (or the current key, for `nil`), so that the next request attests a new one.
    ///
    /// Call it when the app decides to start over, as after a revocation it accepts, or after
    /// ``AttestKitClientError/Code/keyStore`` for a state the store holds and cannot read (a damaged file, a state
    /// written by a later version): `resetKey()` replaces it without reading it (and then keeps no
    /// ``KeyState/retiredKeyIDs``: the unreadable state held them). A `keyID` other than the current one is ignored:
    /// the key was replaced already. The key forgotten joins ``KeyState/retiredKeyIDs`` when the service may hold it,
    /// so that ``keyIDsForErasure()`` still names it.
    ///
    /// A reset while ``attestedKeyID()`` or ``attestKey(appData:)`` obtains a key wins: that attempt saves nothing
    /// more (its key, posted already or not, is not made the manager's; one posted by ``attestedKeyID()`` joins
    /// ``KeyState/retiredKeyIDs``, one posted with app data does not), and its callers get
    /// ``AttestKitClientError/Code/unavailable`` once its step under way returns. A call after the reset does not
    /// wait for it: it obtains a new key.
    /// - Throws: ``AttestKitClientError/Code/keyStore`` when the store cannot be written (or, with a `keyID`, read),
    ///   or another manager of this process uses it (its key is left as it is).
    public func resetKey(_ keyID: String? = nil) throws {
        try checkClaim()
        let current: KeyState?
        if let keyID {
            let loaded = try loadState()
            guard keyID == loaded.keyID else { return }
            current = loaded
        } else {
            current = try? loadState()
        }
        // The attempt under way (of ``attestedKeyID()`` or of ``attestKey(appData:)``) works on its own copy of the
        // state: it must not save it over the reset, and a call after the reset does not wait for it.
        keyResets += 1
        obtaining = nil
        try save(current?.withoutKey() ?? KeyState())
    }

    /// Replaces `keyID` after the device or the service stopped accepting it. A key that never had an assertion
    /// accepted makes the next attestation wait for the backoff: a device or service that refuses every new key
    /// must not cost an attestation per request. So does a key replaced within ``Configuration/maximumBackoff`` of
    /// the replacement before it, even one with an accepted assertion: a 2xx proves little where some routes verify
    /// nothing, and a service that refuses every key on its protected routes must meet a growing backoff too.
    /// - Returns: Whether the key was the current one.
    @discardableResult
    func replaceKey(_ keyID: String, proven: Bool) -> Bool {
        guard let current = state, current.keyID == keyID, current.stage == .registered else { return false }
        var next = current.withoutKey()
        next.failures = current.failures
        if !proven || replacedRecently(current) {
            next.failures += 1
            next.notBefore = backoff(after: next.failures)
        }
        next.replacedAt = now()
        try? save(next)
        return true
    }

    /// Whether the key before `state`'s was replaced within ``Configuration/maximumBackoff`` of now (either way:
    /// a time ahead was set by a clock that was wrong, and counts only as far as the backoff reaches).
    func replacedRecently(_ state: KeyState) -> Bool {
        guard let replacedAt = state.replacedAt else { return false }
        return abs(now().timeIntervalSince(replacedAt)) < configuration.maximumBackoff
    }

    /// Marks `keyID` revoked by the service.
    func markRevoked(_ keyID: String) {
        guard var current = state, current.keyID == keyID, current.stage == .registered else { return }
        current.stage = .revoked
        try? save(current)
    }

    /// Notes that the service accepted an assertion of `keyID` (a 2xx): the key works, and the failures that led
    /// to it are over, unless the key before it was replaced recently (``replacedRecently(_:)``: the failures
    /// then last until the backoff's reach has passed, so that alternating accepted and refused requests cannot
    /// reset them).
    func markAsserted(_ keyID: String) {
        guard var current = state, current.keyID == keyID else { return }
        let failures = replacedRecently(current) ? current.failures : 0
        guard !current.asserted || current.failures != failures || current.notBefore != nil else { return }
        current.asserted = true
        current.failures = failures
        current.notBefore = nil
        try? save(current)
    }

    /// When `challenge` expires by this device's clock: what was left of its life when its answer arrived, counted
    /// from now (``ServiceClock``), or the service's own time when the answer had no `Date` header.
    func deviceExpiry(of challenge: AttestKitService.Challenge) -> Date? {
        challenge.lifetime.map { now().addingTimeInterval($0) } ?? challenge.expiresAt
    }

    // MARK: The steps

    /// Obtains the key, from the state saved: an attempt of ``attestedKeyID()`` begun when ``keyResets`` was
    /// `resets`, which stops, saving nothing, once a reset happened since.
    private func obtainKey(since resets: Int) async throws -> String {
        try checkNotReset(since: resets)
        try checkClaim()
        var current = try loadState()
        // A challenge fetched by this call is used at once, whatever the clocks say: even a device clock set so
        // far wrong that every challenge looks expired cannot make the manager fetch challenge after challenge.
        var freshChallenge = false
        // The post that follows the step saving ``KeyState/registrationPosted`` is the attestation's first.
        var firstPost = false
        // The steps from no key to a registered one are at most five; more means something answers in circles.
        for _ in 0..<Self.maximumKeySteps {
            switch current.stage {
            case .registered:
                if let keyID = current.keyID { return keyID }
                current = current.withoutKey()
            case .revoked:
                guard configuration.reattestAfterRevocation else {
                    throw AttestKitClientError(
                        .keyRevoked, status: 403, serviceCode: "key_revoked",
                        reason: "the service revoked this app's key; call resetKey() to attest a new one")
                }
                current = current.withoutKey()
                try save(current)
            case .none, .generated, .attested:
                break
            }
            if let notBefore = current.notBefore, isWaiting(until: notBefore, atMost: longestBackoff) {
                throw AttestKitClientError(
                    .unavailable, retryAfter: notBefore, reason: "App Attest is backing off after a failure")
            }
            if let deferredUntil = current.deferredUntil,
                isWaiting(until: deferredUntil, atMost: configuration.maximumDeferral)
            {
                throw Self.deferral(until: deferredUntil)
            }
            guard provider.isSupported else {
                throw AttestKitClientError(
                    .unavailable, deviceError: .featureUnsupported, reason: "App Attest is not supported here")
            }
            let step = await advance(current, freshChallenge: freshChallenge, firstPost: firstPost)
            try checkNotReset(since: resets)
            switch step {
            case .next(let next):
                freshChallenge = next.stage == .generated && next.challengeID != current.challengeID
                firstPost = next.registrationPosted == true && current.registrationPosted != true
                current = next
                try save(current)
            case .failed(let next, let error):
                current = next
                try save(current)
                throw error
            }
        }
        var next = current
        next.failures += 1
        next.notBefore = backoff(after: next.failures)
        try save(next)
        throw AttestKitClientError(
            .unavailable, retryAfter: next.notBefore, reason: "obtaining a key did not settle; backing off")
    }

    /// Throws ``AttestKitClientError/Code/unavailable`` when ``resetKey(_:)`` forgot the key since ``keyResets``
    /// was `resets`: the attempt begun then must save nothing over the reset.
    func checkNotReset(since resets: Int) throws {
        guard keyResets != resets else { return }
        throw AttestKitClientError(
            .unavailable,
            reason: "resetKey() was called while this key was being obtained: the attempt is dropped, and the "
                + "next request obtains a new key")
    }

    /// The most steps one attempt to obtain a key takes.
    static let maximumKeySteps = 8

    private enum Step {
        case next(KeyState)
        case failed(KeyState, AttestKitClientError)
    }

    /// One step forward from `current`.
    private func advance(_ current: KeyState, freshChallenge: Bool, firstPost: Bool) async -> Step {
        var state = current
        switch state.stage {
        case .none, .registered, .revoked:
            do {
                let keyID = try await provider.generateKey()
                var next = state.withoutKey()
                next.stage = .generated
                next.keyID = keyID
                next.failures = state.failures
                next.replacedAt = state.replacedAt
                return .next(next)
            } catch {
                return deviceFailure(error, state, during: "generating a key")
            }
        case .generated:
            guard let keyID = state.keyID else { return .next(state.withoutKey()) }
            guard let hash = state.clientDataHash, state.challengeID != nil, freshChallenge || !challengeExpired(state)
            else {
                // A challenge first, saved before attesting: a failure or a relaunch attests with the same hash.
                do {
                    let challenge = try await attestationChallenge(for: keyID)
                    state.challengeID = challenge.id
                    state.challengeExpiresAt = deviceExpiry(of: challenge)
                    state.clientDataHash = Data(SHA256.hash(data: challenge.bytes))
                    state.deferredUntil = nil
                    return .next(state)
                } catch let error as AttestKitClientError where error.isAttestationDeferral {
                    // The service's ramp: not now. Keep the key, attest nothing, ask again after the wait; the
                    // failures and their backoff stay as they were.
                    state.deferredUntil = deferredUntil(error.retryAfterSeconds)
                    return .failed(state, Self.deferral(until: state.deferredUntil ?? now()))
                } catch {
                    return serviceFailure(error, state, during: "fetching an attestation challenge")
                }
            }
            do {
                state.attestation = try await provider.attestKey(keyID, clientDataHash: hash)
                state.stage = .attested
                return .next(state)
            } catch {
                return deviceFailure(error, state, during: "attesting the key")
            }
        case .attested:
            guard let keyID = state.keyID, let attestation = state.attestation, let challengeID = state.challengeID
            else { return .next(state.withoutKey()) }
            guard state.registrationPosted == true else {
                state.registrationPosted = true  // saved before the post: a relaunch knows it may have arrived
                return .next(state)
            }
            // Posted before, by this run or one whose answer was lost (``registeredByEarlierPost(_:postedBefore:)``).
            do {
                try await service.registerAttestation(keyID: keyID, attestation: attestation, challengeID: challengeID)
            } catch let error as AttestKitClientError
                where Self.registeredByEarlierPost(error, postedBefore: !firstPost)
            {
                // An earlier attempt whose answer was lost consumed the challenge: it registered the key. (If it
                // did not, the first assertion is refused as key_not_found and the key is replaced then.)
            } catch let error as AttestKitClientError where !error.isTransient {
                // Refused for good (the challenge expired, a verification failed): this attestation will never be
                // registered, so the next attempt, after the backoff, uses a new key.
                var next = state.withoutKey()
                next.failures = state.failures + 1
                next.notBefore = backoff(after: next.failures)
                next.replacedAt = state.replacedAt
                return .failed(next, unavailable(error, next.notBefore, "the service refused the attestation"))
            } catch {
                return serviceFailure(error, state, during: "registering the attestation")
            }
            attestationCount += 1
            // The failures stay until the service accepts an assertion of the key: a service or device that
            // refuses every new key at its first assertion meets a growing backoff, not one attestation a request.
            var registered = KeyState(stage: .registered, keyID: keyID)
            registered.retiredKeyIDs = state.retiredKeyIDs
            registered.failures = state.failures
            registered.replacedAt = state.replacedAt
            return .next(registered)
        }
    }

    /// Whether `error`, answering the post of an attestation that was posted before (`postedBefore`: by this run or
    /// one whose answer was lost), means that an earlier post registered the key: `challenge_consumed` (the earlier
    /// post consumed the challenge), `challenge_not_found` (the service deletes a consumed challenge once it
    /// expired, so a post again minutes later finds none), and `key_exists` (an earlier post stored the key though
    /// it was answered 503, and the service gave the challenge back: only this device can attest this key id). At
    /// the first post, they are refusals: the challenge was not this attestation's.
    static func registeredByEarlierPost(_ error: AttestKitClientError, postedBefore: Bool) -> Bool {
        postedBefore && registeredAfterPostCodes.contains(error.serviceCode ?? "")
    }

    /// The service's codes that answer a post again of an attestation an earlier post registered.
    private static let registeredAfterPostCodes: Set<String> = [
        "challenge_consumed", "challenge_not_found", "key_exists",
    ]

    /// An attestation challenge for the generated key `keyID`, asked for with the key's identifier (by which the
    /// service's ramp decides). A service older than the ramp refuses a key with an attestation challenge
    /// (400 `invalid_field`): it is then asked without one, as it was before.
    func attestationChallenge(for keyID: String) async throws -> AttestKitService.Challenge {
        do {
            return try await service.challenge(for: .attest, keyID: keyID)
        } catch let error as AttestKitClientError
            where error.code == .httpError && error.status == 400 && error.serviceCode == "invalid_field"
        {
            return try await service.challenge(for: .attest)
        }
    }

    /// Whether a wait until `date` is still on: `date` is ahead, by no more than `longest`, the longest wait this
    /// manager sets. A date further ahead was set while the device's clock was ahead (set by hand, then corrected):
    /// it is over, or App Attest would stay off for as long as the clock had been wrong.
    func isWaiting(until date: Date, atMost longest: TimeInterval) -> Bool {
        let remaining = date.timeIntervalSince(now())
        return remaining > 0 && remaining <= longest
    }

    /// The longest wait a failure sets (``Configuration/maximumBackoff`` or, for a device without App Attest,
    /// ``Configuration/unsupportedBackoff``): a backoff further ahead was set by a clock that was wrong.
    var longestBackoff: TimeInterval { max(configuration.maximumBackoff, configuration.unsupportedBackoff) }

    /// Until when a deferral answered with `Retry-After: seconds` waits: that long from now, at most
    /// ``Configuration/maximumDeferral``; an hour (at most that) without a readable `Retry-After`.
    func deferredUntil(_ seconds: Int?) -> Date {
        let wait = seconds.map { TimeInterval($0) } ?? 3600
        return now().addingTimeInterval(min(wait, configuration.maximumDeferral))
    }

    /// The error of a request that App Attest cannot serve while the service defers the attestation.
    static func deferral(until date: Date) -> AttestKitClientError {
        AttestKitClientError(
            .attestationDeferred, status: 429, serviceCode: AttestKitClientError.attestationDeferredServiceCode,
            retryAfter: date, reason: "the service defers this install's attestation (its ramp)")
    }

    private func challengeExpired(_ state: KeyState) -> Bool {
        guard let expiresAt = state.challengeExpiresAt else { return false }
        return now() >= expiresAt
    }

    /// A device failure while obtaining the key: the state to keep and the error to report.
    private func deviceFailure(_ error: any Error, _ current: KeyState, during step: String) -> Step {
        let deviceError = error as? DeviceServiceError ?? .unknown
        var next = current
        switch deviceError {
        case .featureUnsupported:
            // `isSupported` said yes and the call says no (app extensions): skip App Attest for a long while.
            next.notBefore = now().addingTimeInterval(configuration.unsupportedBackoff)
        case .invalidKey, .invalidInput:
            // The key cannot be attested (unknown to the device, or attested already): a new key, after the
            // backoff, never right away.
            next = current.withoutKey()
            next.failures = current.failures + 1
            next.notBefore = backoff(after: next.failures)
            next.replacedAt = current.replacedAt
        case .serverUnavailable, .unknown:
            // Apple asks to try again later with the same key and client data hash: keep both.
            next.failures += 1
            next.notBefore = backoff(after: next.failures)
        }
        let failure = AttestKitClientError(
            .unavailable, deviceError: deviceError, retryAfter: next.notBefore,
            reason: "the device failed \(step): \(deviceError)")
        return .failed(next, failure)
    }

    /// A passing failure of the service (network, 5xx, 429) while obtaining the key: keep everything, back off.
    private func serviceFailure(_ error: any Error, _ current: KeyState, during step: String) -> Step {
        var next = current
        next.failures += 1
        next.notBefore = backoff(after: next.failures)
        return .failed(next, unavailable(error, next.notBefore, "\(step) failed"))
    }

    private func unavailable(_ error: any Error, _ retryAfter: Date?, _ reason: String) -> AttestKitClientError {
        let wrapped = AttestKitClientError.wrapping(error, as: .transport, reason)
        return AttestKitClientError(
            .unavailable, status: wrapped.status, serviceCode: wrapped.serviceCode, deviceError: wrapped.deviceError,
            retryAfter: retryAfter, reason: "\(reason): \(wrapped)")
    }

    func backoff(after failures: Int) -> Date {
        let delay = Backoff(initial: configuration.initialBackoff, maximum: configuration.maximumBackoff)
            .delay(failures: failures, random: random())
        return now().addingTimeInterval(delay)
    }

    // MARK: The store

    /// Refuses the store's use while another manager of this process holds it (``KeyStoreClaims``): two managers
    /// would each attest, count and reset on their own.
    /// - Throws: ``AttestKitClientError/Code/keyStore``.
    func checkClaim() throws {
        guard claim != nil else {
            throw AttestKitClientError(
                .keyStore, reason: "another AppAttestManager of this process uses this key store")
        }
    }

    /// The state, read from the store on first use.
    func loadState() throws -> KeyState {
        if let state { return state }
        let stored: KeyState?
        do {
            stored = try keyStore.load()
        } catch {
            throw AttestKitClientError.wrapping(error, as: .keyStore, "the key store cannot be read")
        }
        let loaded = stored ?? KeyState()
        state = loaded
        return loaded
    }

    /// Keeps `next` in memory (for this run) and in the store.
    func save(_ next: KeyState) throws {
        state = next
        do {
            try keyStore.save(next)
        } catch {
            throw AttestKitClientError.wrapping(error, as: .keyStore, "the key store cannot be written")
        }
    }
}
