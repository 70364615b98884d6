@testable import AttestKit

/// A minimal canonical CBOR encoder for building test inputs (the library itself only reads CBOR).
///
/// It writes every head in its shortest form and keeps map entries in the given order, duplicates
/// included, so tests can build both valid objects and specific malformations.
enum CBOREncoder {
    static func encode(_ value: CBORValue) -> [UInt8] {
        var out = [UInt8]()
        append(value, to: &out)
        return out
    }

    /// The shortest head of major type `major` with `argument`.
    static func head(_ major: UInt8, _ argument: UInt64) -> [UInt8] {
        let type = major << 5
        switch argument {
        case 0..<24: return [type | UInt8(argument)]
        case 24...0xFF: return [type | 24, UInt8(argument)]
        case 0x100...0xFFFF: return [type | 25] + bigEndian(argument, width: 2)
        case 0x1_0000...0xFFFF_FFFF: return [type | 26] + bigEndian(argument, width: 4)
        default: return [type | 27] + bigEndian(argument, width: 8)
        }
    }

    static func bigEndian(_ value: UInt64, width: Int) -> [UInt8] {
        (0..<width).reversed().map { UInt8(truncatingIfNeeded: value >> (8 * UInt64($0))) }
    }

    private static func append(_ value: CBORValue, to out: inout [UInt8]) {
        switch value {
        case .unsigned(let n): out += head(0, n)
        case .negative(let n): out += head(1, n)
        case .bytes(let bytes):
            out += head(2, UInt64(bytes.count))
            out += bytes
        case .text(let text):
            out += head(3, UInt64(text.utf8.count))
            out += text.utf8
        case .array(let elements):
            out += head(4, UInt64(elements.count))
            for element in elements { append(element, to: &out) }
        case .map(let entries):
            out += head(5, UInt64(entries.count))
            for entry in entries {
                append(entry.key, to: &out)
                append(entry.value, to: &out)
            }
        case .tagged(let tag, let value):
            out += head(6, tag)
            append(value, to: &out)
        case .simple(let info, let argument):
            let width = [24: 1, 25: 2, 26: 4, 27: 8][Int(info)] ?? 0
            out.append(7 << 5 | info)
            out += bigEndian(argument, width: width)
        }
    }
}

extension CBORValue {
    /// A map with text keys, in the given order.
    static func textMap(_ pairs: KeyValuePairs<String, CBORValue>) -> CBORValue {
        .map(pairs.map { CBORMapEntry(key: .text($0.key), value: $0.value) })
    }

    /// A byte string holding `bytes`.
    static func byteString(_ bytes: [UInt8]) -> CBORValue { .bytes(bytes[...]) }

    /// This map with the entry under `key` replaced by `value`, or removed when `value` is `nil`
    /// (appended when absent).
    func setting(_ key: String, to value: CBORValue?) -> CBORValue {
        guard var entries = mapValue else { return self }
        if let index = entries.firstIndex(where: { $0.key == .text(key) }) {
            if let value {
                entries[index] = CBORMapEntry(key: .text(key), value: value)
            } else {
                entries.remove(at: index)
            }
        } else if let value {
            entries.append(CBORMapEntry(key: .text(key), value: value))
        }
        return .map(entries)
    }
}

/// Builds authenticator data byte by byte.
enum AuthDataBuilder {
    static let rpIDHash = [UInt8](repeating: 0xAB, count: 32)

    static func header(flags: UInt8 = 0x40, counter: UInt32 = 0) -> [UInt8] {
        rpIDHash + [flags] + CBOREncoder.bigEndian(UInt64(counter), width: 4)
    }

    /// The EC2/ES256/P-256 COSE key App Attest writes, with the given coordinates.
    static func coseKey(x: [UInt8] = .init(repeating: 0x11, count: 32), y: [UInt8] = .init(repeating: 0x22, count: 32))
        -> CBORValue
    {
        .map([
            CBORMapEntry(key: .integer(1), value: .integer(2)),
            CBORMapEntry(key: .integer(3), value: .integer(-7)),
            CBORMapEntry(key: .integer(-1), value: .integer(1)),
            CBORMapEntry(key: .integer(-2), value: .byteString(x)),
            CBORMapEntry(key: .integer(-3), value: .byteString(y)),
        ])
    }

    /// Attestation authenticator data.
    static func attestation(
        flags: UInt8 = 0x40,
        aaguid: [UInt8] = AppAttestEnvironment.development.aaguid,
        credentialID: [UInt8] = .init(repeating: 0xC1, count: 32),
        declaredIDLength: Int? = nil,
        key: CBORValue = coseKey(),
        extensions: CBORValue? = nil
    ) -> [UInt8] {
        let length = UInt64(declaredIDLength ?? credentialID.count)
        return header(flags: flags) + aaguid + CBOREncoder.bigEndian(length, width: 2) + credentialID
            + CBOREncoder.encode(key) + (extensions.map(CBOREncoder.encode) ?? [])
    }

    /// Assertion authenticator data.
    static func assertion(flags: UInt8 = 0x40, counter: UInt32 = 1, extensions: CBORValue? = nil) -> [UInt8] {
        header(flags: flags, counter: counter) + (extensions.map(CBOREncoder.encode) ?? [])
    }
}
