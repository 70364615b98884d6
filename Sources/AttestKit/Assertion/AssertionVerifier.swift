public import Crypto

/// Verifies App Attest assertions: the signature a registered key makes over each request.
///
/// ```swift
/// let verifier = AssertionVerifier()
/// let result = try verifier.verify(assertionBytes, publicKey: storedKey, appID: appID,
///                                  clientData: .clientData(requestBytes), previousCounter: storedCounter)
/// try await store.advanceCounter(keyID, from: storedCounter, to: result.counter)  // compare-and-set
/// ```
///
/// The signature is ECDSA P-256 with SHA-256 over the nonce SHA-256(authenticatorData ‖ clientDataHash),
/// so the signed digest is SHA-256(nonce). One P-256 verification per assertion; nothing is allocated
/// beyond the parsed object.
public struct AssertionVerifier: Sendable {
    /// Creates a verifier. Assertions involve no certificates and no time.
    public init() {}

    /// Verifies an assertion.
    ///
    /// - Parameters:
    ///   - assertion: The bytes `generateAssertion` returned (decoded from the app's Base64).
    ///   - publicKey: The key stored at attestation.
    ///   - appID: The App ID the key was attested for.
    ///   - clientData: The client data the app hashed (rebuilt from the request the server received), or
    ///     the exact hash it passed.
    ///   - previousCounter: The counter stored for the key (0 right after attestation).
    /// - Returns: The assertion's counter, to store with a compare-and-set.
    /// - Throws: ``AttestKitError``: `appId`, `signature` or `counter` checks, or `format` for malformed input.
    public func verify(
        _ assertion: some Collection<UInt8>,
        publicKey: P256.Signing.PublicKey,
        appID: AppID,
        clientData: ClientDataInput,
        previousCounter: UInt32
    ) throws(AttestKitError) -> VerifiedAssertion {
        let object = try AssertionObject(bytes: assertion)
        let clientDataHash = try clientData.hash()
        let authenticatorData = object.authenticatorData

        guard ConstantTime.equal(authenticatorData.rpIDHash, appID.rpIDHash) else {
            throw AttestKitError(.appIdMismatch, "rpIdHash is not SHA-256 of the key's App ID")
        }
        let signature: P256.Signing.ECDSASignature
        do {
            signature = try P256.Signing.ECDSASignature(derRepresentation: object.signature)
        } catch {
            throw AttestKitError(.signatureMalformed, "the assertion signature is not a DER ECDSA signature")
        }
        var hasher = SHA256()
        hasher.update(data: authenticatorData.bytes)
        hasher.update(data: clientDataHash)
        let nonce = hasher.finalize()
        guard publicKey.isValidSignature(signature, for: Array(nonce)) else {
            throw AttestKitError(.signatureInvalid, "the assertion signature does not verify under the stored key")
        }
        guard authenticatorData.signCount > previousCounter else {
            throw AttestKitError(
                .counterNotIncreasing,
                "the counter \(authenticatorData.signCount) is not greater than the stored \(previousCounter)")
        }
        return VerifiedAssertion(counter: authenticatorData.signCount, authenticatorData: authenticatorData)
    }

    /// Verifies an assertion against a key stored as its 65-byte X9.63 point (parsed once per process and kept in
    /// a bounded cache: keys never change).
    /// - Throws: ``AttestKitError/Code/publicKeyMalformed`` when `publicKeyX963` is not a P-256 point,
    ///   then as ``verify(_:publicKey:appID:clientData:previousCounter:)``.
    public func verify(
        _ assertion: some Collection<UInt8>,
        publicKeyX963: some Collection<UInt8>,
        appID: AppID,
        clientData: ClientDataInput,
        previousCounter: UInt32
    ) throws(AttestKitError) -> VerifiedAssertion {
        let publicKey: P256.Signing.PublicKey
        do {
            publicKey = try PublicKeyCache.shared.key(x963: Array(publicKeyX963))
        } catch {
            throw AttestKitError(.publicKeyMalformed, "the stored key is not a P-256 X9.63 point")
        }
        return try verify(
            assertion, publicKey: publicKey, appID: appID, clientData: clientData, previousCounter: previousCounter)
    }
}

/// A verified assertion.
public struct VerifiedAssertion: Sendable, Hashable {
    /// The counter the assertion carries; store it (compare-and-set) so that a replay fails.
    public let counter: UInt32
    /// The parsed authenticator data (iOS 27+ extensions included).
    public let authenticatorData: AuthenticatorData
    /// Whether the iOS 27 extension map is reported (``bundleVersion``, ``validationCategory``): unless
    /// ``ignoringExtensions()`` says otherwise.
    public private(set) var extensionsReported = true
    /// iOS 27+: the app's bundle version (`apple_bundle_version_01`), signed with the assertion; `nil` before, and
    /// when the map is not reported.
    public var bundleVersion: String? { extensionsReported ? authenticatorData.extensions?.bundleVersion : nil }
    /// iOS 27+: the launch validation category (`apple_validation_category_01`, ``ValidationCategory`` names it);
    /// `nil` before, and when the map is not reported.
    public var validationCategory: UInt32? {
        extensionsReported ? authenticatorData.extensions?.validationCategory : nil
    }

    /// Creates the result of a verified assertion.
    init(counter: UInt32, authenticatorData: AuthenticatorData) {
        self.counter = counter
        self.authenticatorData = authenticatorData
    }

    /// This assertion without its extension map reported: for a key whose attestation carried none.
    ///
    /// The map trails the authenticator data without a length or a flag, and the device signs the authenticator
    /// data followed by the client data hash the app chose, whose length it does not fix. On a device before iOS 27
    /// (no map of its own) an app that passes `map ‖ hash` as its client data hash gets a signature that verifies
    /// over `authenticatorData ‖ map` and the real hash: a map of its choosing. A device from iOS 27 writes its own
    /// map, after which anything appended is refused, so only a key attested with a map (its attestation's map
    /// bound by the receipt, ``VerifiedAttestation/extensionsAuthenticated``) reports one at its assertions.
    public func ignoringExtensions() -> VerifiedAssertion {
        var copy = self
        copy.extensionsReported = false
        return copy
    }

    /// This assertion as the key `key` can vouch for it: without its map reported (``ignoringExtensions()``) when the
    /// key's attestation reported none (neither a bundle version nor a validation category), as it is. What every
    /// ``AssertionPolicy`` of this module reads, so that a policy checked on an assertion straight from
    /// ``AssertionVerifier`` cannot be steered by a map an app put in its client data hash.
    public func reported(for key: RegisteredKey) -> VerifiedAssertion {
        key.bundleVersion == nil && key.validationCategory == nil ? ignoringExtensions() : self
    }
}
