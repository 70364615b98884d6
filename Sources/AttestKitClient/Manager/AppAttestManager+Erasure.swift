extension AppAttestManager {
    /// The identifiers of every key of this install the service may hold, for a request to erase the install's
    /// data: the current key first (at any stage, as ``KeyState/keyID``), then the earlier keys the manager kept
    /// (``KeyState/retiredKeyIDs``, newest first, at most ``KeyState/maximumRetiredKeyIDs``), each once.
    ///
    /// The operator deletes each with `DELETE /v1/keys/{keyId}`: the identifiers are in the key's one spelling the
    /// route takes, standard Base64 with padding, to be percent-encoded in the path (`+`, `/` and `=`). A key the
    /// service never registered is answered 404 `key_not_found`, which is harmless: the current key is listed even
    /// before its attestation was sent, and an earlier key whose attestation was posted is listed even when the
    /// service refused it (a post whose answer was lost may have registered it); an earlier key whose attestation
    /// was never sent is not listed, since the service holds nothing of it. The keys attested for an app key
    /// (``attestAppKey(publicKeyDER:)``) are listed among the earlier ones, once registered.
    ///
    /// An install that replaced more than ``KeyState/maximumRetiredKeyIDs`` keys since its last erasure request
    /// lists only the most recent ones; a state the key store held and could not read (replaced by ``resetKey(_:)``)
    /// took its list with it. Once the request went through, ``forgetRetiredKeyIDs(_:)`` forgets the ids sent.
    /// - Throws: ``AttestKitClientError/Code/keyStore`` when the store cannot be read or another manager of this
    ///   process uses it.
    public func keyIDsForErasure() throws -> [String] {
        try checkClaim()
        let current = try loadState()
        var keyIDs: [String] = current.keyID.map { [$0] } ?? []
        for keyID in current.retiredKeyIDs where !keyIDs.contains(keyID) { keyIDs.append(keyID) }
        return keyIDs
    }

    /// Forgets earlier keys' identifiers (``KeyState/retiredKeyIDs``) once the app's erasure request for them went
    /// through, so that no identifier is kept for ever: those in `keyIDs` (the ones the request sent, as
    /// ``keyIDsForErasure()`` listed them), or all of them for `nil`.
    ///
    /// The current key is kept, even when `keyIDs` names it: it is the key in use. Once the service deleted it, the
    /// next request is refused with `key_not_found` and the manager attests a new key; the deleted key then joins the
    /// earlier keys, and a later erasure request names it again (answered 404, harmlessly), unless the app calls
    /// ``resetKey(_:)`` before forgetting. An attestation of the manager's key under way is waited for first, so that
    /// it does not put back what this forgets.
    /// - Parameter keyIDs: The identifiers to forget, or `nil` for every earlier key's.
    /// - Throws: ``AttestKitClientError/Code/keyStore`` when the store cannot be read or written, or another manager
    ///   of this process uses it.
    public func forgetRetiredKeyIDs(_ keyIDs: [String]? = nil) async throws {
        try checkClaim()
        await waitForKeyAttestation()
        var current = try loadState()
        let kept = keyIDs.map { forgotten in current.retiredKeyIDs.filter { !forgotten.contains($0) } } ?? []
        guard kept != current.retiredKeyIDs else { return }
        current.retiredKeyIDs = kept
        try save(current)
    }

    /// Keeps `keyID`, a key the service registered that is not the manager's (attested for an app key), among the
    /// earlier keys (``KeyState/retiredKeyIDs``), for ``keyIDsForErasure()``. Best effort: nothing is kept when
    /// another manager uses the store or the store fails (the attestation it follows succeeded all the same).
    func keepForErasure(_ keyID: String) async {
        guard claim != nil else { return }
        await waitForKeyAttestation()
        guard var current = try? loadState(), current.keyID != keyID else { return }
        current.retire(keyID)
        try? save(current)
    }

    /// Waits for the attestation of the manager's key under way, if any: it works on its own copy of the state and
    /// saves it after each step, which would put back a change of ``KeyState/retiredKeyIDs`` made meanwhile. A
    /// caller changes the state with no suspension after this returns.
    private func waitForKeyAttestation() async {
        // Every wait is a suspension in which another attestation may start: look again after each. A task waited
        // for once is not waited for again (it may still be recorded, its caller not yet resumed).
        var waited: Task<String, any Error>?
        while let running = obtaining, running != waited {
            waited = running
            _ = try? await running.value
        }
    }
}
