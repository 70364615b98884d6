import AttestKit
import AttestKitTesting
import Crypto
import Foundation
import SwiftASN1
import Testing
import X509

/// The CA hierarchies and the credential certificate have Apple's shape (docs/apple-formats.md §2 and §4).
@Suite struct SoftwareAppleTests {
    let apple = Fixture.apple

    @Test func attestationHierarchyIsShapedLikeApples() throws {
        let root = apple.attestationRoot
        #expect(P384.Signing.PublicKey(root.publicKey) != nil)
        #expect(root.issuer == root.subject)
        #expect(root.signatureAlgorithm == .ecdsaWithSHA384)
        #expect(try root.extensions.basicConstraints == .isCertificateAuthority(maxPathLength: nil))
        #expect(root.extensions[oid: .X509ExtensionID.basicConstraints]?.critical == true)
        #expect(root.extensions[oid: .X509ExtensionID.keyUsage]?.critical == true)

        let intermediate = apple.attestationIntermediate
        #expect(P384.Signing.PublicKey(intermediate.publicKey) != nil)
        #expect(intermediate.issuer == root.subject)
        #expect(intermediate.signatureAlgorithm == .ecdsaWithSHA384)
        #expect(try intermediate.extensions.basicConstraints == .isCertificateAuthority(maxPathLength: 0))
        #expect(intermediate.extensions[oid: .X509ExtensionID.basicConstraints]?.critical == true)
        #expect(try intermediate.extensions.keyUsage == KeyUsage(keyCertSign: true, cRLSign: true))
    }

    @Test func receiptHierarchyIsShapedLikeApples() throws {
        #expect(P384.Signing.PublicKey(apple.receiptRoot.publicKey) != nil)
        #expect(apple.receiptRoot.signatureAlgorithm == .ecdsaWithSHA384)
        #expect(P256.Signing.PublicKey(apple.receiptIntermediate.publicKey) != nil)
        #expect(apple.receiptIntermediate.issuer == apple.receiptRoot.subject)
        #expect(apple.receiptIntermediate.signatureAlgorithm == .ecdsaWithSHA384)
        #expect(P256.Signing.PublicKey(apple.receiptSigner.publicKey) != nil)
        #expect(apple.receiptSigner.issuer == apple.receiptIntermediate.subject)
        #expect(apple.receiptSigner.signatureAlgorithm == .ecdsaWithSHA256)
        #expect(try apple.receiptSigner.extensions.basicConstraints == .notCertificateAuthority)
        #expect(try apple.receiptSigner.extensions.keyUsage == KeyUsage(digitalSignature: true))
    }

    @Test func credentialCertificateIsShapedLikeApples() throws {
        let (device, keyID, object) = try Fixture.attested()
        let leaf = try Certificate(derEncoded: try AttestationObject(bytes: object).certificates[0])
        let publicKey = try #require(P256.Signing.PublicKey(leaf.publicKey))
        #expect(publicKey.x963Representation == device.publicKey(for: keyID)?.x963Representation)
        #expect(leaf.signatureAlgorithm == .ecdsaWithSHA256)
        #expect(leaf.issuer == apple.attestationIntermediate.subject)
        #expect(leaf.subject.description.contains("CN=\(keyID.bytes.map { String(format: "%02x", $0) }.joined())"))
        #expect(leaf.subject.description.contains("OU=AAA Certification"))
        #expect(leaf.serialNumber == Certificate.SerialNumber(UInt64(Fixture.time.timeIntervalSince1970 * 1000)))
        #expect(leaf.notValidBefore == Fixture.time.addingTimeInterval(-86_400))
        #expect(leaf.notValidAfter == Fixture.time.addingTimeInterval(2 * 86_400))

        #expect(leaf.extensions[oid: .X509ExtensionID.basicConstraints]?.critical == true)
        #expect(try leaf.extensions.basicConstraints == .notCertificateAuthority)
        #expect(leaf.extensions[oid: .X509ExtensionID.keyUsage]?.critical == true)
        #expect(
            try leaf.extensions.keyUsage
                == KeyUsage(digitalSignature: true, nonRepudiation: true, keyEncipherment: true, dataEncipherment: true))
        #expect(leaf.extensions[oid: .X509ExtensionID.extendedKeyUsage] == nil)

        let nonce = try #require(leaf.extensions[oid: AppAttestNonceExtension.oid])
        #expect(!nonce.critical)
        #expect(Array(nonce.value.prefix(6)) == [0x30, 0x24, 0xA1, 0x22, 0x04, 0x20])
        #expect(nonce.value.count == 38)
        let authData = try AttestationObject(bytes: object).authenticatorData.bytes
        #expect(Array(nonce.value.dropFirst(6)) == Array(SHA256.hash(data: authData + Fixture.clientDataHash)))
        #expect(try AppAttestDeviceExtension(certificate: leaf)?.osVersion == "18.5")
        let appExtension = try #require(leaf.extensions[oid: [1, 2, 840, 113_635, 100, 8, 5]])
        #expect(Array(appExtension.value).firstRange(of: Array(Fixture.appID.description.utf8)) != nil)
    }

    @Test func iOS27CredentialCertificateCarriesThe2026ExtendedKeyUsage() throws {
        let (_, _, object) = try Fixture.attested(iOS27: true)
        let leaf = try Certificate(derEncoded: try AttestationObject(bytes: object).certificates[0])
        let usage = try #require(try leaf.extensions.extendedKeyUsage)
        #expect(Array(usage) == [ExtendedKeyUsage.Usage(oid: [1, 2, 840, 113_635, 100, 4, 24])])
        #expect(try AppAttestDeviceExtension(certificate: leaf)?.osVersion == "27.0")
    }

    @Test func trustIsExplicitAndNeverApples() throws {
        #expect(!apple.trustAnchors.isApple)
        #expect(try TrustAnchor(pem: apple.attestationRootPEM) == apple.trustAnchors.attestation)
        #expect(try TrustAnchor(pem: apple.receiptRootPEM) == apple.trustAnchors.receipt)
        #expect(apple.attestationRoot.subject.description.contains("AttestKit Testing (not Apple)"))
        #expect(!apple.description.contains("PRIVATE"))
        // A default configuration trusts Apple's pinned roots, not the software Apple.
        let configuration = try AttestationVerifier.Configuration(appIDs: [Fixture.appID], environments: .both)
        #expect(configuration.trustAnchors.isApple)
    }

    @Test func aSeedGivesTheSameKeys() throws {
        let again = try SoftwareApple(seed: Fixture.seed, at: Fixture.time)
        #expect(again.attestationRoot.publicKey == apple.attestationRoot.publicKey)
        #expect(again.receiptSigner.publicKey == apple.receiptSigner.publicKey)
        let other = try SoftwareApple(seed: Array("another seed".utf8), at: Fixture.time)
        #expect(other.attestationRoot.publicKey != apple.attestationRoot.publicKey)
        #expect(other.receiptRoot.publicKey != apple.receiptRoot.publicKey)
    }

    @Test func leafValidityIsConfigurable() throws {
        let shortLived = try SoftwareApple(
            seed: Fixture.seed, configuration: .init(leafValidityBefore: 60, leafValidityAfter: 3_600), at: Fixture.time)
        let device = SimulatedDevice(
            apple: shortLived, configuration: .init(appID: Fixture.appID, environment: .production))
        let keyID = device.generateKey()
        let object = try device.attestKey(keyID, clientDataHash: Fixture.clientDataHash, at: Fixture.time)
        let leaf = try Certificate(derEncoded: try AttestationObject(bytes: object).certificates[0])
        #expect(leaf.notValidBefore == Fixture.time.addingTimeInterval(-60))
        #expect(leaf.notValidAfter == Fixture.time.addingTimeInterval(3_600))
    }
}
