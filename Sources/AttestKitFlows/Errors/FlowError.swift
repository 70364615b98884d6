public import AttestKit

/// A refusal or failure of a flow: the one error type of ``AttestKitFlows``.
///
/// Every error carries a stable ``Code`` (snake_case, the same string the HTTP API answers with and metrics count),
/// a closed ``Kind`` that a framework edge maps to a status once, a reason for people and the source location it
/// was raised at. The errors of the modules the flows call (`AttestKitError`, `StoreError`, `AppleServiceError`,
/// `RequestBindingError`) become ``FlowError``s in one place (``init(_:)-(AttestKitError)`` and its siblings),
/// keeping their codes.
///
/// Errors compare equal when their codes are equal, so tests write `#expect(throws: FlowError.signatureInvalid)`.
/// The description never holds keys, tokens, assertions or attestation bytes.
public struct FlowError: CodedError, Sendable {
    /// The stable identity of a failure: a snake_case string that never changes between releases.
    ///
    /// Extensible: the flows originate the codes of the static members here and in `FlowError+Code.swift`, and
    /// keep the codes of the errors they convert (`signature_invalid`, `key_revoked`, `apple_unavailable`, ...).
    public struct Code: StableErrorCode {
        /// The code as sent to clients and counted in metrics.
        public let rawValue: String

        /// A code; `rawValue` is snake_case ASCII.
        public init(_ rawValue: String) { self.rawValue = rawValue }
    }

    /// What kind of refusal or failure this is: the one thing an edge needs to pick an HTTP status (or a gRPC
    /// code, or an exit status).
    public enum Kind: Sendable, Hashable {
        /// The input is not well formed (HTTP 400).
        case malformed
        /// The caller did not present the proof the flow needs (HTTP 401).
        case unauthenticated
        /// The input is well formed but refused: a failed verification, an unknown or revoked key, a policy
        /// (HTTP 403).
        case refused
        /// A replay or a duplicate: a counter that did not increase, a consumed challenge, a known key (HTTP 409).
        case conflict
        /// The request's body is over the edge's limit (HTTP 413).
        case tooLarge
        /// The thing asked about does not exist (HTTP 404).
        case notFound
        /// A budget is spent; retry after so many seconds (HTTP 429).
        case rateLimited(retryAfter: Int)
        /// A dependency (storage, Apple) cannot answer now; retry later, after so many seconds when known
        /// (HTTP 503).
        case unavailable(retryAfter: Int?)
        /// The deployment did not configure what the flow needs (HTTP 503).
        case notConfigured
        /// An upstream service (Apple) answered with an error that is not the caller's fault (HTTP 502).
        case upstreamFailure
        /// A bug (HTTP 500).
        case internalFailure
    }

    /// The stable code.
    public let code: Code
    /// The kind, for the edge's status.
    public let kind: Kind
    /// What went wrong, for people. Never holds secrets or raw input.
    public let reason: String
    /// Source file where the error was raised, for debugging.
    public let file: String
    /// Source line where the error was raised, for debugging.
    public let line: UInt
    /// The error of another module this one was converted from (a `StoreError` whose reason names the storage's
    /// failure, say), for the operator's logs; never sent to clients.
    public let underlying: (any Error)?

    /// Creates an error.
    public init(
        _ code: Code, _ kind: Kind, _ reason: String, underlying: (any Error)? = nil, file: String = #fileID,
        line: UInt = #line
    ) {
        self.code = code
        self.kind = kind
        self.reason = reason
        self.underlying = underlying
        self.file = file
        self.line = line
    }
}
