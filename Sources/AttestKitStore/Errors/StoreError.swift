public import AttestKit

/// An error raised by an ``AttestationStore``.
///
/// Every failure carries a stable ``Code`` (a short snake_case string that never changes between
/// releases, suitable for HTTP responses and metric labels) and a human-readable reason.
///
/// Errors compare equal when their codes are equal, so tests and callers can write
/// `#expect(throws: StoreError.challengeConsumed)` or
/// `catch let error where error.code == .counterNotIncreasing`. The description never contains keys,
/// receipts, challenges or connection passwords.
public struct StoreError: CodedError, Sendable {
    /// The stable, machine-readable identity of a failure.
    public let code: Code
    /// A human-readable explanation. Never contains secrets or raw input.
    public let reason: String
    /// Source location where the error was raised, for debugging.
    public let file: String
    /// Source line where the error was raised, for debugging.
    public let line: UInt

    /// Creates an error with a code and a reason.
    public init(_ code: Code, _ reason: String, file: String = #fileID, line: UInt = #line) {
        self.code = code
        self.reason = reason
        self.file = file
        self.line = line
    }
}

extension StoreError {
    /// Runs `body`, passing a ``StoreError`` through and turning any other error (a driver's) into
    /// ``Code/storageUnavailable``. The reason names the operation and what `detail` extracts (an error class
    /// such as `busy` or a SQLSTATE, never a query, a bind or a password).
    static func wrapping<Result>(
        _ operation: StaticString,
        file: String = #fileID,
        line: UInt = #line,
        detail: (any Error) -> String? = { _ in nil },
        _ body: () async throws -> Result
    ) async throws(StoreError) -> Result {
        do {
            return try await body()
        } catch let error as StoreError {
            throw error
        } catch is CancellationError {
            throw StoreError(.storageUnavailable, "\(operation) was cancelled", file: file, line: line)
        } catch {
            throw StoreError(
                .storageUnavailable, "\(operation) failed in the database (\(detail(error) ?? "\(type(of: error))"))",
                file: file, line: line)
        }
    }
}
