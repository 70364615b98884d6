import AttestKitWire
import Foundation
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

extension AppAttestManager {
    /// A signed request on its way: its key and when its signing started and ended on the actor's clock.
    struct Ticket: Sendable {
        /// The key that signed.
        let keyID: String
        /// The stamp taken before the device was asked to sign.
        let started: Int
        /// The stamp taken once the device had signed.
        let finished: Int
        /// Whether the freshness was the device's clock.
        let timestamped: Bool
    }

    /// A tracked assertion on its way.
    struct PendingAssertion: Sendable {
        /// The key that signed it ("" while the device is still signing).
        var keyID = ""
        /// The stamp taken once the device had signed (`nil` while it is still signing).
        var finished: Int?

        /// Whether it may have overtaken an assertion of `keyID` whose signing started at `started`: its own signing
        /// (by that key, or by a key not known yet) ended after that start, or has not ended.
        func mayOvertake(keyID other: String, startedAt started: Int) -> Bool {
            guard keyID.isEmpty || keyID == other else { return false }
            return (finished ?? .max) > started
        }
    }

    /// What to do after the answer to a signed request.
    enum Decision: Sendable, Equatable {
        /// Nothing more: return the answer or report the refusal.
        case done
        /// Send the request again with a new assertion; `replacedKey` when the key was replaced for it.
        case resend(replacedKey: Bool)
        /// The key is revoked: report it.
        case revoked
    }

    /// `request` with the assertion headers and its ticket; call ``answered(_:refusal:accepted:)`` with the ticket once the
    /// answer is known.
    func signed(_ request: URLRequest) async throws -> (request: URLRequest, ticket: Ticket) {
        guard request.httpBodyStream == nil else {
            throw AttestKitClientError(.invalidRequest, reason: "a streamed body cannot be bound; set httpBody")
        }
        guard let url = request.url, let target = Self.target(of: url) else {
            throw AttestKitClientError(.invalidRequest, reason: "the request has no usable URL")
        }
        clock += 1
        let started = clock
        pending[started] = PendingAssertion()
        let signedRequest: SignedRequest
        do {
            signedRequest = try await makeAssertion(
                method: request.httpMethod ?? "GET", target: target, body: request.httpBody ?? Data())
        } catch {
            pending[started] = nil
            throw error
        }
        clock += 1
        pending[started] = PendingAssertion(keyID: signedRequest.keyID, finished: clock)
        var request = request
        for (name, value) in signedRequest.headers { request.setValue(value, forHTTPHeaderField: name) }
        let timestamped = signedRequest.freshness.kind == .timestamp
        let ticket = Ticket(keyID: signedRequest.keyID, started: started, finished: clock, timestamped: timestamped)
        return (request, ticket)
    }

    /// Notes the answer to a signed request and decides what follows. `refusal` is the AttestKit verification's
    /// refusal, or `nil` for any other answer (acceptance, the route's own refusal, a lost connection); `accepted`
    /// says whether the answer was a 2xx.
    ///
    /// - `counter_not_increasing` for an old key (replaced since): sent again with the current key. For the current
    ///   key: sent again when a later assertion of the key overtook this one. When none did, sent again with a fresh
    ///   assertion of the same key: the request refused may be a copy of one the service accepted (a proxy or the
    ///   network sent it twice), whose answer was the only one to arrive. The key is replaced when that is refused
    ///   too with nothing to explain it (the device's counter went back, as after restoring a backup).
    /// - `key_not_found`, `key_expired` (the service no longer takes the key: deleted, or unused for too long),
    ///   `policy_validation_category_changed` (the key was attested by a build of another category): the key is
    ///   replaced and the request sent again.
    /// - `key_revoked`: reported (the key is kept as revoked), unless the app opted in to re-attesting.
    /// - `timestamp_outside_window`: the manager switches to service challenges and the request is sent again.
    func answered(
        _ ticket: Ticket, refusal: AttestKitClientError.VerificationRefusal?, accepted: Bool = false
    ) -> Decision {
        let isCurrent = state?.keyID == ticket.keyID
        // Whether the service accepted an assertion of this key before this answer (a 2xx: an answer that was
        // merely not a counter refusal, such as a lost connection, proves nothing).
        let proven = isCurrent && state?.asserted == true
        switch refusal {
        case nil:
            _ = finish(ticket, counterRefused: false)
            if accepted { markAsserted(ticket.keyID) }
            return .done
        case .counterNotIncreasing:
            let behind = finish(ticket, counterRefused: true)
            guard isCurrent else { return .resend(replacedKey: false) }
            guard behind else { return .resend(replacedKey: false) }
            // Nothing explains it: a copy of an accepted request, or a counter gone back. A fresh assertion tells them
            // apart (the copy's counter is the last accepted one, so the next is above it); answered otherwise than
            // with this refusal, the key is cleared (``finish(_:counterRefused:)``).
            guard counterSuspects.contains(ticket.keyID) else {
                counterSuspects.insert(ticket.keyID)
                return .resend(replacedKey: false)
            }
            counterSuspects.remove(ticket.keyID)
            replaceKey(ticket.keyID, proven: proven)
            return .resend(replacedKey: true)
        case .timestampOutsideWindow:
            _ = finish(ticket, counterRefused: false)
            guard ticket.timestamped, configuration.switchToChallengesOnClockSkew else { return .done }
            freshness = .challenge
            return .resend(replacedKey: false)
        case let refusal?:
            // The refusals of the key itself: `key_not_found`, `key_expired`, `policy_validation_category_changed`,
            // `key_revoked`.
            _ = finish(ticket, counterRefused: false)
            return keyRefused(ticket.keyID, refusal: refusal)
        }
    }

    /// Notes that the service no longer takes the key `keyID`, and decides what follows, for a refusal of the key
    /// itself: `key_not_found`, `key_expired` and `policy_validation_category_changed` replace the key, `key_revoked`
    /// marks it revoked (or replaces it, with ``Configuration/reattestAfterRevocation``). A key other than the
    /// current one was replaced already: the request is merely sent again. The one handling of these refusals, for an
    /// assertion's (``answered(_:refusal:accepted:)``) and for a session token of the key that a backend relays the
    /// service's refusal of (``AttestKitHTTPClient/data(withSessionToken:)``).
    /// - Returns: ``Decision/resend(replacedKey:)``, ``Decision/revoked``, or ``Decision/done`` for a refusal that
    ///   is not about the key.
    func keyRefused(_ keyID: String, refusal: AttestKitClientError.VerificationRefusal) -> Decision {
        switch refusal {
        case .keyNotFound, .keyExpired, .validationCategoryChanged, .keyRevoked: break
        case .counterNotIncreasing, .timestampOutsideWindow: return .done
        }
        guard state?.keyID == keyID else { return .resend(replacedKey: false) }
        // Whether the service accepted an assertion of this key before (a 2xx).
        let proven = state?.asserted == true
        if refusal == .keyRevoked && !configuration.reattestAfterRevocation {
            markRevoked(keyID)
            return .revoked
        }
        // A key revoked at its first assertion waits for the backoff, as any key never accepted: a service that
        // revokes every new key must not cost two attestations a request.
        replaceKey(keyID, proven: proven)
        return .resend(replacedKey: true)
    }

    /// Notes the answer to a signed request, and says whether a refusal as `counter_not_increasing` means that the
    /// device's counter is behind the server's (as after restoring a backup), so that the key must be replaced.
    ///
    /// Kept per key: the server refuses an assertion whose counter is not above the last one it accepted for that
    /// key. When that last one came from this app, it was signed by an assertion of the same key whose signing
    /// ended after this one's started, and which is either still on its way or was answered otherwise than with
    /// this refusal: then the request was merely overtaken. When there is no such assertion, the server's counter
    /// is ahead of the device's. Answers about another key never count: a late answer for an old key says nothing
    /// about the new key's counter.
    /// - Returns: `true` when the key's counter is behind the server's.
    func finish(_ ticket: Ticket, counterRefused: Bool) -> Bool {
        pending[ticket.started] = nil
        guard counterRefused else {
            latestAccepted[ticket.keyID] = max(latestAccepted[ticket.keyID] ?? 0, ticket.finished)
            counterSuspects.remove(ticket.keyID)
            forgetOldKeys()
            return false
        }
        // Only an assertion signed after this one started can carry a higher counter: one whose signing ended before
        // (a slow upload still on its way) explains nothing.
        let laterPending = pending.values.contains { $0.mayOvertake(keyID: ticket.keyID, startedAt: ticket.started) }
        let laterAccepted = (latestAccepted[ticket.keyID] ?? 0) > ticket.started
        return !laterPending && !laterAccepted
    }

    /// Drops the records of keys that are neither current nor signing a request on its way.
    private func forgetOldKeys() {
        let inUse = Set(pending.values.map(\.keyID)).union([state?.keyID ?? ""])
        for keyID in latestAccepted.keys where !inUse.contains(keyID) { latestAccepted[keyID] = nil }
        counterSuspects.formIntersection(inUse)
    }
}
