import AttestKit
import Crypto
public import Foundation

/// The policy vectors: attestations and assertions of the software Apple for every iOS 27 case the deployment
/// policies decide (a device before iOS 27, every validation category, bundle versions ordered differently as text
/// and as versions, a macOS key, a change of category), each with its expected outcome under a stated policy.
///
/// Made by this software Apple, never by Apple: they verify only with the roots written beside them. The set is
/// reproducible: a fixed seed derives the CA keys and every device key, a fixed time dates everything, and the
/// client data are fixed, so a new generation holds the same names, keys, authenticator data and outcomes; only the
/// ECDSA signatures (randomized) differ. `attestkit simulate policy-vectors --out DIR` writes them.
///
/// The expected outcomes are stated here, by hand, from the rules of `docs/apple-formats.md` §3a: they are what
/// the verifier and the policies must conclude, never what they concluded.
public enum PolicyVectors {
    /// The seed the software Apple and the devices are derived from.
    public static let seed = Array("AttestKit policy vectors (#33)".utf8)
    /// When every object is made and verified: 2026-10-01T12:00:00Z.
    public static let time = Date(timeIntervalSince1970: 1_790_856_000)
    /// The App ID of the iOS app of every vector but the macOS ones.
    public static let appID = "ABCDE12345.com.example.policy"
    /// The App ID of the macOS app.
    public static let macOSAppID = "ABCDE12345.com.example.policy.mac"

    /// The generated set.
    public struct Generated: Sendable {
        /// The software Apple that made the set (its roots verify it).
        public let apple: SoftwareApple
        /// Every vector, in a fixed order.
        public let vectors: [SimulatedVector]

        /// One entry of `index.json`.
        public struct IndexEntry: Codable, Sendable, Hashable {
            /// The vector's name.
            public var name: String
            /// `attestation` or `assertion`.
            public var kind: String
            /// `valid` or `reject:policy`.
            public var expect: String
            /// For a refusal, its code.
            public var expectCode: String?
            /// The file, relative to the index.
            public var file: String
            /// SHA-256 of the file, hex: a test refuses a file changed by hand.
            public var sha256: String
        }

        /// The files of the set, path relative to its directory and contents: `index.json`, one JSON line per
        /// vector under `attestation/` and `assertion/`, and the two roots, `attestation-root.pem` and
        /// `receipt-root.pem`.
        ///
        /// - Throws: An encoding error (none expected).
        public func files() throws -> [(path: String, contents: [UInt8])] {
            var files: [(path: String, contents: [UInt8])] = []
            var index: [IndexEntry] = []
            for vector in vectors {
                let path = "\(vector.kind)/\(vector.name).json"
                let contents = Array((try vector.jsonLine() + "\n").utf8)
                files.append((path, contents))
                index.append(
                    IndexEntry(
                        name: vector.name, kind: vector.kind, expect: vector.expect, expectCode: vector.expectCode,
                        file: path, sha256: Hex.encode(SHA256.hash(data: contents))))
            }
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
            files.append(("index.json", Array(try encoder.encode(index)) + Array("\n".utf8)))
            files.append(("attestation-root.pem", Array(apple.attestationRootPEM.utf8)))
            files.append(("receipt-root.pem", Array(apple.receiptRootPEM.utf8)))
            return files
        }
    }

    /// One policy of a case and the outcomes stated under it: `nil` for valid, else the refusal's code.
    struct Judged {
        let label: String
        let policy: SimulatedVector.Policy
        let attestation: String?
        let assertion: String?
    }

    /// Makes the set.
    ///
    /// - Throws: ``SoftwareAppleError`` if the software Apple cannot sign.
    public static func generate() throws(SoftwareAppleError) -> Generated {
        let apple = try SoftwareApple(seed: seed, at: time)
        var builder = Builder(apple: apple)
        try builder.preIOS27()
        try builder.categories()
        try builder.bundleVersions()
        try builder.macOS()
        try builder.categoryChanges()
        return Generated(apple: apple, vectors: builder.vectors)
    }

    /// Builds the vectors case by case; every device key is drawn from its own seed, so cases are independent.
    struct Builder {
        let apple: SoftwareApple
        var vectors: [SimulatedVector] = []
        private var nextKeySeed: UInt64 = 0x3333_0000

        init(apple: SoftwareApple) { self.apple = apple }

        // MARK: Cases

        mutating func preIOS27() throws(SoftwareAppleError) {
            let refused = AttestKitError.Code.policyValidationCategory.rawValue
            let tooOld = AttestKitError.Code.policyBundleVersion.rawValue
            try emit(
                "pre-ios27", configuration(iOS27: false),
                [
                    Judged(label: "no-policy", policy: .init(), attestation: nil, assertion: nil),
                    Judged(
                        label: "categories-app-store", policy: .init(validationCategories: ["app-store"]),
                        attestation: refused, assertion: refused),
                    Judged(
                        label: "categories-app-store-unreported",
                        policy: .init(validationCategories: ["app-store", "unreported"]), attestation: nil,
                        assertion: nil),
                    Judged(
                        label: "minimum-bundle-version-1", policy: .init(minimumBundleVersion: "1"),
                        attestation: tooOld, assertion: tooOld),
                    Judged(
                        label: "minimum-bundle-version-1-unreported",
                        policy: .init(validationCategories: ["app-store", "unreported"], minimumBundleVersion: "1"),
                        attestation: nil, assertion: nil),
                ])
        }

        mutating func categories() throws(SoftwareAppleError) {
            let refused = AttestKitError.Code.policyValidationCategory.rawValue
            let all = ValidationCategory.names.map(\.category.rawValue) + [10]
            for category in all {
                let label = ValidationCategory(category).name ?? "number-\(category)"
                let byName: Set<UInt32> = [
                    ValidationCategory.appStore.rawValue, ValidationCategory.testFlight.rawValue,
                ]
                let byNumber: Set<UInt32> = [ValidationCategory.appStore.rawValue, 10]
                try emit(
                    "category-\(label)", configuration(validationCategory: category),
                    [
                        Judged(
                            label: "categories-app-store-testflight",
                            policy: .init(validationCategories: ["app-store", "testflight"]),
                            attestation: byName.contains(category) ? nil : refused,
                            assertion: byName.contains(category) ? nil : refused),
                        Judged(
                            label: "categories-4-10", policy: .init(validationCategories: ["4", "10"]),
                            attestation: byNumber.contains(category) ? nil : refused,
                            assertion: byNumber.contains(category) ? nil : refused),
                    ])
            }
        }

        mutating func bundleVersions() throws(SoftwareAppleError) {
            let refused = AttestKitError.Code.policyBundleVersion.rawValue
            // (reported, meets the minimum 1.10, meets the minimum 1.9): as text "1.9" > "1.10" and "10" < "9".
            let versions: [(String, Bool, Bool)] = [
                ("1.9", false, true), ("1.10", true, true), ("1.10.0", true, true), ("1.9.9", false, true),
                ("2", true, true), ("10", true, true), ("1.01", false, false), ("1.0b3", false, false),
            ]
            for (version, meetsTen, meetsNine) in versions {
                try emit(
                    "bundle-version-\(version)", configuration(bundleVersion: version),
                    [
                        Judged(
                            label: "minimum-1.10", policy: .init(minimumBundleVersion: "1.10"),
                            attestation: meetsTen ? nil : refused, assertion: meetsTen ? nil : refused),
                        Judged(
                            label: "minimum-1.9", policy: .init(minimumBundleVersion: "1.9"),
                            attestation: meetsNine ? nil : refused, assertion: meetsNine ? nil : refused),
                    ])
            }
        }

        mutating func macOS() throws(SoftwareAppleError) {
            let refused = AttestKitError.Code.policyKeyAccessControl.rawValue
            let policy = SimulatedVector.Policy(macOSAppIds: [macOSAppID])
            // The access policy is checked at registration only: a key's assertions are not held to it.
            for (label, control, outcome) in [
                ("macos-key", SimulatedDevice.KeyAccessControl.macOS, nil),
                ("macos-app-ios-access-control", .iOS, refused), ("macos-app-no-access-control", .none, refused),
            ] as [(String, SimulatedDevice.KeyAccessControl, String?)] {
                try emit(
                    label, configuration(appID: macOSAppID, keyAccessControl: control),
                    [
                        Judged(label: "no-policy", policy: .init(), attestation: nil, assertion: nil),
                        Judged(label: "macos-app-ids", policy: policy, attestation: outcome, assertion: nil),
                    ])
            }
        }

        mutating func categoryChanges() throws(SoftwareAppleError) {
            let changed = AttestKitError.Code.policyValidationCategoryChanged.rawValue
            let refuse = SimulatedVector.Policy(validationCategoryChange: "refuse")
            let allow = SimulatedVector.Policy(validationCategoryChange: "allow")
            let appStore = ValidationCategory.appStore.rawValue
            let cases: [(String, SimulatedDevice.Configuration, SimulatedDevice.Configuration, String?)] = [
                (
                    "app-store-to-development", configuration(validationCategory: appStore),
                    configuration(validationCategory: ValidationCategory.development.rawValue), changed
                ),
                (
                    "app-store-to-unreported", configuration(validationCategory: appStore),
                    configuration(iOS27: false), changed
                ),
                (
                    "app-store-new-bundle-version", configuration(validationCategory: appStore),
                    configuration(bundleVersion: "2", validationCategory: appStore), nil
                ),
                (
                    "unreported-to-app-store", configuration(iOS27: false),
                    configuration(validationCategory: appStore), nil
                ),
            ]
            for (label, registered, asserting, outcome) in cases {
                try emit(
                    "category-change-\(label)", registered,
                    [
                        Judged(label: "change-refuse", policy: refuse, attestation: nil, assertion: outcome),
                        Judged(label: "change-allow", policy: allow, attestation: nil, assertion: nil),
                    ], assertingWith: asserting)
            }
        }

        // MARK: Emitting

        func configuration(
            appID: String = PolicyVectors.appID, iOS27: Bool = true, bundleVersion: String = "1",
            validationCategory: UInt32 = ValidationCategory.appStore.rawValue,
            keyAccessControl: SimulatedDevice.KeyAccessControl? = nil
        ) -> SimulatedDevice.Configuration {
            guard let app = try? AppID(appID) else { preconditionFailure("the policy vectors' App ID is invalid") }
            return SimulatedDevice.Configuration(
                appID: app, environment: .production, iOS27: iOS27, bundleVersion: bundleVersion,
                validationCategory: validationCategory, keyAccessControl: keyAccessControl)
        }

        /// Attests a key on a device running `configuration`, then asserts once from `assertingWith` (the same
        /// build by default; another build of the same app inherits the key), and emits one attestation and one
        /// assertion vector per judged policy.
        mutating func emit(
            _ name: String, _ configuration: SimulatedDevice.Configuration, _ judged: [Judged],
            assertingWith later: SimulatedDevice.Configuration? = nil
        ) throws(SoftwareAppleError) {
            let registering = SimulatedDevice(apple: apple, configuration: configuration)
            var device = registering
            nextKeySeed += 1
            var generator = SplitMix64(seed: nextKeySeed)
            let keyID = device.generateKey(using: &generator)
            let challenge = Array("policy vector \(name)".utf8)
            let clientDataHash = Array(SHA256.hash(data: challenge))
            let attestation = try device.attestKey(keyID, clientDataHash: clientDataHash, at: time)
            let registered = Self.reported(configuration)

            if let later { device = device.updated(to: later) }
            let clientData = Array(#"{"vector":"\#(name)","action":"assert"}"#.utf8)
            let assertion = try device.generateAssertion(keyID, clientDataHash: Array(SHA256.hash(data: clientData)))
            let asserted = Self.reported(device.configuration)

            for judge in judged {
                var attested = SimulatedVector.attestation(
                    attestation, device: registering, keyID: keyID,
                    clientDataHash: clientDataHash, challenge: challenge, fault: nil, at: time)
                attested.name = "simulated_policy_\(name)_attestation_\(judge.label)"
                Self.judge(&attested, judge.policy, judge.attestation, reported: registered)
                vectors.append(attested)

                var asserting = SimulatedVector.assertion(
                    assertion, device: device, keyID: keyID, clientData: clientData, previousCounter: 0, fault: nil)
                asserting.name = "simulated_policy_\(name)_assertion_\(judge.label)"
                asserting.verifyAt = SimulatedVector.timestamp(time)
                asserting.registered = registered
                Self.judge(
                    &asserting, judge.policy, judge.assertion, reported: Self.reported(asserted, for: registered))
                vectors.append(asserting)
            }
        }

        static func judge(
            _ vector: inout SimulatedVector, _ policy: SimulatedVector.Policy, _ code: String?,
            reported: SimulatedVector.Reported
        ) {
            vector.policy = policy
            vector.expect = code == nil ? "valid" : "reject:\(AttestKitError.Check.policy.rawValue)"
            vector.expectCode = code
            vector.reported = reported
            vector.notes =
                "Made by AttestKitTesting's software Apple (PolicyVectors), never by Apple; verifies only with the "
                + "roots beside it. Expected outcome stated by docs/apple-formats.md §3a."
        }

        static func reported(_ configuration: SimulatedDevice.Configuration) -> SimulatedVector.Reported {
            let control: String =
                switch configuration.keyAccessControl {
                case .none: "absent"
                case .iOS: "ios"
                case .macOS: "macos"
                case .policy, .extensionValue: "other"
                }
            guard configuration.iOS27Extensions else { return SimulatedVector.Reported(keyAccessControl: control) }
            return SimulatedVector.Reported(
                bundleVersion: configuration.bundleVersion, validationCategory: configuration.validationCategory,
                keyAccessControl: control)
        }

        /// An assertion's facts as the verifier must read them for a key whose attestation reported `registered`
        /// (`VerifiedAssertion.reported(for:)`): its extension map only when the attestation carried one (an
        /// assertion's map is believed only then, docs/apple-formats.md §3a), and no key access control (only the
        /// attestation's certificate carries one).
        static func reported(
            _ facts: SimulatedVector.Reported, for registered: SimulatedVector.Reported
        ) -> SimulatedVector.Reported {
            guard registered.bundleVersion != nil || registered.validationCategory != nil else {
                return SimulatedVector.Reported()
            }
            return SimulatedVector.Reported(
                bundleVersion: facts.bundleVersion, validationCategory: facts.validationCategory)
        }
    }
}
