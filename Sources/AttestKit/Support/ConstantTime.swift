/// Comparison of secret-dependent byte strings in time that depends only on their lengths.
package enum ConstantTime {
    /// Whether `lhs` and `rhs` hold the same bytes. Runs in time proportional to the longer input
    /// and never exits early on the first differing byte.
    @inline(never)
    package static func equal<L: Collection<UInt8>, R: Collection<UInt8>>(_ lhs: L, _ rhs: R) -> Bool {
        var difference: UInt8 = lhs.count == rhs.count ? 0 : 1
        var left = lhs.makeIterator()
        var right = rhs.makeIterator()
        while true {
            switch (left.next(), right.next()) {
            case (let l?, let r?): difference |= l ^ r
            case (_?, nil), (nil, _?): difference |= 1
            case (nil, nil): return difference == 0
            }
        }
    }

    /// Whether two byte arrays hold the same bytes, as the generic `equal` but indexing the arrays: the common case
    /// (key identifiers, hashes, tokens), without a generic iterator per byte.
    @inline(never)
    package static func equal(_ lhs: [UInt8], _ rhs: [UInt8]) -> Bool {
        var difference: UInt8 = lhs.count == rhs.count ? 0 : 1
        for index in 0..<max(lhs.count, rhs.count) {
            // Past the end of the shorter input, compare with 0: the loop's length depends on the lengths only.
            difference |= (index < lhs.count ? lhs[index] : 0) ^ (index < rhs.count ? rhs[index] : 0)
        }
        return difference == 0
    }
}
