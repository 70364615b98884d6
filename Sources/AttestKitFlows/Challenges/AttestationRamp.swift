public import AttestKit
import Crypto
import Foundation

/// The attestation ramp (`ramp.*`): Apple's attestation service limits how fast new installs may attest, and Apple
/// advises ramping App Attest out over days. The server paces it when it gives an install its attest challenge
/// (the install calls Apple right after): a ``share`` of installs per app, and a ``dailyCeiling`` of new
/// attestations per app per UTC day shared by every replica through the store. An install kept out is answered
/// 429 `attestation_deferred` with `Retry-After`, and asks again then.
///
/// The share is decided on the key id the app generated before attesting (which costs nothing at Apple): its
/// ``place(appID:keyID:)``, a keyed hash of the app and the key mapped to basis points, is compared with the share.
/// The same key always gets the same answer for a share; raising the share only admits more keys (a key admitted
/// stays admitted); the apps' draws are independent. An app should keep its key id while it is deferred: a new key
/// is a new draw.
///
/// The ramp paces honest installs; it is not a security boundary: a client can generate keys until one falls in
/// the share (each costs it a challenge request, under `rate-limit.challenges-per-ip`).
///
/// One value of each setting holds for every accepted app (the configuration has no per-app settings); each app
/// still draws its own installs and has its own ceiling.
public struct AttestationRamp: Sendable, Hashable {
    /// The share of installs (key ids) of each app admitted to attest, as a percentage from 0 to 100, decimals
    /// allowed (`ramp.share`); 100, the default, admits every install.
    public var share: Double
    /// The most new attestations (attest challenges given) per app per UTC day across every replica sharing the
    /// store (`ramp.daily-ceiling`); 0, the default: none.
    public var dailyCeiling: Int
    /// The seconds an install outside the share is told to wait before asking again (`ramp.recheck-after`,
    /// `Retry-After`): 1 to 604800, 21600 (six hours) by default.
    public var recheckAfter: Int

    /// The basis points of a whole share.
    static let basisPoints = 10_000

    /// A ramp; the defaults are off.
    public init(share: Double = 100, dailyCeiling: Int = 0, recheckAfter: Int = 21_600) {
        self.share = share
        self.dailyCeiling = dailyCeiling
        self.recheckAfter = recheckAfter
    }

    /// Whether the ramp can defer anyone: a share below 100, or a ceiling.
    public var isOn: Bool { share < 100 || dailyCeiling > 0 }

    /// Where the key `keyID` of the app `appID` falls, in basis points from 0 to 9999: HMAC-SHA256 keyed by the
    /// App ID over the key id's bytes, its first 8 bytes read as a fraction of 2⁶⁴ times 10,000.
    public static func place(appID: AppID, keyID: KeyID) -> Int {
        let key = SymmetricKey(data: Array("attestkit-ramp/\(appID)".utf8))
        let code = HMAC<SHA256>.authenticationCode(for: keyID.bytes, using: key)
        let value = code.prefix(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        return Int(value.multipliedFullWidth(by: UInt64(basisPoints)).high)
    }

    /// Whether the share admits the key `keyID` of `appID`: its place below the share in basis points. The share is
    /// read in basis points to six decimals: `1.1` is exactly 110 (in binary floating point `1.1 * 100` is just above
    /// 110, and admitted place 110 too).
    public func admits(appID: AppID, keyID: KeyID) -> Bool {
        share >= 100 || Double(Self.place(appID: appID, keyID: keyID)) < (share * 1_000_000).rounded() / 10_000
    }

    /// Refuses a share outside 0 to 100, a negative or huge ceiling, a recheck outside 1 second to a week.
    /// - Throws: ``ConfigurationError`` naming the `ramp.*` key.
    public func validate() throws(ConfigurationError) {
        guard share.isFinite, (0...100).contains(share) else {
            throw ConfigurationError("ramp.share", "is a percentage from 0 to 100 (100: every install)")
        }
        guard (0...1_000_000).contains(dailyCeiling) else {
            throw ConfigurationError("ramp.daily-ceiling", "is 0 (no ceiling) to 1000000 attestations a day per app")
        }
        guard (1...604_800).contains(recheckAfter) else {
            throw ConfigurationError("ramp.recheck-after", "is 1 to 604800 seconds")
        }
    }
}

extension FlowError.Code {
    /// An install the attestation ramp does not admit yet (`attestation_deferred`, HTTP 429 with `Retry-After`):
    /// outside the share, or over the app's daily ceiling.
    public static let attestationDeferred = FlowError.Code("attestation_deferred")
}

extension FlowError {
    /// Why the ramp deferred an install: the label of `attestkit_attestations_deferred_total`.
    public enum DeferralReason: String, Sendable, Hashable, CaseIterable {
        /// The install is outside the share (`ramp.share`).
        case share
        /// The app's ceiling of new attestations for the UTC day is reached (`ramp.daily-ceiling`).
        case ceiling
    }

    /// 429 `attestation_deferred`: not yet; retry after `retryAfter` seconds.
    public static func attestationDeferred(_ reason: DeferralReason, retryAfter: Int) -> FlowError {
        let why =
            switch reason {
            case .share: "this install is outside the share of installs admitted to attest now (ramp.share)"
            case .ceiling: "the app's ceiling of new attestations for today (UTC) is reached (ramp.daily-ceiling)"
            }
        return FlowError(
            .attestationDeferred, .rateLimited(retryAfter: retryAfter), "attestation deferred: \(why); retry later")
    }
}
