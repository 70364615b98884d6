package import AttestKit
package import AttestKitStore

/// Decoding of the text fields the edges receive (JSON fields, headers), with the flows' codes: what the HTTP API
/// and every middleware share.
package enum Field {
    /// The largest assertion accepted, in bytes (Apple's are about 700).
    package static let maximumAssertionLength = 4_096

    /// Standard Base64 or base64url bytes, at most `maximum` bytes once decoded.
    /// - Throws: `invalid_field` naming `name`.
    package static func bytes(_ text: String, _ name: String, maximum: Int) throws(FlowError) -> [UInt8] {
        guard text.utf8.count <= (maximum / 3 + 1) * 4 + 4 else {
            throw FlowError.invalidField(name, "is longer than \(maximum) bytes")
        }
        guard let bytes = Base64.decode(text), !bytes.isEmpty else {
            throw FlowError.invalidField(name, "is not Base64")
        }
        return bytes
    }

    /// A key identifier in its one canonical spelling: standard padded Base64 of 32 bytes with zero unused bits
    /// (44 characters, the form `generateKey()` returns). Base64url, missing padding and non-zero unused bits are
    /// refused, so that one key has one spelling everywhere (the rollout, logs, the store's answers).
    /// - Throws: `key_id_malformed`.
    package static func keyID(_ text: String) throws(FlowError) -> KeyID {
        guard let keyID = try? KeyID(string: text), keyID.base64.utf8.elementsEqual(text.utf8) else {
            throw FlowError(
                .keyIdMalformed, .malformed, "keyId: is not the standard padded Base64 of 32 bytes (44 characters)")
        }
        return keyID
    }

    /// A challenge id of this service.
    /// - Throws: `invalid_field` naming `name`.
    package static func challengeID(_ text: String, _ name: String = "challengeId") throws(FlowError) -> ChallengeID {
        do {
            return try ChallengeID(string: text)
        } catch {
            throw FlowError.invalidField(name, "is not a challenge id of this service")
        }
    }
}
