public import AttestKit

/// An error of a call to Apple's DeviceCheck or App Attest receipt services, or of preparing one.
///
/// Every failure carries a stable ``Code`` (a short snake_case string that never changes between releases,
/// suitable for HTTP responses and metric labels), a reason, and when Apple answered, the HTTP ``status`` and
/// Apple's own text (``appleText``, at most 200 printable characters).
///
/// Errors compare equal when their codes are equal: `#expect(throws: AppleServiceError.code(.rateLimited))`, or
/// `catch let error where error.code == .noData`. The description never contains the private key, provider
/// tokens, device tokens or receipts.
public struct AppleServiceError: CodedError, Sendable {
    /// The stable, machine-readable identity of a failure.
    public let code: Code
    /// A human-readable explanation. Never contains secrets.
    public let reason: String
    /// The HTTP status Apple answered with, or `nil` when no response arrived.
    public let status: Int?
    /// Apple's response text, trimmed to ``maximumAppleTextLength`` printable ASCII characters, or `nil`.
    public let appleText: String?
    /// How many requests were sent before giving up (retries included); 0 when none was.
    public let attempts: Int
    /// The wait Apple asked for with its last answer's `Retry-After` (a 429 or 5xx), or `nil` when it sent none (or
    /// one that does not parse). A caller retrying the call waits at least this long.
    public let retryAfter: Duration?
    /// Source location where the error was raised, for debugging.
    public let file: String
    /// Source line where the error was raised, for debugging.
    public let line: UInt

    /// Apple's text is cut to this many characters.
    public static let maximumAppleTextLength = 200

    /// Creates an error.
    ///
    /// - Parameters:
    ///   - code: The stable code.
    ///   - reason: A human-readable explanation, without secrets.
    ///   - status: The HTTP status of Apple's answer, if one arrived.
    ///   - appleText: Apple's body text; it is cut to ``maximumAppleTextLength`` printable characters.
    ///   - attempts: How many requests were sent.
    ///   - retryAfter: The wait Apple's last answer asked for, if any.
    ///   - file: The source file that raised the error (for logs).
    ///   - line: The source line that raised the error (for logs).
    public init(
        _ code: Code,
        _ reason: String,
        status: Int? = nil,
        appleText: String? = nil,
        attempts: Int = 0,
        retryAfter: Duration? = nil,
        file: String = #fileID,
        line: UInt = #line
    ) {
        self.code = code
        self.reason = reason
        self.status = status
        self.appleText = appleText.flatMap(Self.sanitized)
        self.attempts = attempts
        self.retryAfter = retryAfter
        self.file = file
        self.line = line
    }

    /// `code (HTTP status): reason - "Apple's text"`, suitable for logs.
    public var description: String {
        var text = code.rawValue
        if let status { text += " (HTTP \(status))" }
        text += ": \(reason)"
        if let appleText { text += " - Apple said \"\(appleText)\"" }
        return text
    }

    /// A bounded label for metrics: the code.
    public var shortDescription: String { code.rawValue }

    /// Whether a later attempt may succeed: rate limits, server errors and transport failures.
    public var isRetryable: Bool { code.isRetryable }

    /// A copy with the number of attempts made.
    func with(attempts: Int, retryAfter: Duration? = nil) -> AppleServiceError {
        AppleServiceError(
            code, reason, status: status, appleText: appleText, attempts: attempts,
            retryAfter: retryAfter ?? self.retryAfter, file: file, line: line)
    }

    /// An error value with the given code, for comparisons.
    public static func code(_ code: Code) -> AppleServiceError { AppleServiceError(code, code.rawValue) }

    /// Printable ASCII only (anything else becomes `?`), whitespace runs folded, at most 200 characters; `nil`
    /// when nothing is left.
    static func sanitized(_ text: String) -> String? {
        var result = ""
        var pendingSpace = false
        for scalar in text.unicodeScalars {
            if scalar == " " || scalar == "\n" || scalar == "\r" || scalar == "\t" {
                pendingSpace = !result.isEmpty
                continue
            }
            if pendingSpace {
                result.unicodeScalars.append(" ")
                pendingSpace = false
            }
            result.unicodeScalars.append((0x21...0x7E).contains(scalar.value) ? scalar : "?")
            if result.unicodeScalars.count >= maximumAppleTextLength { break }
        }
        return result.isEmpty ? nil : result
    }
}
