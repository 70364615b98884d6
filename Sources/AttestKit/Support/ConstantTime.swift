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
}
