public import AttestKit
import Crypto
public import Foundation

extension SimulatedDevice {
    /// Attests a key, as `DCAppAttestService.attestKey(_:clientDataHash:)`: the CBOR attestation object, with the
    /// credential certificate and the attestation CA in `x5c` and an `ATTEST` receipt.
    ///
    /// - Parameters:
    ///   - keyID: A key from ``generateKey()`` that was never attested.
    ///   - clientDataHash: The bytes the app passes, usually SHA-256 of the server's challenge.
    ///   - fault: A defect to build in (one whose ``SoftwareAppleFault/targets`` include `.attestation`).
    ///   - time: The attestation time: the certificate's issuance and the receipt's creation.
    /// - Returns: The attestation object.
    /// - Throws: ``SoftwareAppleError/Code/invalidKey`` for an unknown or already attested key,
    ///   ``SoftwareAppleError/Code/invalidInput`` for an empty hash or a fault that does not apply.
    public func attestKey(
        _ keyID: KeyID,
        clientDataHash: [UInt8],
        fault: SoftwareAppleFault? = nil,
        at time: Date = Date()
    ) throws(SoftwareAppleError) -> [UInt8] {
        try Self.check(clientDataHash, fault, applyTo: .attestation)
        let privateKey = try withKey(keyID) { key throws(SoftwareAppleError) in
            guard !key.attested else { throw SoftwareAppleError(.invalidKey, "the key has already been attested") }
            key.attested = true
            return key.privateKey
        }
        do throws(SoftwareAppleError) {
            let (object, receipt) = try attestation(
                of: privateKey.publicKey, clientDataHash: clientDataHash, fault: fault, at: time)
            try withKey(keyID) { key throws(SoftwareAppleError) in key.receipt = receipt }
            return object
        } catch {
            try? withKey(keyID) { key throws(SoftwareAppleError) in key.attested = false }
            throw error
        }
    }

    /// Signs an assertion, as `DCAppAttestService.generateAssertion(_:clientDataHash:)`: the CBOR map
    /// `{"signature": DER ECDSA, "authenticatorData": rpIdHash ‖ 0x40 ‖ counter}` with the counter advanced by one;
    /// on iOS 27 (``Configuration/iOS27Extensions``) the authenticator data ends with the same extension map as the
    /// attestation's (bundle version and validation category), as Apple's devices do.
    /// The signature is ECDSA P-256 with SHA-256 over SHA-256(authenticatorData ‖ clientDataHash).
    ///
    /// - Parameters:
    ///   - keyID: An attested key.
    ///   - clientDataHash: SHA-256 of the client data the app signs.
    ///   - fault: ``SoftwareAppleFault/reusedCounter`` (the previous counter again) or
    ///     ``SoftwareAppleFault/wrongAppID``.
    /// - Throws: ``SoftwareAppleError/Code/invalidKey`` for an unknown key, one not attested yet, or a counter at
    ///   its maximum; ``SoftwareAppleError/Code/invalidInput`` for an empty hash or a fault that does not apply.
    public func generateAssertion(
        _ keyID: KeyID,
        clientDataHash: [UInt8],
        fault: SoftwareAppleFault? = nil
    ) throws(SoftwareAppleError) -> [UInt8] {
        try Self.check(clientDataHash, fault, applyTo: .assertion)
        let (privateKey, counter) = try withKey(keyID) { key throws(SoftwareAppleError) in
            guard key.attested else { throw SoftwareAppleError(.invalidKey, "the key has not been attested") }
            if fault != .reusedCounter {
                guard key.counter < .max else { throw SoftwareAppleError(.invalidKey, "the counter is exhausted") }
                key.counter += 1
            }
            return (key.privateKey, key.counter)
        }
        let appID = fault == .wrongAppID ? try otherAppID() : configuration.appID
        let authData = AppAttestEncoder.assertion(
            rpIDHash: appID.rpIDHash, counter: counter,
            extensions: configuration.iOS27Extensions
                ? (configuration.bundleVersion, configuration.validationCategory) : nil)
        let nonce = Array(SHA256.hash(data: authData + clientDataHash))
        let signature = try SigningIdentity.signing("an assertion signature") {
            Array(try privateKey.signature(for: nonce).derRepresentation)
        }
        return AppAttestEncoder.assertionObject(signature: signature, authData: authData)
    }

    /// Refreshes the receipt kept for `keyID` through the software Apple (``SoftwareApple/refresh(_:riskMetric:fault:at:)``)
    /// and, unless a fault was built in, keeps the new one, as a server does after a receipt exchange.
    /// - Throws: ``SoftwareAppleError/Code/invalidKey`` for an unknown key or one without a receipt, then as
    ///   ``SoftwareApple/refresh(_:riskMetric:fault:at:)``.
    public func refreshReceipt(
        for keyID: KeyID,
        riskMetric: Int = 1,
        fault: SoftwareAppleFault? = nil,
        at time: Date = Date()
    ) throws(SoftwareAppleError) -> [UInt8] {
        guard let previous = receipt(for: keyID) else {
            throw SoftwareAppleError(.invalidKey, "the key has no receipt: attest it first")
        }
        let refreshed = try apple.refresh(previous, riskMetric: riskMetric, fault: fault, at: time)
        if fault == nil {
            try withKey(keyID) { key throws(SoftwareAppleError) in key.receipt = refreshed }
        }
        return refreshed
    }

    /// Builds an attestation object and its receipt for `publicKey`, with `fault` built in.
    private func attestation(
        of publicKey: P256.Signing.PublicKey,
        clientDataHash: [UInt8],
        fault: SoftwareAppleFault?,
        at time: Date
    ) throws(SoftwareAppleError) -> (object: [UInt8], receipt: [UInt8]) {
        let environment = fault == .wrongEnvironment ? configuration.environment.other : configuration.environment
        let appID = fault == .wrongAppID ? try otherAppID() : configuration.appID
        let authData = AppAttestEncoder.attestation(
            rpIDHash: appID.rpIDHash, counter: fault == .counterNotZero ? 1 : 0, environment: environment,
            publicKey: publicKey,
            coseKey: fault == .credentialKeyOfAnotherKey ? P256.Signing.PrivateKey().publicKey : nil,
            extensions: configuration.iOS27Extensions
                ? (configuration.bundleVersion, configuration.validationCategory) : nil)
        let boundHash =
            fault == .nonceOfAnotherChallenge
            ? Array(SHA256.hash(data: clientDataHash + Array("another challenge".utf8))) : clientDataHash
        let contents = CredentialCertificate.Contents(
            appID: appID.description, nonce: Array(SHA256.hash(data: authData + boundHash)),
            osVersion: configuration.osVersion,
            extendedKeyUsage: configuration.appleExtendedKeyUsage, issuedAt: time,
            validity: apple.leafValidity(issuedAt: time, fault: fault),
            keyAccessControl: try configuration.keyAccessControl.extensionValue())
        let (attestationCA, _) = try apple.hierarchies(stranger: fault == .strangerCA)
        let certificate = try CredentialCertificate.issue(for: publicKey, contents, by: attestationCA.intermediate)
        let receipt = try apple.attestReceipt(
            appID: appID,
            certificateDER: fault == .receiptForAnotherKey
                ? try apple.certificateForAnotherKey(than: certificate, appID: appID.description, at: time)
                : certificate,
            clientDataHash: fault == .receiptOfAnotherAttestation
                ? Array(SHA256.hash(data: clientDataHash + Array("another attestation".utf8))) : clientDataHash,
            environment: environment, at: time, stranger: fault == .strangerReceiptSigner)
        let object = AppAttestEncoder.attestationObject(
            certificates: [certificate, attestationCA.intermediate.der], receipt: receipt, authData: authData)
        return (object, receipt)
    }

    /// The App ID of the wrong-App-ID fault: the same team, the bundle identifier with `.other` appended.
    private func otherAppID() throws(SoftwareAppleError) -> AppID {
        do {
            return try AppID(teamID: configuration.appID.teamID, bundleID: configuration.appID.bundleID + ".other")
        } catch {
            throw SoftwareAppleError(.invalidInput, "no other App ID can be made from \(configuration.appID)")
        }
    }

    private static func check(
        _ clientDataHash: [UInt8], _ fault: SoftwareAppleFault?, applyTo target: SoftwareAppleFault.Target
    ) throws(SoftwareAppleError) {
        guard !clientDataHash.isEmpty else { throw SoftwareAppleError(.invalidInput, "the client data hash is empty") }
        if let fault, !fault.targets.contains(target) {
            throw SoftwareAppleError(.invalidInput, "\(fault) is not a fault of an \(target.rawValue)")
        }
    }
}

extension AppAttestEnvironment {
    /// The environment that is not this one.
    var other: AppAttestEnvironment { self == .production ? .development : .production }
}
