import AttestKit
import AttestKitFlows
import AttestKitServer
import AttestKitStore
import AttestKitWire
import Crypto
import Foundation
import SwiftASN1
import Testing
import X509

/// Emulated key attestation through the server's router (SQLite and PostgreSQL): `POST /v1/key-attestations`
/// registers the key with its app key and answers its thumbprint and a certificate of the configured CA;
/// `GET /v1/keys/{id}` shows the thumbprint; a swapped, different or malformed app key and a replayed challenge are
/// refused with their codes.
@Suite("Key attestation route")
struct KeyAttestationRouteTests {
    /// A CA key and its self-signed certificate (a CA unless `isCA` is false).
    static func authority(
        key caKey: P256.Signing.PrivateKey = P256.Signing.PrivateKey(), isCA: Bool = true
    ) throws -> (AppKeyAuthority?, Certificate) {
        let key = Certificate.PrivateKey(caKey)
        let name = try DistinguishedName { CommonName("Test app key CA") }
        let certificate = try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: key.publicKey,
            notValidBefore: Date(timeIntervalSinceNow: -3_600), notValidAfter: Date(timeIntervalSinceNow: 86_400 * 30),
            issuer: name, subject: name,
            extensions: try Certificate.Extensions {
                Critical(isCA ? BasicConstraints.isCertificateAuthority(maxPathLength: 0) : .notCertificateAuthority)
                Critical(KeyUsage(keyCertSign: true))
                SubjectKeyIdentifier(hash: key.publicKey)
            },
            issuerPrivateKey: key)
        return (isCA ? try AppKeyAuthority(certificate: certificate, privateKey: key) : nil, certificate)
    }

    /// A fresh challenge, the device's attestation over the key attestation client data of `boundKey`, and the
    /// request body naming `sentKey`; the attestation too.
    static func body(
        _ harness: ServerHarness, _ device: TestDevice, boundKey: [UInt8], sentKey: [UInt8]? = nil
    ) async throws -> (body: JSONValue, attestation: [UInt8]) {
        let challenge = try await harness.challenge()
        let clientData = try KeyAttestationClientData(challengeId: challenge.id, appKey: boundKey)
        let attestation = try device.attestation(for: challenge, clientDataHash: clientData.clientDataHash)
        let body = device.attestationBody(attestation, challengeID: challenge.id)
        return (body.setting("appKey", .base64(sentKey ?? boundKey)), attestation)
    }

    @Test("accepted, registered with the app key, certified by the CA, shown by GET", arguments: await StoreKind.all())
    func accepted(kind: StoreKind) async throws {
        let (authority, caCertificate) = try Self.authority()
        var options = ServerHarness.Options()
        options.keyAttestationAuthority = authority
        try await ServerHarness.with(kind, options) { harness in
            let device = TestDevice(harness)
            // Two genuine later attestations of the same key (the simulator attests a key once per device).
            let (twin, sameKeyTwin) = (try device.twin(), try device.twin())
            let appKey = P256.Signing.PrivateKey().publicKey
            let (body, attestation) = try await Self.body(harness, device, boundKey: Array(appKey.derRepresentation))
            let answer = try await harness.post("/v1/key-attestations", body)
            try #require(answer.status == 201, "\(answer)")
            #expect(answer.string("keyId") == device.keyID.base64 && answer.int("counter") == 0)
            #expect(answer.string("appId") == Fixture.appID.description)
            let thumbprint = TokenKey(publicKey: appKey).kid
            #expect(answer.string("appKey.thumbprint") == thumbprint)
            let certificateText = try #require(answer.string("appKey.certificate"))
            let certificate = try Certificate(derEncoded: Array(try #require(Data(base64Encoded: certificateText))))
            #expect(certificate.publicKey == Certificate.PublicKey(appKey))
            #expect(certificate.subject.description.contains(Base64URL.encode(device.keyID.bytes)))
            var verifier = Verifier(rootCertificates: CertificateStore([caCertificate])) {
                RFC5280Policy()
            }
            let result = await verifier.validate(leaf: certificate, intermediates: CertificateStore())
            guard case .validCertificate = result else {
                Issue.record("the app key certificate does not verify against the CA: \(result)")
                return
            }

            // The same attestation again: the challenge is spent.
            let replay = try await harness.post("/v1/key-attestations", body)
            #expect(replay.status == 409 && replay.errorCode == "challenge_consumed", "\(replay)")

            // The operator's view shows the thumbprint, never a certificate.
            let record = try await harness.get("/v1/keys/\(device.keyID.pathComponent)", headers: ServerHarness.admin)
            #expect(record.status == 200 && record.string("appKey.thumbprint") == thumbprint, "\(record)")
            #expect(!record.has("appKey.certificate"))

            // The key registered again, by an attestation that verifies: with another app key 403; with the same 409.
            let otherAppKey = Array(P256.Signing.PrivateKey().publicKey.derRepresentation)
            for (attester, sent, status, code) in [
                (twin, otherAppKey, 403, "app_key_mismatch"),
                (sameKeyTwin, Array(appKey.derRepresentation), 409, "key_exists"),
            ] {
                let (again, _) = try await Self.body(harness, attester, boundKey: sent)
                let answer = try await harness.post("/v1/key-attestations", again)
                #expect(answer.status == status && answer.errorCode == code, "\(answer)")
            }
            // Verify first, then tell: the stored attestation replayed with another app key (or garbage) for the
            // registered key does not verify, and gets its verification error, never which app key is bound.
            for (bytes, code) in [(attestation, "nonce_mismatch"), (Array("garbage".utf8), "cbor_malformed")] {
                let again = try await harness.challenge()
                let answer = try await harness.post(
                    "/v1/key-attestations",
                    device.attestationBody(bytes, challengeID: again.id).setting("appKey", .base64(otherAppKey)))
                #expect(answer.errorCode == code && answer.status != 409, "\(answer)")
            }
        }
    }

    /// Revocation reaches app key certificates: introspection (`tokenTypeHint` `app_key_certificate`) answers
    /// active only for a certificate this CA issued, within its validity, whose key is still registered, active and
    /// bound to it; `{"active": false}` once the key is revoked, past notAfter, from another CA, or garbage.
    @Test(
        "certificate introspection: active while issued, valid and bound; revoked, expired, forged inactive",
        arguments: await StoreKind.all())
    func certificateIntrospection(kind: StoreKind) async throws {
        let (authority, _) = try Self.authority()
        var options = ServerHarness.Options()
        options.keyAttestationAuthority = authority
        try await ServerHarness.with(kind, options) { harness in
            func introspect(_ text: String) async throws -> HTTPResult {
                try await harness.post(
                    "/v1/tokens/introspect",
                    ["token": .string(text), "tokenTypeHint": .string("app_key_certificate")])
            }
            func certify(_ device: TestDevice, _ appKey: P256.Signing.PublicKey) async throws -> String {
                let (body, _) = try await Self.body(harness, device, boundKey: Array(appKey.derRepresentation))
                let answer = try await harness.post("/v1/key-attestations", body)
                try #require(answer.status == 201, "\(answer)")
                return try #require(answer.string("appKey.certificate"))
            }
            let inactive = #"{"active":false}"#
            let device = TestDevice(harness)
            let appKey = P256.Signing.PrivateKey().publicKey
            let certificate = try await certify(device, appKey)
            let live = try await introspect(certificate)
            #expect(live.status == 200 && live.bool("active") == true, "\(live)")
            #expect(live.string("tokenType") == "app_key_certificate" && live.string("sub") == device.keyID.base64URL)
            #expect(live.string("appKeyThumbprint") == TokenKey(publicKey: appKey).kid)
            #expect(live.string("appId") == Fixture.appID.description && live.has("exp") && live.has("nbf"))

            // Another CA of the same name, the same key id and app key: its signature is not this CA's.
            let (impostor, _) = try Self.authority()
            var generator = SystemRandomNumberGenerator()
            let forged = try #require(impostor).issue(
                for: try AppKey(subjectPublicKeyInfo: appKey.derRepresentation), keyID: device.keyID,
                appID: Fixture.appID, now: harness.clock.now(), using: &generator)
            for text in [
                Data(forged).base64EncodedString(), "not base64!", Data([0x30, 0x03]).base64EncodedString(), "",
            ] {
                let answer = try await introspect(text)
                #expect(answer.status == 200 && answer.text == inactive, "\(answer)")
            }

            // Revoked: the certificate still verifies against the CA offline, introspection says inactive.
            _ = try await harness.post(
                "/v1/keys/\(device.keyID.pathComponent)/revoke", .raw(""), headers: ServerHarness.admin)
            let revoked = try await introspect(certificate)
            #expect(revoked.status == 200 && revoked.text == inactive, "\(revoked)")

            // Expired: another key's certificate, past its notAfter (one hour by default).
            let other = TestDevice(harness)
            let expiring = try await certify(other, P256.Signing.PrivateKey().publicKey)
            #expect(try await introspect(expiring).bool("active") == true)
            harness.clock.advance(by: 3_601)
            let expired = try await introspect(expiring)
            #expect(expired.status == 200 && expired.text == inactive, "\(expired)")

            // Backend only.
            let app = try await harness.post(
                "/v1/tokens/introspect",
                ["token": .string(expiring), "tokenTypeHint": .string("app_key_certificate")],
                headers: [("Authorization", "Bearer app")])
            #expect(app.status == 401 && app.errorCode == "backend_unauthorized", "\(app)")
        }
    }

    @Test("a swapped, malformed or missing app key is refused", arguments: await StoreKind.all())
    func refused(kind: StoreKind) async throws {
        try await ServerHarness.with(kind) { harness in
            let device = TestDevice(harness)
            let appKey = Array(P256.Signing.PrivateKey().publicKey.derRepresentation)
            // Made for one app key, sent with another: the client data differs, so does the nonce.
            let (swapped, _) = try await Self.body(
                harness, device, boundKey: appKey, sentKey: Array(P256.Signing.PrivateKey().publicKey.derRepresentation)
            )
            let answer = try await harness.post("/v1/key-attestations", swapped)
            #expect(answer.status == 403 && answer.errorCode == "nonce_mismatch", "\(answer)")

            let other = TestDevice(harness)
            let (base, _) = try await Self.body(harness, other, boundKey: appKey)
            let cases: [(JSONValue?, Int, String)] = [
                (.base64(appKey.dropLast()), 400, "app_key_malformed"),
                (.base64(appKey + [0]), 400, "app_key_malformed"),
                (.base64(P384.Signing.PrivateKey().publicKey.derRepresentation), 400, "app_key_malformed"),
                (.base64(P256.Signing.PrivateKey().publicKey.compressedRepresentation), 400, "app_key_malformed"),
                (.string("not base64!"), 400, "invalid_field"),
                (.base64([UInt8](repeating: 0x30, count: 2_000)), 400, "invalid_field"),
                (.null, 400, "invalid_json"),
                (nil, 400, "invalid_json"),
            ]
            for (appKeyValue, status, code) in cases {
                let refused = try await harness.post("/v1/key-attestations", base.setting("appKey", appKeyValue))
                #expect(refused.status == status && refused.errorCode == code, "\(code): \(refused)")
            }
            let keys = try await harness.get("/v1/keys/\(other.keyID.pathComponent)", headers: ServerHarness.admin)
            #expect(keys.status == 404, "\(keys)")
            // None of the refusals spent the challenge: the well-formed request still registers the key.
            let accepted = try await harness.post("/v1/key-attestations", base)
            #expect(accepted.status == 201 && accepted.string("appKey.thumbprint") != nil, "\(accepted)")
            #expect(!accepted.has("appKey.certificate"))
        }
    }
}

@Suite("Key attestation CA in the configuration")
struct KeyAttestationConfigurationTests {
    @Test("the CA read from PEM files with a bounded validity; a key of another certificate, or a non-CA, refused")
    func authority() async throws {
        let caKey = P256.Signing.PrivateKey()
        let (_, certificate) = try KeyAttestationRouteTests.authority(key: caKey)
        let certificateFile = try TemporaryFile(
            contents: try certificate.serializeAsPEM().pemString, extension: "pem")
        let keyFile = try TemporaryFile(contents: caKey.pemRepresentation, extension: "pem")
        let environment = [
            "ATTESTKIT_KEY_ATTESTATION_CA_CERTIFICATE_FILE": certificateFile.path,
            "ATTESTKIT_KEY_ATTESTATION_CA_KEY_FILE": keyFile.path,
        ]
        let loaded = try #require(
            try await ServerConfigurationSource.load(environment: environment).keyAttestationAuthority)
        #expect(loaded.certificate == certificate && loaded.validity == .seconds(3_600))
        let shorter = try await ServerConfigurationSource.load(
            environment: environment.merging(["ATTESTKIT_KEY_ATTESTATION_CERTIFICATE_VALIDITY": "600"]) { $1 })
        #expect(shorter.keyAttestationAuthority?.validity == .seconds(600))
        #expect(try await ServerConfigurationSource.load(environment: [:]).keyAttestationAuthority == nil)

        let otherKey = try TemporaryFile(contents: P256.Signing.PrivateKey().pemRepresentation, extension: "pem")
        let caKeyOfNonCA = P256.Signing.PrivateKey()
        let (_, notCA) = try KeyAttestationRouteTests.authority(key: caKeyOfNonCA, isCA: false)
        let notCAFile = try TemporaryFile(contents: try notCA.serializeAsPEM().pemString, extension: "pem")
        let notCAKey = try TemporaryFile(contents: caKeyOfNonCA.pemRepresentation, extension: "pem")
        let notPEM = try TemporaryFile(contents: "-----BEGIN PRIVATE KEY-----\nAAAA\n", extension: "pem")
        let certificateKey = "ATTESTKIT_KEY_ATTESTATION_CA_CERTIFICATE_FILE"
        let keyKey = "ATTESTKIT_KEY_ATTESTATION_CA_KEY_FILE"
        for (change, refusedKey) in [
            ([keyKey: otherKey.path], "key-attestation.ca-key-file"),
            ([certificateKey: notCAFile.path, keyKey: notCAKey.path], "key-attestation.ca-certificate-file"),
            ([keyKey: notPEM.path], "key-attestation.ca-key-file"),
            ([certificateKey: notPEM.path], "key-attestation.ca-certificate-file"),
            ([keyKey: "/nonexistent/ca-key.pem"], "key-attestation.ca-key-file"),
            (["ATTESTKIT_KEY_ATTESTATION_CERTIFICATE_VALIDITY": "299"], "key-attestation.certificate-validity"),
            (["ATTESTKIT_KEY_ATTESTATION_CERTIFICATE_VALIDITY": "2592001"], "key-attestation.certificate-validity"),
            (["ATTESTKIT_KEY_ATTESTATION_CERTIFICATE_VALIDITY": "600.5"], "key-attestation.certificate-validity"),
        ] {
            let error = await #expect(throws: ServerConfigurationError.self) {
                try await ServerConfigurationSource.load(environment: environment.merging(change) { $1 })
            }
            #expect(error?.key == refusedKey, "\(change)")
        }
        for alone in [[certificateKey: certificateFile.path], [keyKey: keyFile.path]] {
            let error = await #expect(throws: ServerConfigurationError.self) {
                try await ServerConfigurationSource.load(environment: alone)
            }
            #expect(error?.key == "key-attestation.ca-certificate-file")
        }
        let stray = await #expect(throws: ServerConfigurationError.self) {
            try await ServerConfigurationSource.load(
                environment: ["ATTESTKIT_KEY_ATTESTATION_CERTIFICATE_VALIDITY": "600"])
        }
        #expect(stray?.key == "key-attestation.certificate-validity")
    }
}
