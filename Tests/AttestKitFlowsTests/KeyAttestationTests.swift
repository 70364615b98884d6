import AttestKit
import AttestKitFlows
import AttestKitStore
import AttestKitTesting
import AttestKitWire
import Crypto
import Foundation
import SwiftASN1
import Testing
@_spi(FixedExpiryValidationTime) import X509

/// Emulated key attestation without HTTP, with the software Apple and simulated devices: an attestation over the
/// key attestation client data registers the key with its app key; a swapped, different or malformed app key, a
/// replayed challenge and an attestation over the plain challenge are refused with their codes; the CA's
/// certificate verifies with swift-certificates and carries the app key.
@Suite("Key attestation")
struct KeyAttestationTests {
    /// The worked example's app key of docs/key-attestation.md (private scalar 0x01...0x20).
    static let exampleKey: P256.Signing.PrivateKey = {
        do {
            return try P256.Signing.PrivateKey(rawRepresentation: Array(1...32) as [UInt8])
        } catch {
            preconditionFailure("\(error)")
        }
    }()

    /// A device's attestation over the key attestation client data of a fresh challenge and `appKey`.
    static func attest(
        _ bench: FlowBench, _ device: FlowBench.Device, appKey: [UInt8]
    ) async throws -> (attestation: [UInt8], challengeID: ChallengeID) {
        let challenge = try await bench.issuer.issue(purpose: .attest)
        let binding = try KeyAttestationClientData(challengeId: challenge.id.string, appKey: appKey)
        return (try device.device.attestKey(device.keyID, clientDataHash: binding.clientDataHash), challenge.id)
    }

    static func appKey() -> [UInt8] { Array(P256.Signing.PrivateKey().publicKey.derRepresentation) }

    /// A bench, its key attestation flow, and a device whose key it registered with a fresh app key, by an
    /// attestation over the challenge `challengeID`.
    static func registered() async throws -> (
        bench: FlowBench, flow: KeyAttestation, device: FlowBench.Device, appKey: [UInt8], attestation: [UInt8],
        challengeID: ChallengeID
    ) {
        let bench = try FlowBench()
        let flow = KeyAttestation(registrar: bench.registrar())
        let device = bench.device()
        let appKey = Self.appKey()
        let (attestation, challengeID) = try await Self.attest(bench, device, appKey: appKey)
        _ = try await flow.register(
            keyID: device.keyID, attestation: attestation, challengeID: challengeID, appKey: appKey, now: Date())
        return (bench, flow, device, appKey, attestation, challengeID)
    }

    @Test func anAttestationOverTheClientDataRegistersTheKeyWithItsAppKey() async throws {
        let bench = try FlowBench()
        let device = bench.device()
        let appKey = Array(Self.exampleKey.publicKey.derRepresentation)
        let (attestation, challengeID) = try await Self.attest(bench, device, appKey: appKey)
        let flow = KeyAttestation(registrar: bench.registrar())
        var admitted: [AppID] = []
        let registered = try await flow.register(
            keyID: device.keyID, attestation: attestation, challengeID: challengeID, appKey: appKey, now: Date()
        ) { appID throws(FlowError) in admitted.append(appID) }
        #expect(admitted == [FlowBench.appID])
        #expect(registered.record.keyID == device.keyID && registered.record.counter == 0)
        #expect(registered.appKey.der == appKey && registered.record.appKey == registered.appKey)
        #expect(registered.certificate == nil)
        // The thumbprint of docs/key-attestation.md (computed independently with Python), the token kid's rule.
        #expect(registered.appKey.thumbprint == "6UoWwDCkLjV0J-pQG8c0THxbVhBcpR0AZDift1Yl5DM")
        #expect(registered.appKey.thumbprint == TokenKey(publicKey: Self.exampleKey.publicKey).kid)
        let stored = try #require(try await bench.store.key(device.keyID))
        #expect(stored.appKey?.der == appKey)

        let response = registered.response(policy: RiskPolicy())
        #expect(response.appKey == .init(thumbprint: "6UoWwDCkLjV0J-pQG8c0THxbVhBcpR0AZDift1Yl5DM"))
        #expect(KeyRecordResponse(stored, policy: RiskPolicy()).appKey?.thumbprint == registered.appKey.thumbprint)
        #expect(try await flow.requireBoundAppKey(appKey, of: device.keyID) == stored)
    }

    @Test func anAttestationForAnotherAppKeyOrThePlainChallengeIsRefused() async throws {
        let bench = try FlowBench()
        let flow = KeyAttestation(registrar: bench.registrar())
        // Made for one app key, sent with another: the nonce does not match.
        let device = bench.device()
        let (attestation, challengeID) = try await Self.attest(bench, device, appKey: Self.appKey())
        await #expect(throws: FlowError(.init("nonce_mismatch"), .refused, "")) {
            _ = try await flow.register(
                keyID: device.keyID, attestation: attestation, challengeID: challengeID, appKey: Self.appKey(),
                now: Date())
        }
        // An ordinary attestation (SHA-256 of the challenge bytes) is not a key attestation.
        let other = bench.device()
        let challenge = try await bench.issuer.issue(purpose: .attest)
        let plain = try other.device.attestKey(other.keyID, clientDataHash: Array(SHA256.hash(data: challenge.bytes)))
        let error = await #expect(throws: FlowError.self) {
            _ = try await flow.register(
                keyID: other.keyID, attestation: plain, challengeID: challenge.id, appKey: Self.appKey(), now: Date())
        }
        #expect(error?.code.rawValue == "nonce_mismatch" && error?.kind.httpStatus == 403)
        #expect(try await bench.store.key(device.keyID) == nil)
        #expect(try await bench.store.key(other.keyID) == nil)
    }

    /// An app key certificate introspects active while the CA issued it, it is valid and its key registered and
    /// bound; inactive once the key is revoked, from another CA, or past its notAfter.
    @Test func aCertificateIntrospectsActiveOnlyWhileItsKeyIsRegisteredAndBound() async throws {
        let (authority, _) = try Self.authority()
        let bench = try FlowBench()
        let flow = KeyAttestation(registrar: bench.registrar(), authority: authority)
        let device = bench.device()
        let appKey = Self.appKey()
        let (attestation, challengeID) = try await Self.attest(bench, device, appKey: appKey)
        let now = Date()
        let registered = try await flow.register(
            keyID: device.keyID, attestation: attestation, challengeID: challengeID, appKey: appKey, now: now)
        let certificate = try #require(registered.certificate)
        let live = try await flow.introspect(certificate: certificate, now: now)
        #expect(live.active && live.sub == Base64URL.encode(device.keyID.bytes))
        #expect(live.appKeyThumbprint == registered.appKey.thumbprint && live.appId == FlowBench.appID.description)
        let notAfter = try Certificate(derEncoded: certificate).notValidAfter
        #expect(try await flow.introspect(certificate: certificate, now: notAfter) == .inactive)
        let (impostor, _) = try Self.authority()
        let other = KeyAttestation(registrar: bench.registrar(), authority: impostor)
        #expect(try await other.introspect(certificate: certificate, now: now) == .inactive)
        #expect(
            try await KeyAttestation(registrar: bench.registrar()).introspect(certificate: certificate, now: now)
                == .inactive)
        #expect(try await flow.introspect(certificate: certificate.dropLast(), now: now) == .inactive)
        _ = try await bench.store.revokeKey(device.keyID, now: now)
        #expect(try await flow.introspect(certificate: certificate, now: now) == .inactive)
    }

    @Test func theChallengeIsConsumedOnce() async throws {
        let (_, flow, device, appKey, attestation, challengeID) = try await Self.registered()
        let replay = await #expect(throws: FlowError.self) {
            _ = try await flow.register(
                keyID: device.keyID, attestation: attestation, challengeID: challengeID, appKey: appKey, now: Date())
        }
        #expect(replay?.code.rawValue == "challenge_consumed" && replay?.kind.httpStatus == 409)
    }

    @Test func anotherAppKeyThanTheBoundOneIsRefused() async throws {
        let bench = try FlowBench()
        let flow = KeyAttestation(registrar: bench.registrar())
        let device = bench.device()
        // Later genuine attestations of the same key (the simulator attests a key once per device).
        let (twin, sameKeyTwin) = (try device.twin(), try device.twin())
        let appKey = Self.appKey()
        let (attestation, challengeID) = try await Self.attest(bench, device, appKey: appKey)
        _ = try await flow.register(
            keyID: device.keyID, attestation: attestation, challengeID: challengeID, appKey: appKey, now: Date())

        // Registering the key again, by an attestation that verifies: with another app key 403, with the same 409.
        let swapped = Self.appKey()
        let again = try await Self.attest(bench, twin, appKey: swapped)
        await #expect(throws: FlowError.appKeyMismatch) {
            _ = try await flow.register(
                keyID: device.keyID, attestation: again.attestation, challengeID: again.challengeID, appKey: swapped,
                now: Date())
        }
        #expect(
            FlowError.appKeyMismatch.kind.httpStatus == 403
                && FlowError.appKeyMismatch.code.rawValue == "app_key_mismatch")
        let same = try await Self.attest(bench, sameKeyTwin, appKey: appKey)
        let exists = await #expect(throws: FlowError.self) {
            _ = try await flow.register(
                keyID: device.keyID, attestation: same.attestation, challengeID: same.challengeID, appKey: appKey,
                now: Date())
        }
        #expect(exists?.code.rawValue == "key_exists")
        // Verify first, then tell: the first attestation replayed with another app key does not verify, and says
        // nothing about the key or the app key bound to it.
        let probe = try await bench.issuer.issue(purpose: .attest)
        let unverified = await #expect(throws: FlowError.self) {
            _ = try await flow.register(
                keyID: device.keyID, attestation: attestation, challengeID: probe.id, appKey: swapped, now: Date())
        }
        #expect(unverified?.code.rawValue == "nonce_mismatch")
        #expect(try await bench.store.key(device.keyID)?.appKey?.der == appKey)

        // Checking a presented app key later.
        await #expect(throws: FlowError.appKeyMismatch) {
            _ = try await flow.requireBoundAppKey(swapped, of: device.keyID)
        }
        let plain = try await bench.registeredDevice()
        await #expect(throws: FlowError.appKeyMismatch) {
            _ = try await flow.requireBoundAppKey(appKey, of: plain.keyID)
        }
        let unknown = await #expect(throws: FlowError.self) {
            _ = try await flow.requireBoundAppKey(appKey, of: bench.device().keyID)
        }
        #expect(unknown?.code.rawValue == "key_not_found")
        await #expect(throws: FlowError.appKeyMalformed) {
            _ = try await flow.requireBoundAppKey([0x30], of: device.keyID)
        }
    }

    @Test func malformedAppKeysAreRefusedBeforeTheChallengeIsUsed() async throws {
        let bench = try FlowBench()
        let flow = KeyAttestation(registrar: bench.registrar())
        let device = bench.device()
        let appKey = Self.appKey()
        let (attestation, challengeID) = try await Self.attest(bench, device, appKey: appKey)
        var malformed: [[UInt8]] = (0..<appKey.count).map { Array(appKey.prefix($0)) }
        malformed += [
            appKey + [0x00], Array(P256.Signing.PrivateKey().publicKey.compressedRepresentation),
            Array(P384.Signing.PrivateKey().publicKey.derRepresentation),
            Array(repeating: 0x30, count: KeyAttestationClientData.maximumAppKeyLength + 1),
        ]
        for key in malformed {
            await #expect(throws: FlowError.appKeyMalformed) {
                _ = try await flow.register(
                    keyID: device.keyID, attestation: attestation, challengeID: challengeID, appKey: key, now: Date())
            }
        }
        #expect(FlowError.appKeyMalformed.kind.httpStatus == 400)
        // None of them spent the challenge.
        let registered = try await flow.register(
            keyID: device.keyID, attestation: attestation, challengeID: challengeID, appKey: appKey, now: Date())
        #expect(registered.appKey.der == appKey)
    }

    @Test func aFailedKeyAttestationIsRecordedWithItsAppKeyAndReplaysToItsCode() async throws {
        let recorder = try RecordingTests.recorder()
        let bench = try FlowBench(recorder: recorder)
        let flow = KeyAttestation(registrar: bench.registrar())
        let device = bench.device()
        let appKey = Self.appKey()
        let (attestation, challengeID) = try await Self.attest(bench, device, appKey: appKey)
        // Sent with another app key: refused, recorded with the key that was sent.
        let sent = Self.appKey()
        await #expect(throws: FlowError.self) {
            _ = try await flow.register(
                keyID: device.keyID, attestation: attestation, challengeID: challengeID, appKey: sent, now: Date())
        }
        let result = try await RecordingTests.expectReplay(recorder, code: "nonce_mismatch")
        #expect(result.bundle.attestation?.appKey == Data(sent).base64EncodedString())
        // With the app key the attestation was made for, the same inputs verify offline.
        var bound = result.bundle
        bound.attestation?.appKey = Data(appKey).base64EncodedString()
        #expect(try await VerificationReplay.replay(bound).outcome == nil)
        // Without an app key, it replays as a plain attestation, which it is not.
        var plain = result.bundle
        plain.attestation?.appKey = nil
        #expect(try await VerificationReplay.replay(plain).outcome?.code == "nonce_mismatch")
    }

    // MARK: The CA

    /// A CA: a P-256 key and its self-signed certificate, valid from `notBefore` to `notAfter`.
    static func authority(
        key caKey: P256.Signing.PrivateKey = P256.Signing.PrivateKey(),
        notBefore: Date = Date(timeIntervalSinceNow: -3_600), notAfter: Date = Date(timeIntervalSinceNow: 86_400 * 365),
        isCA: Bool = true, keyUsage: KeyUsage? = KeyUsage(keyCertSign: true),
        validity: Duration = AppKeyAuthority.defaultValidity, rawSubjectKeyIdentifier: [UInt8]? = nil,
        withSubjectKeyIdentifier: Bool = true
    ) throws -> (AppKeyAuthority, Certificate) {
        let key = Certificate.PrivateKey(caKey)
        let name = try DistinguishedName {
            OrganizationName("Example")
            CommonName("Example app key CA")
        }
        let certificate = try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: key.publicKey,
            notValidBefore: notBefore, notValidAfter: notAfter, issuer: name, subject: name,
            extensions: try Certificate.Extensions {
                Critical(isCA ? BasicConstraints.isCertificateAuthority(maxPathLength: 0) : .notCertificateAuthority)
                if let keyUsage { Critical(keyUsage) }
                if let rawSubjectKeyIdentifier {
                    Certificate.Extension(
                        oid: .X509ExtensionID.subjectKeyIdentifier, critical: false,
                        value: ArraySlice(rawSubjectKeyIdentifier))
                } else if withSubjectKeyIdentifier {
                    SubjectKeyIdentifier(hash: key.publicKey)
                }
            },
            issuerPrivateKey: key)
        return (try AppKeyAuthority(certificate: certificate, privateKey: key, validity: validity), certificate)
    }

    @Test func theCertificateVerifiesAgainstTheCAAndCarriesTheAppKey() async throws {
        let bench = try FlowBench()
        let (authority, caCertificate) = try Self.authority(validity: .seconds(3_600))
        let flow = KeyAttestation(registrar: bench.registrar(), authority: authority)
        let device = bench.device()
        let appKey = Self.exampleKey.publicKey
        let der = Array(appKey.derRepresentation)
        let (attestation, challengeID) = try await Self.attest(bench, device, appKey: der)
        let now = Date()
        let registered = try await flow.register(
            keyID: device.keyID, attestation: attestation, challengeID: challengeID, appKey: der, now: now)
        let bytes = try #require(registered.certificate)
        let response = registered.response(policy: RiskPolicy())
        #expect(response.appKey?.certificate == Data(bytes).base64EncodedString())

        let certificate = try Certificate(derEncoded: bytes)
        #expect(certificate.publicKey == Certificate.PublicKey(appKey))
        #expect(P256.Signing.PublicKey(certificate.publicKey)?.rawRepresentation == appKey.rawRepresentation)
        #expect(certificate.issuer == caCertificate.subject)
        #expect(certificate.subject.description.contains("CN=\(Base64URL.encode(device.keyID.bytes))"))
        #expect(certificate.subject.description.contains("OU=\(FlowBench.appID)"))
        #expect(try certificate.extensions.basicConstraints == .notCertificateAuthority)
        #expect(try certificate.extensions.keyUsage?.digitalSignature == true)
        #expect(try certificate.extensions.keyUsage?.keyCertSign == false)
        #expect(
            try certificate.extensions.authorityKeyIdentifier?.keyIdentifier
                == caCertificate.extensions.subjectKeyIdentifier?.keyIdentifier)
        #expect(certificate.notValidBefore <= now && certificate.notValidBefore > now.addingTimeInterval(-62))
        #expect(abs(certificate.notValidAfter.timeIntervalSince(certificate.notValidBefore) - 3_660) < 1)

        for (time, valid) in [
            (now, true), (now.addingTimeInterval(3_000), true), (now.addingTimeInterval(3_700), false),
        ] {
            var verifier = Verifier(rootCertificates: CertificateStore([caCertificate])) {
                RFC5280Policy(fixedExpiryValidationTime: time)
            }
            let result = await verifier.validate(leaf: certificate, intermediates: CertificateStore())
            if case .validCertificate(let chain) = result {
                #expect(valid && Array(chain) == [certificate, caCertificate], "\(time)")
            } else {
                #expect(!valid, "\(time): \(result)")
            }
        }
        // Another CA does not vouch for it.
        let (_, stranger) = try Self.authority()
        var verifier = Verifier(rootCertificates: CertificateStore([stranger])) {
            RFC5280Policy(fixedExpiryValidationTime: now)
        }
        guard case .couldNotValidate = await verifier.validate(leaf: certificate, intermediates: CertificateStore())
        else {
            Issue.record("a certificate verified against a CA that did not issue it")
            return
        }
    }

    @Test func aCertificateNeverOutlivesItsCAAndSerialsDiffer() async throws {
        let caEnd = Date(timeIntervalSinceNow: 600)
        let (authority, _) = try Self.authority(notAfter: caEnd)
        let appKey = try AppKey(subjectPublicKeyInfo: Self.appKey())
        let keyID = try FlowBench().device().keyID
        var generator = SystemRandomNumberGenerator()
        let first = try Certificate(
            derEncoded: authority.issue(
                for: appKey, keyID: keyID, appID: FlowBench.appID, now: Date(), using: &generator))
        let second = try Certificate(
            derEncoded: authority.issue(
                for: appKey, keyID: keyID, appID: FlowBench.appID, now: Date(), using: &generator))
        #expect(abs(first.notValidAfter.timeIntervalSince(caEnd)) < 1)
        #expect(first.serialNumber != second.serialNumber)
        // Not valid yet, or expired: no certificate.
        for (notBefore, notAfter) in [
            (Date(timeIntervalSinceNow: 60), Date(timeIntervalSinceNow: 3_600)),
            (Date(timeIntervalSinceNow: -3_600), Date(timeIntervalSinceNow: -60)),
        ] {
            let (stale, _) = try Self.authority(notBefore: notBefore, notAfter: notAfter)
            #expect(throws: FlowError(.keyAttestationCAInvalid, .notConfigured, "")) {
                _ = try stale.issue(for: appKey, keyID: keyID, appID: FlowBench.appID, now: Date(), using: &generator)
            }
        }
    }

    @Test func aCAThatCannotIssueNowRefusesBeforeTheChallengeIsConsumedOrTheKeyStored() async throws {
        let bench = try FlowBench()
        let device = bench.device()
        let appKey = Self.appKey()
        let (attestation, challengeID) = try await Self.attest(bench, device, appKey: appKey)
        let (expired, _) = try Self.authority(
            notBefore: Date(timeIntervalSinceNow: -7_200), notAfter: Date(timeIntervalSinceNow: -60))
        let refusing = KeyAttestation(registrar: bench.registrar(), authority: expired)
        await #expect(throws: FlowError(.keyAttestationCAInvalid, .notConfigured, "")) {
            _ = try await refusing.register(
                keyID: device.keyID, attestation: attestation, challengeID: challengeID, appKey: appKey, now: Date())
        }
        #expect(try await bench.store.key(device.keyID) == nil)
        // Once the CA is replaced, the same attestation over the same challenge registers the key with a certificate.
        let (valid, _) = try Self.authority()
        let registered = try await KeyAttestation(registrar: bench.registrar(), authority: valid).register(
            keyID: device.keyID, attestation: attestation, challengeID: challengeID, appKey: appKey, now: Date())
        #expect(registered.certificate != nil)
    }

    @Test func aCAWhoseKeyDoesNotMatchOrThatIsNotACAIsRefused() throws {
        let (authority, certificate) = try Self.authority()
        let otherKey = Certificate.PrivateKey(P256.Signing.PrivateKey())
        let invalid = FlowError(.keyAttestationCAInvalid, .notConfigured, "")
        #expect(throws: invalid) { try AppKeyAuthority(certificate: certificate, privateKey: otherKey) }
        #expect(throws: invalid) { try Self.authority(isCA: false) }
        // A subjectKeyIdentifier that does not parse (a NULL): every issue would fail after its key was stored.
        #expect(throws: invalid) { try Self.authority(rawSubjectKeyIdentifier: [0x05, 0x00]) }
        // None at all is fine: the certificates it issues then name no authority key identifier.
        let (withoutIdentifier, _) = try Self.authority(withSubjectKeyIdentifier: false)
        var generator = SystemRandomNumberGenerator()
        let issued = try withoutIdentifier.issue(
            for: try AppKey(subjectPublicKeyInfo: Self.appKey()), keyID: try FlowBench().device().keyID,
            appID: FlowBench.appID, now: Date(), using: &generator)
        #expect(!issued.isEmpty)
        for validity: Duration in [.seconds(299), .seconds(2_592_001)] {
            #expect(throws: invalid) { try Self.authority(validity: validity) }
        }
        #expect(invalid.kind.httpStatus == 503)
        #expect(authority.validity == AppKeyAuthority.defaultValidity)
        // From PEM: the pair parses; another key, or text that is not PEM, is refused.
        let caKey = P256.Signing.PrivateKey()
        let (_, pemCertificate) = try Self.authority(key: caKey)
        let pem = try pemCertificate.serializeAsPEM().pemString
        let parsed = try AppKeyAuthority(certificatePEM: pem, privateKeyPEM: caKey.pemRepresentation)
        #expect(parsed.certificate == pemCertificate)
        let stranger = P256.Signing.PrivateKey().pemRepresentation
        #expect(throws: invalid) { try AppKeyAuthority(certificatePEM: pem, privateKeyPEM: stranger) }
        #expect(throws: invalid) {
            try AppKeyAuthority(certificatePEM: "not pem", privateKeyPEM: caKey.pemRepresentation)
        }
        #expect(throws: invalid) { try AppKeyAuthority(certificatePEM: pem, privateKeyPEM: "not pem") }
    }
}
