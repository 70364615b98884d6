/// A failure of the device's App Attest or DeviceCheck service, mirroring `DCError.Code`.
///
/// Providers map the platform's errors to these cases; ``AppAttestManager`` reacts to each one:
/// ``invalidKey`` and ``invalidInput`` make it forget the key and attest a new one, ``serverUnavailable`` is
/// retried with a bounded backoff, the others are passed on.
public enum DeviceServiceError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The key is unknown to the device, already attested (attestation) or not attested yet (assertion)
    /// (`DCError.invalidKey`).
    case invalidKey
    /// The input was refused, for instance an empty client data hash (`DCError.invalidInput`).
    case invalidInput
    /// Apple's service could not be reached; retry later (`DCError.serverUnavailable`).
    case serverUnavailable
    /// The device does not support the feature (`DCError.featureUnsupported`).
    case featureUnsupported
    /// Any other failure (`DCError.unknownSystemFailure` and errors that are not `DCError`s).
    case unknown

    /// The case name.
    public var description: String {
        switch self {
        case .invalidKey: "invalidKey"
        case .invalidInput: "invalidInput"
        case .serverUnavailable: "serverUnavailable"
        case .featureUnsupported: "featureUnsupported"
        case .unknown: "unknown"
        }
    }

    /// Whether the key should be thrown away and a new one attested.
    var invalidatesKey: Bool { self == .invalidKey || self == .invalidInput }
}
