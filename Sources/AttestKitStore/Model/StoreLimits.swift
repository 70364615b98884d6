/// The bounds every store enforces before a value reaches the database.
///
/// Each backend refuses an argument outside these bounds with ``StoreError/Code/invalidInput``, so the
/// same inputs fail the same way on every backend and no oversized or badly encoded value reaches SQL.
public enum StoreLimits {
    /// The fewest random bytes in a challenge.
    public static let minimumChallengeBytes = 32
    /// The most random bytes in a challenge.
    public static let maximumChallengeBytes = 1_024
    /// The longest time to live of a challenge, in milliseconds: one day.
    public static let maximumChallengeTTLMilliseconds: Int64 = 86_400_000
    /// The largest receipt a store keeps, in bytes. Apple's receipts are about 5 KB.
    public static let maximumReceiptBytes = 65_536
    /// The longest OS or bundle version string, in UTF-8 bytes.
    public static let maximumVersionBytes = 64
    /// The longest key access-control value (the credential certificate's extension 1.2.840.113635.100.8.6, as
    /// signed) a key record holds; a well-formed one is under 1.1 KiB (its policy at most 1 KiB).
    public static let maximumKeyAccessControlBytes = 4_096
    /// The largest risk metric accepted. Apple's metric counts attested keys, a small number.
    public static let maximumRiskMetric = Int(Int32.max)
    /// The most rows one listing returns.
    public static let maximumListLimit = 10_000

    /// The longest limited-use token identifier, in bytes.
    public static let maximumTokenIDBytes = 128

    /// The size of a dashboard session's digest (HMAC-SHA256), in bytes.
    public static let dashboardSessionDigestBytes = 32
    /// The most dashboard sessions a store keeps at once.
    public static let maximumDashboardSessions = 1_024

    /// Checks a token identifier: 1 to ``maximumTokenIDBytes`` printable ASCII characters.
    static func checkTokenID(_ tokenID: String) throws(StoreError) {
        guard !tokenID.isEmpty, tokenID.utf8.count <= maximumTokenIDBytes,
            tokenID.utf8.allSatisfy({ (0x21...0x7E).contains($0) })
        else {
            throw StoreError(
                .invalidInput, "a token id must have 1 to \(maximumTokenIDBytes) printable ASCII characters")
        }
    }

    /// Checks a dashboard session's digest: exactly ``dashboardSessionDigestBytes`` bytes.
    static func checkSessionDigest(_ digest: [UInt8]) throws(StoreError) {
        guard digest.count == dashboardSessionDigestBytes else {
            throw StoreError(.invalidInput, "a session digest must have \(dashboardSessionDigestBytes) bytes")
        }
    }

    /// Checks the bound of dashboard sessions: 1 to ``maximumDashboardSessions``.
    static func checkSessionCapacity(_ capacity: Int) throws(StoreError) {
        guard (1...maximumDashboardSessions).contains(capacity) else {
            throw StoreError(.invalidInput, "a session capacity must lie between 1 and \(maximumDashboardSessions)")
        }
    }

    /// Checks a short, printable text: at most ``maximumVersionBytes`` UTF-8 bytes, not empty, no control
    /// characters.
    static func checkVersion(_ text: String?, _ name: StaticString) throws(StoreError) {
        guard let text else { return }
        guard !text.isEmpty, text.utf8.count <= maximumVersionBytes else {
            throw StoreError(.invalidInput, "\(name) must have 1 to \(maximumVersionBytes) UTF-8 bytes")
        }
        guard !text.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
            throw StoreError(.invalidInput, "\(name) must not contain control characters")
        }
    }

    /// Checks a receipt's size.
    static func checkReceipt(_ bytes: [UInt8]) throws(StoreError) {
        guard !bytes.isEmpty, bytes.count <= maximumReceiptBytes else {
            throw StoreError(.invalidInput, "a receipt must have 1 to \(maximumReceiptBytes) bytes")
        }
    }

    /// Checks a risk metric.
    static func checkRiskMetric(_ value: Int?) throws(StoreError) {
        guard let value else { return }
        guard (0...maximumRiskMetric).contains(value) else {
            throw StoreError(.invalidInput, "a risk metric must lie between 0 and \(maximumRiskMetric)")
        }
    }

    /// Checks a listing limit.
    static func checkLimit(_ limit: Int) throws(StoreError) {
        guard (1...maximumListLimit).contains(limit) else {
            throw StoreError(.invalidInput, "a limit must lie between 1 and \(maximumListLimit)")
        }
    }

    /// How long a receipt refresh claim parks a due key that was not used recently enough to be traded
    /// (``KeyStore/claimReceiptRefresh(now:limit:lease:activeSince:)``): a day, after which it is looked at again.
    public static let idleRefreshPause: Duration = .seconds(86_400)

    /// Checks a lease's duration (1 second to 1 day) and returns its end in Unix milliseconds.
    static func leaseEnd(_ now: Int64, _ duration: Duration) throws(StoreError) -> Int64 {
        guard duration >= .seconds(1), duration <= .seconds(86_400) else {
            throw StoreError(.invalidInput, "a lease must last 1 second to 1 day")
        }
        let (seconds, attoseconds) = duration.components
        return now + seconds * 1_000 + attoseconds / 1_000_000_000_000_000
    }

    /// Checks a job's name (1 to 64) or a lease holder (1 to 128 printable ASCII characters).
    static func checkLeaseName(_ text: String, maximum: Int, _ name: StaticString) throws(StoreError) {
        guard !text.isEmpty, text.utf8.count <= maximum, text.utf8.allSatisfy({ (0x20...0x7E).contains($0) }) else {
            throw StoreError(.invalidInput, "\(name) must have 1 to \(maximum) printable ASCII characters")
        }
    }
}
