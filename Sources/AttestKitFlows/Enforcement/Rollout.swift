import Crypto

/// A stable share of devices: the subjects (key ids, or subjects the application names) whose hash falls below
/// the fraction. A subject's place never changes, so raising the fraction over days only adds devices; a device
/// never flips between enforced and not.
///
/// The place of a subject is the first 8 bytes of SHA-256(salt ‖ 0x00 ‖ subject) read as a fraction of 2⁶⁴. A
/// request that names no subject cannot be placed: the group decides (``EnforcementPolicy/enforcesWithoutSubject``,
/// enforced by default).
///
/// A rollout below 1 is a migration aid, not a security boundary: a request outside it is let through (reported).
/// The subject is the application's (a signed-in user) or the key id the request sends, read in its one canonical
/// spelling, so that a client cannot move a key out of the rollout by spelling it another way; but a client can
/// still send another key, or none.
public struct Rollout: Sendable, Hashable {
    /// The share enforced, 0 to 1.
    public let fraction: Double
    /// Mixed into the hash: another salt draws another sample of devices.
    public let salt: String

    /// Every subject.
    public static let everyone = Rollout(uncheckedFraction: 1, salt: "")

    /// A rollout of `fraction` (0 to 1) of subjects.
    /// - Throws: `invalid_field` for a fraction outside 0...1 or not a number.
    public init(fraction: Double, salt: String = "") throws(FlowError) {
        guard fraction.isFinite, (0...1).contains(fraction) else {
            throw FlowError.invalidField("rollout", "is a fraction from 0 to 1")
        }
        self.init(uncheckedFraction: fraction, salt: salt)
    }

    private init(uncheckedFraction: Double, salt: String) {
        self.fraction = uncheckedFraction
        self.salt = salt
    }

    /// Where `subject` falls, in [0, 1).
    public func place(of subject: String) -> Double {
        var hasher = SHA256()
        hasher.update(data: Array(salt.utf8) + [0] + Array(subject.utf8))
        let value = hasher.finalize().prefix(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        return Double(value >> 11) / Double(UInt64(1) << 53)
    }

    /// Whether `subject` is in the rollout; a request without a subject only at fraction 1.
    public func includes(_ subject: String?) -> Bool {
        guard fraction < 1 else { return true }
        guard let subject, fraction > 0 else { return false }
        return place(of: subject) < fraction
    }
}
