/// Tag-length-value encoding for the receipt container: definite lengths (DER style) and BER's indefinite
/// lengths (`30 80 … 00 00`), the two forms Apple mixes in one receipt.
enum BERWriter {
    /// The end-of-contents octets that close an indefinite-length value.
    static let endOfContents: [UInt8] = [0x00, 0x00]

    /// `tag ‖ length ‖ content` with the shortest definite length.
    static func definite(_ tag: UInt8, _ content: [UInt8]) -> [UInt8] {
        [tag] + length(content.count) + content
    }

    /// `tag ‖ 80 ‖ parts… ‖ 00 00`: an indefinite-length constructed value.
    static func indefinite(_ tag: UInt8, _ parts: [[UInt8]]) -> [UInt8] {
        [tag, 0x80] + parts.joined() + endOfContents
    }

    /// A constructed OCTET STRING (`24 80`) holding `content` in primitive chunks of `chunkSize` bytes
    /// (`04 82 03 E8 …` for 1000), the last one shorter; Apple's layout for a receipt's eContent.
    static func chunkedOctetString(_ content: [UInt8], chunkSize: Int) -> [UInt8] {
        let size = max(1, chunkSize)
        let chunks = stride(from: 0, to: content.count, by: size).map { start in
            definite(Tag.octetString, Array(content[start..<min(start + size, content.count)]))
        }
        return indefinite(Tag.constructedOctetString, chunks)
    }

    /// The definite length octets for `count`: short form below 128, else long form.
    static func length(_ count: Int) -> [UInt8] {
        guard count >= 0x80 else { return [UInt8(count)] }
        var octets = [UInt8]()
        var remaining = count
        while remaining > 0 {
            octets.insert(UInt8(truncatingIfNeeded: remaining), at: 0)
            remaining >>= 8
        }
        return [0x80 | UInt8(octets.count)] + octets
    }

    /// The identifier octets this module writes.
    enum Tag {
        static let integer: UInt8 = 0x02
        static let octetString: UInt8 = 0x04
        static let null: UInt8 = 0x05
        static let objectIdentifier: UInt8 = 0x06
        static let sequence: UInt8 = 0x30
        static let set: UInt8 = 0x31
        static let constructedOctetString: UInt8 = 0x24
        /// `[0]` constructed, context-specific.
        static let contextZero: UInt8 = 0xA0
    }
}
