/// What ``OSVersion`` and ``BundleVersion`` share: dot-separated decimal components, parsed within bounds, ordered
/// component by component with a missing component counting as 0, and hashed consistently with that order.
enum DottedVersion {
    /// The components of `text`, or `nil` unless it is 1 to `maximumComponents` dot-separated runs of 1 to
    /// `maximumDigits` ASCII digits (no sign, no space, no empty component).
    static func components(of text: some StringProtocol, maximumComponents: Int, maximumDigits: Int) -> [Int]? {
        let parts = text.utf8.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard (1...maximumComponents).contains(parts.count) else { return nil }
        var components: [Int] = []
        for part in parts {
            guard (1...maximumDigits).contains(part.count), part.allSatisfy({ (0x30...0x39).contains($0) }) else {
                return nil
            }
            components.append(part.reduce(0) { $0 * 10 + Int($1 - 0x30) })
        }
        return components
    }

    /// Whether `lhs` orders before `rhs`, component by component, missing components being 0.
    static func precedes(_ lhs: [Int], _ rhs: [Int]) -> Bool {
        for index in 0..<max(lhs.count, rhs.count) {
            let left = index < lhs.count ? lhs[index] : 0
            let right = index < rhs.count ? rhs[index] : 0
            if left != right { return left < right }
        }
        return false
    }

    /// Hashes `components` without trailing zeros, so that versions equal under ``precedes(_:_:)`` hash alike.
    static func hash(_ components: [Int], into hasher: inout Hasher) {
        var trimmed = components
        while trimmed.last == 0 { trimmed.removeLast() }
        hasher.combine(trimmed)
    }
}
