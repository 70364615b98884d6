/// The authenticator data of an App Attest attestation or assertion.
///
/// Both begin with a 37-byte header: `rpIdHash (32) ‖ flags (1) ‖ signCount (u32 big-endian)`.
/// An attestation continues with the attested credential data (AAGUID, credential id, COSE key);
/// from iOS 27 either kind may end with one CBOR extension map (see ``AppleAuthenticatorExtensions``).
///
/// Which layout applies is chosen by the initializer, never by the flags: real assertions carry
/// the AT flag (0x40) with no credential data, and iOS 27 appends extensions with the ED flag
/// (0x80) clear. ``flags`` reports the byte as received.
///
/// Parsing checks structure only. The verifier compares ``rpIDHash``, ``signCount`` and the
/// credential against its expectations, and hashes ``bytes`` exactly as received.
public struct AuthenticatorData: Sendable, Hashable {
    /// The flags byte at offset 32.
    public struct Flags: OptionSet, Sendable, Hashable {
        /// The raw flags byte.
        public let rawValue: UInt8

        /// Creates flags from the raw byte.
        public init(rawValue: UInt8) { self.rawValue = rawValue }

        /// UP (0x01): the user was present.
        public static let userPresent = Flags(rawValue: 0x01)
        /// UV (0x04): the user was verified.
        public static let userVerified = Flags(rawValue: 0x04)
        /// AT (0x40): attested credential data is included. Apple also sets it on assertions, which have none.
        public static let attestedCredentialData = Flags(rawValue: 0x40)
        /// ED (0x80): extension data is included. iOS 27 appends extensions without setting it.
        public static let extensionData = Flags(rawValue: 0x80)
    }

    /// The authenticator data exactly as received; the nonce covers all of it.
    public let bytes: [UInt8]
    /// The flags byte.
    public let flags: Flags
    /// The signature counter (big-endian at offset 33): 0 in an attestation, increasing in assertions.
    public let signCount: UInt32
    /// The attested credential data; present in attestations, `nil` in assertions.
    public let attestedCredential: AttestedCredentialData?
    /// The trailing iOS 27+ extension map, or `nil` when absent.
    public let extensions: AppleAuthenticatorExtensions?

    /// SHA-256 of the App ID (`TEAMID.bundleID`): the first 32 bytes.
    public var rpIDHash: ArraySlice<UInt8> { bytes[0..<Self.rpIDHashLength] }

    /// The largest authenticator data accepted. Real ones are 37 (assertion), 164 (attestation)
    /// or 226 (iOS 27 attestation with extensions) bytes.
    public static let maximumLength = 1024

    private static let rpIDHashLength = 32
    private static let flagsOffset = 32
    private static let signCountOffset = 33
    private static let headerLength = 37

    /// Parses attestation authenticator data.
    ///
    /// Attestation layout: 37-byte header, aaguid(16), credentialIdLength(u16 BE), credentialId,
    /// COSE key, optional trailing extension map.
    /// - Throws: ``AttestKitError/Code/inputTooLarge`` above ``maximumLength`` bytes;
    ///   ``AttestKitError/Code/authenticatorDataMalformed`` when a fixed part is truncated, the
    ///   credential id is not 32 bytes, the COSE key is not a P-256 key or the trailing bytes are not
    ///   an extension map; ``AttestKitError/Code/cborMalformed`` or
    ///   ``AttestKitError/Code/cborLimitExceeded`` when the COSE key or the map is not canonical CBOR.
    public init(attestation bytes: some Collection<UInt8>) throws(AttestKitError) {
        let bytes = try Self.checkedCopy(bytes)
        let (credential, credentialLength) = try AttestedCredentialData.parse(bytes[Self.headerLength...])
        try self.init(bytes: bytes, credential: credential, extensionsStart: Self.headerLength + credentialLength)
    }

    /// Parses assertion authenticator data.
    ///
    /// Assertion layout: 37-byte header then an optional trailing extension map. Flags are NOT
    /// trusted (real assertions carry 0x40 with no credential data).
    /// - Throws: ``AttestKitError/Code/inputTooLarge`` above ``maximumLength`` bytes;
    ///   ``AttestKitError/Code/authenticatorDataMalformed`` below 37 bytes or when the trailing bytes
    ///   are not an extension map; ``AttestKitError/Code/cborMalformed`` or
    ///   ``AttestKitError/Code/cborLimitExceeded`` when they are not canonical CBOR.
    public init(assertion bytes: some Collection<UInt8>) throws(AttestKitError) {
        try self.init(bytes: try Self.checkedCopy(bytes), credential: nil, extensionsStart: Self.headerLength)
    }

    /// Checks the size bounds and copies the bytes.
    private static func checkedCopy(_ input: some Collection<UInt8>) throws(AttestKitError) -> [UInt8] {
        let count = input.count
        guard count <= maximumLength else {
            throw AttestKitError(.inputTooLarge, "authenticator data of \(count) bytes exceeds \(maximumLength)")
        }
        guard count >= headerLength else {
            throw AttestKitError(.authenticatorDataMalformed, "authenticator data of \(count) bytes is shorter than 37")
        }
        return Array(input)
    }

    /// Reads the header fields and the optional extension map that fills `bytes[extensionsStart...]`.
    private init(
        bytes: [UInt8],
        credential: AttestedCredentialData?,
        extensionsStart: Int
    ) throws(AttestKitError) {
        if extensionsStart < bytes.count {
            // Every type: a value of a key Apple adds may be a boolean, a float or a tagged item.
            let map = try CBORReader.decode(bytes[extensionsStart...], limits: .extensions)
            self.extensions = try AppleAuthenticatorExtensions(map)
        } else {
            self.extensions = nil
        }
        self.bytes = bytes
        self.flags = Flags(rawValue: bytes[Self.flagsOffset])
        self.signCount = bytes[Self.signCountOffset..<Self.headerLength].reduce(0) { $0 << 8 | UInt32($1) }
        self.attestedCredential = credential
    }
}
