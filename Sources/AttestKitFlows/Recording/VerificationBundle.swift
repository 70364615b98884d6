import AttestKit
import AttestKitWire
public import Foundation

/// A record of one failed verification, written by ``VerificationRecorder`` and re-run by ``VerificationReplay``:
/// the inputs, the moment of the verification, the configuration that decided, what the store answered, and the
/// outcome.
///
/// A bundle holds what the app sent (the key identifier, the attestation or assertion, the challenge or the client
/// data: AttestKit's canonical client data carries the SHA-256 of a request body but never the body, while client
/// data of the caller's own scheme is kept whole) and public configuration (App IDs,
/// environments, leeway, roots that are not Apple's as PEM certificates, the deployment policy). It never holds a
/// session token, a JWT, a private key, a key file or an API credential that AttestKit handles: the flows that write
/// bundles never see them. The canonical client data does hold the signed request's target, query string included:
/// a credential an app puts there is in the bundle (docs/record-and-replay.md).
///
/// The JSON is stable (``currentFormat``); ``VerificationReplay`` refuses other formats.
public struct VerificationBundle: Sendable, Hashable, Codable {
    /// The format this version writes and reads.
    public static let currentFormat = 1
    /// The largest bundle read or written, in bytes.
    public static let maximumBytes = 1 << 20

    /// What was verified.
    public enum Kind: String, Sendable, Hashable, Codable {
        /// An attestation (`POST /v1/attestations` and the other registrations).
        case attestation
        /// An assertion (the middleware, `/v1/assertions/verify`, the token route).
        case assertion
    }

    /// The outcome: the failure's stable code, its check, and its reason.
    public struct Outcome: Sendable, Hashable, Codable, CustomStringConvertible {
        /// The stable code, as the API answered it.
        public var code: String
        /// The check that refused: AttestKit's check names (`certificate`, `nonce`, `receipt`, `signature`, ...)
        /// or the flow's (`freshness`, `challenge`, `key`, `counter`, `policy`, `request`).
        public var check: String
        /// The reason, for people.
        public var reason: String
        /// For time checks, by how many seconds the time was outside the window.
        public var secondsOutside: Double?

        /// Creates an outcome.
        public init(code: String, check: String, reason: String, secondsOutside: Double? = nil) {
            self.code = code
            self.check = check
            self.reason = reason
            self.secondsOutside = secondsOutside
        }

        /// The outcome of a flow error: its code, the check of the AttestKit error it came from or the flow's.
        public init(_ error: FlowError) {
            let check: String
            var seconds: Double?
            if let underlying = error.underlying as? AttestKitError {
                check = underlying.check.rawValue
                seconds = underlying.secondsOutside
            } else {
                check = Self.flowCheck(of: error.code.rawValue)
            }
            self.init(code: error.code.rawValue, check: check, reason: error.reason, secondsOutside: seconds)
        }

        private static func flowCheck(of code: String) -> String {
            let prefixes = [
                ("timestamp_", "freshness"), ("invalid_freshness", "freshness"), ("challenge_", "challenge"),
                ("key_", "key"), ("counter_", "counter"), ("policy_", "policy"),
            ]
            return prefixes.first { code.hasPrefix($0.0) }?.1 ?? "request"
        }

        /// `code (check): reason`, and the seconds outside when known.
        public var description: String {
            var text = "\(code) (check: \(check)): \(reason)"
            if let secondsOutside { text += " [\(secondsOutside) s outside the window]" }
            return text
        }
    }

    /// ``currentFormat`` when written by this version.
    public var format: Int
    /// What was verified.
    public var kind: Kind
    /// When the bundle was written (RFC 3339, UTC).
    public var recordedAt: String
    /// The moment the verification ran at, in seconds since 1970 (exact: the replay verifies at this moment).
    public var verificationTime: Double
    /// The settings that decided.
    public var configuration: RecordedConfiguration
    /// The attestation's inputs, for ``Kind/attestation``.
    public var attestation: RecordedAttestation?
    /// The assertion's inputs, for ``Kind/assertion``.
    public var assertion: RecordedAssertion?
    /// How the verification ended.
    public var outcome: Outcome

    /// Creates a bundle.
    public init(
        kind: Kind, recordedAt: Date, verificationTime: Date, configuration: RecordedConfiguration,
        attestation: RecordedAttestation? = nil, assertion: RecordedAssertion? = nil, outcome: Outcome
    ) {
        self.format = Self.currentFormat
        self.kind = kind
        self.recordedAt = APITime.format(recordedAt)
        self.verificationTime = verificationTime.timeIntervalSince1970
        self.configuration = configuration
        self.attestation = attestation
        self.assertion = assertion
        self.outcome = outcome
    }

    /// The moment the verification ran at.
    public var verificationDate: Date { Date(timeIntervalSince1970: verificationTime) }

    /// The bundle's JSON (sorted keys, readable).
    public func encoded() throws(FlowError) -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        do {
            return Array(try encoder.encode(self))
        } catch {
            throw FlowError(.bundleInvalid, .internalFailure, "the bundle cannot be encoded")
        }
    }

    /// Reads a bundle: at most ``maximumBytes``, JSON of ``currentFormat`` with exactly one of ``attestation`` and
    /// ``assertion``, matching ``kind``.
    /// - Throws: `bundle_invalid` (malformed) otherwise.
    public init(json bytes: some Collection<UInt8>) throws(FlowError) {
        guard bytes.count <= Self.maximumBytes else {
            throw FlowError(.bundleInvalid, .malformed, "a bundle is at most \(Self.maximumBytes) bytes")
        }
        let decoded: VerificationBundle
        do {
            decoded = try JSONDecoder().decode(VerificationBundle.self, from: Data(bytes))
        } catch {
            throw FlowError(.bundleInvalid, .malformed, "not a verification bundle (JSON of the bundle format)")
        }
        guard decoded.format == Self.currentFormat else {
            throw FlowError(
                .bundleInvalid, .malformed,
                "format \(decoded.format) is not the format this version reads (\(Self.currentFormat))")
        }
        switch (decoded.kind, decoded.attestation, decoded.assertion) {
        case (.attestation, .some, .none), (.assertion, .none, .some): break
        default:
            throw FlowError(.bundleInvalid, .malformed, "a bundle holds exactly the inputs of its kind")
        }
        // The years 1970 to 9999, the store's range of times (Unix seconds).
        guard decoded.verificationTime.isFinite, (0...253_402_300_799).contains(decoded.verificationTime) else {
            throw FlowError(
                .bundleInvalid, .malformed, "the verification time is not a time of the years 1970 to 9999")
        }
        self = decoded
    }
}
