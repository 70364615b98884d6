import AttestKitTesting

/// The seeded generator of the software Apple (SplitMix64), so that sampled tampering and fuzzing tests repeat
/// exactly.
typealias SeededGenerator = SplitMix64
