import AttestKit
import AttestKitFlows
import Foundation
import Testing

/// The attestation ramp's share (#33): a stable, monotone, independent draw of installs per app, by key id.
@Suite("Attestation ramp")
struct AttestationRampTests {
    static let app = AttestationRampTests.appID("ABCDE12345.com.example.app")
    static let other = AttestationRampTests.appID("ABCDE12345.com.example.other")

    static func appID(_ text: String) -> AppID {
        do { return try AppID(text) } catch { fatalError("a test App ID: \(error)") }
    }

    /// `count` key ids drawn from a seeded generator (SplitMix64), the same on every run.
    static func keyIDs(_ count: Int, seed: UInt64 = 33) -> [KeyID] {
        var state = seed
        func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
        return (0..<count).compactMap { _ in
            var bytes: [UInt8] = []
            for _ in 0..<4 { withUnsafeBytes(of: next()) { bytes.append(contentsOf: $0) } }
            return try? KeyID(bytes: bytes)
        }
    }

    static let keys = keyIDs(20_000)

    @Test(
        "of 20,000 random key ids, the share admitted is within five standard deviations of the share",
        arguments: [0.5, 1, 5, 12.34, 50, 90, 99.99])
    func admittedFraction(share: Double) {
        let ramp = AttestationRamp(share: share)
        let admitted = Self.keys.filter { ramp.admits(appID: Self.app, keyID: $0) }.count
        let fraction = Double(admitted) / Double(Self.keys.count)
        let p = share / 100
        let sigma = (p * (1 - p) / Double(Self.keys.count)).squareRoot()
        #expect(abs(fraction - p) <= 5 * sigma, "admitted \(fraction) of a share of \(p) (σ \(sigma))")
    }

    @Test("a share is exact in basis points: the place p is refused at a share of p/100 % and admitted just above")
    func shareIsExactInBasisPoints() throws {
        // Places whose share p/100 times 100 is above p in floating point (1.1 × 100 = 110.00000000000001).
        let inexact = Self.keys.map { ($0, AttestationRamp.place(appID: Self.app, keyID: $0)) }.filter {
            Double($0.1) < Double($0.1) / 100 * 100
        }
        try #require(inexact.count > 100, "\(inexact.count)")
        for (key, place) in inexact {
            #expect(!AttestationRamp(share: Double(place) / 100).admits(appID: Self.app, keyID: key), "\(place)")
            #expect(AttestationRamp(share: Double(place + 1) / 100).admits(appID: Self.app, keyID: key), "\(place)")
        }
    }

    @Test("0 % admits no install, 100 % every one, and 100 % with no ceiling is off")
    func bounds() {
        #expect(Self.keys.prefix(2_000).allSatisfy { !AttestationRamp(share: 0).admits(appID: Self.app, keyID: $0) })
        #expect(Self.keys.prefix(2_000).allSatisfy { AttestationRamp(share: 100).admits(appID: Self.app, keyID: $0) })
        #expect(!AttestationRamp().isOn)
        #expect(AttestationRamp(share: 99.99).isOn && AttestationRamp(dailyCeiling: 1).isOn)
        let places = Self.keys.map { AttestationRamp.place(appID: Self.app, keyID: $0) }
        #expect(places.allSatisfy { (0..<10_000).contains($0) })
    }

    @Test("the same install always gets the same answer: the place depends on the app and the key id only")
    func stable() throws {
        for key in Self.keys.prefix(500) {
            let place = AttestationRamp.place(appID: Self.app, keyID: key)
            #expect(AttestationRamp.place(appID: Self.appID("ABCDE12345.com.example.app"), keyID: key) == place)
            let again = try KeyID(string: key.base64)
            #expect(AttestationRamp.place(appID: Self.app, keyID: again) == place)
        }
        // Pinned: replicas and releases draw the same installs (a change of the hash would re-draw everyone).
        let pinned = try KeyID(bytes: [UInt8](repeating: 7, count: 32))
        #expect(AttestationRamp.place(appID: Self.app, keyID: pinned) == Self.pinnedPlace)
    }

    static let pinnedPlace = 9_233

    @Test("raising the share only admits more installs: an admitted install stays admitted")
    func monotone() {
        let shares: [Double] = [0, 0.01, 0.5, 1, 2.5, 5, 10, 10.01, 25, 50, 75, 99, 99.99, 100]
        for key in Self.keys.prefix(4_000) {
            var admittedBefore = false
            for share in shares {
                let admitted = AttestationRamp(share: share).admits(appID: Self.app, keyID: key)
                #expect(admitted || !admittedBefore, "a key admitted below \(share) % is not admitted at it")
                admittedBefore = admitted
            }
        }
    }

    @Test("different apps draw independently: half of each app admits a quarter of the keys for both")
    func independentApps() {
        let ramp = AttestationRamp(share: 50)
        let both = Self.keys.filter {
            ramp.admits(appID: Self.app, keyID: $0) && ramp.admits(appID: Self.other, keyID: $0)
        }.count
        let fraction = Double(both) / Double(Self.keys.count)
        let sigma = (0.25 * 0.75 / Double(Self.keys.count)).squareRoot()
        #expect(abs(fraction - 0.25) <= 5 * sigma, "both apps admitted \(fraction)")
    }

    @Test(
        "settings out of range are refused, naming the setting",
        arguments: [
            (AttestationRamp(share: -0.01), "ramp.share"), (AttestationRamp(share: 100.01), "ramp.share"),
            (AttestationRamp(share: .nan), "ramp.share"), (AttestationRamp(share: .infinity), "ramp.share"),
            (AttestationRamp(dailyCeiling: -1), "ramp.daily-ceiling"),
            (AttestationRamp(dailyCeiling: 1_000_001), "ramp.daily-ceiling"),
            (AttestationRamp(recheckAfter: 0), "ramp.recheck-after"),
            (AttestationRamp(recheckAfter: 604_801), "ramp.recheck-after"),
        ])
    func refused(ramp: AttestationRamp, key: String) {
        #expect {
            try ramp.validate()
        } throws: { error in
            (error as? ConfigurationError)?.key == key
        }
    }

    @Test(
        "settings in range are accepted",
        arguments: [
            AttestationRamp(), AttestationRamp(share: 0), AttestationRamp(share: 0.01, dailyCeiling: 1_000_000),
            AttestationRamp(share: 12.345, dailyCeiling: 1, recheckAfter: 1), AttestationRamp(recheckAfter: 604_800),
        ])
    func accepted(ramp: AttestationRamp) throws {
        try ramp.validate()
    }
}
