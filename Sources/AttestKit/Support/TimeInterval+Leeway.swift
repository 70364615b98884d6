package import Foundation

extension TimeInterval {
    /// This value as a clock-skew leeway: itself when finite and positive, otherwise 0 (a negative, NaN or infinite
    /// leeway would turn time checks off, or make their comparisons always false: the strictest value is taken).
    package var asLeeway: TimeInterval { isFinite && self > 0 ? self : 0 }
}
