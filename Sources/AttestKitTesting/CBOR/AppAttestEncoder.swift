import AttestKit
import Crypto

/// Writes what a device returns, in App Attest's layouts (docs/apple-formats.md §1 and §3): authenticator data,
/// attestation and assertion objects.
enum AppAttestEncoder {
    /// The flags Apple writes on attestations and assertions alike: AT (0x40) only.
    static let flags: UInt8 = 0x40

    /// `rpIdHash ‖ flags ‖ signCount`: the 37-byte header, which is all of an assertion's authenticator data.
    static func header(rpIDHash: [UInt8], counter: UInt32) -> [UInt8] {
        rpIDHash + [flags] + (0..<4).reversed().map { UInt8(truncatingIfNeeded: counter >> (8 * UInt32($0))) }
    }

    /// Attestation authenticator data: header, AAGUID, credential id length (32), credential id (the key
    /// identifier), the COSE key `{1: 2, 3: -7, -1: 1, -2: x, -3: y}` (of `coseKey`, the same key unless a fault
    /// names another) and, for iOS 27, the extension map.
    static func attestation(
        rpIDHash: [UInt8],
        counter: UInt32,
        environment: AppAttestEnvironment,
        publicKey: P256.Signing.PublicKey,
        coseKey: P256.Signing.PublicKey? = nil,
        extensions: (bundleVersion: String, validationCategory: UInt32)?
    ) -> [UInt8] {
        let keyID = KeyID(publicKey: publicKey).bytes
        let point = Array((coseKey ?? publicKey).rawRepresentation)
        var cose = CBORWriter()
        cose.mapHeader(count: 5)
        cose.integer(1)
        cose.integer(2)
        cose.integer(3)
        cose.integer(-7)
        cose.integer(-1)
        cose.integer(1)
        cose.integer(-2)
        cose.byteString(point.prefix(32))
        cose.integer(-3)
        cose.byteString(point.suffix(32))
        var bytes = header(rpIDHash: rpIDHash, counter: counter) + environment.aaguid
        bytes += [UInt8(keyID.count >> 8), UInt8(keyID.count & 0xFF)] + keyID + cose.bytes
        if let extensions { bytes += extensionMap(extensions) }
        return bytes
    }

    /// Assertion authenticator data: the header and, for iOS 27, the extension map, as in attestations.
    static func assertion(
        rpIDHash: [UInt8], counter: UInt32, extensions: (bundleVersion: String, validationCategory: UInt32)?
    ) -> [UInt8] {
        header(rpIDHash: rpIDHash, counter: counter) + (extensions.map(extensionMap) ?? [])
    }

    /// The iOS 27 extension map `{"apple_bundle_version_01": text, "apple_validation_category_01": 4 bytes}`, the
    /// category as 4 little-endian bytes (Apple's 2026 sample), the flags left as they are (ED clear, as Apple).
    static func extensionMap(_ extensions: (bundleVersion: String, validationCategory: UInt32)) -> [UInt8] {
        let category = (0..<4).map { UInt8(truncatingIfNeeded: extensions.validationCategory >> (8 * UInt32($0))) }
        var map = CBORWriter()
        map.mapHeader(count: 2)
        map.text("apple_bundle_version_01")
        map.text(extensions.bundleVersion)
        map.text("apple_validation_category_01")
        map.byteString(category)
        return map.bytes
    }

    /// The attestation object `{"fmt": "apple-appattest", "attStmt": {"x5c": […], "receipt": …}, "authData": …}`,
    /// keys in Apple's order; without the `receipt` key when `receipt` is `nil` (Apple never does that).
    static func attestationObject(certificates: [[UInt8]], receipt: [UInt8]?, authData: [UInt8]) -> [UInt8] {
        var writer = CBORWriter()
        writer.mapHeader(count: 3)
        writer.text("fmt")
        writer.text("apple-appattest")
        writer.text("attStmt")
        writer.mapHeader(count: receipt == nil ? 1 : 2)
        writer.text("x5c")
        writer.arrayHeader(count: certificates.count)
        for certificate in certificates { writer.byteString(certificate) }
        if let receipt {
            writer.text("receipt")
            writer.byteString(receipt)
        }
        writer.text("authData")
        writer.byteString(authData)
        return writer.bytes
    }

    /// The assertion object `{"signature": …, "authenticatorData": …}`, keys in Apple's order.
    static func assertionObject(signature: [UInt8], authData: [UInt8]) -> [UInt8] {
        var writer = CBORWriter()
        writer.mapHeader(count: 2)
        writer.text("signature")
        writer.byteString(signature)
        writer.text("authenticatorData")
        writer.byteString(authData)
        return writer.bytes
    }
}
