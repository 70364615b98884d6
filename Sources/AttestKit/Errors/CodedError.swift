/// The scaffolding every AttestKit error type shares, written once: a stable code, a reason for people,
/// equality by code only and `code: reason` as the description.
///
/// A conforming type declares its ``code`` and ``reason``; it compares equal to another error with the same
/// code whatever the reason, so tests and callers write `#expect(throws: StoreError.challengeConsumed)` or
/// `catch let error where error.code == .keyRevoked`. A type with more to tell (an HTTP status, Apple's text)
/// writes its own `description`. `AttestKitError`, `StoreError`, `AppleServiceError`, `FlowError` and the
/// simulators' errors conform; the app side's errors (in `AttestKitWire` and `AttestKitClient`, which do not
/// depend on this module) keep their own.
public protocol CodedError: Error, Hashable, CustomStringConvertible {
    /// The type of the stable code.
    associatedtype Code: Hashable, CustomStringConvertible

    /// The stable, machine-readable identity of the failure.
    var code: Code { get }
    /// What went wrong, for people. Never holds secrets or raw input.
    var reason: String { get }
}

extension CodedError {
    /// `code: reason`, suitable for logs.
    public var description: String { "\(code): \(reason)" }

    /// Errors are equal when their codes are equal.
    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.code == rhs.code }

    /// Hashes the code only, consistent with `==`.
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }
}

/// A stable error code: a short snake_case string that never changes between releases, fit for HTTP answers and
/// metric labels. Codes compare and hash by that string alone, and print as it.
public protocol StableErrorCode: Hashable, Sendable, CustomStringConvertible {
    /// The stable snake_case string.
    var rawValue: String { get }
}

extension StableErrorCode {
    /// The stable string.
    public var description: String { rawValue }

    /// Codes are equal when their strings are.
    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.rawValue == rhs.rawValue }

    /// Hashes the string.
    public func hash(into hasher: inout Hasher) { hasher.combine(rawValue) }
}
