/// A small, fast, seedable random number generator (SplitMix64), for repeatable tests.
///
/// The algorithm is Steele, Lea and Flood's SplitMix (OOPSLA 2014) with Vigna's 64-bit finalizer, the generator
/// Java's `SplittableRandom` and many property-testing tools use to seed runs.
///
/// The same seed always yields the same sequence, on every platform, so a failing property test can be
/// replayed from the seed it prints. Not cryptographically secure: use it only to drive simulations, never to
/// make keys that protect anything.
///
/// ```swift
/// var random = SplitMix64(seed: 42)
/// let keyID = device.generateKey(using: &random)
/// ```
public struct SplitMix64: RandomNumberGenerator, Sendable, Hashable {
    /// The generator's internal state; advances by a constant on every call.
    public private(set) var state: UInt64

    /// Creates a generator whose sequence is determined by `seed`.
    public init(seed: UInt64) {
        self.state = seed
    }

    /// The next 64 pseudo-random bits.
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var mixed = state
        mixed = (mixed ^ (mixed >> 30)) &* 0xBF58_476D_1CE4_E5B9
        mixed = (mixed ^ (mixed >> 27)) &* 0x94D0_49BB_1331_11EB
        return mixed ^ (mixed >> 31)
    }

    /// `count` pseudo-random bytes.
    public mutating func bytes(_ count: Int) -> [UInt8] {
        var out = [UInt8]()
        out.reserveCapacity(count + 8)
        while out.count < count {
            let word = next()
            for shift in stride(from: 0, to: 64, by: 8) { out.append(UInt8(truncatingIfNeeded: word >> UInt64(shift))) }
        }
        return Array(out.prefix(count))
    }
}
