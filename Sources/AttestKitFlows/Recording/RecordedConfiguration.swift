public import AttestKit
import SwiftASN1
import X509

/// The settings a recorded verification ran with: enough to build the same verifier, gate window and policy again.
public struct RecordedConfiguration: Sendable, Hashable, Codable {
    /// The accepted App IDs (`TEAMID.bundle.id`): for attestations, and for assertions whose gate accepts only the
    /// keys of some apps (``KeyAcceptance``).
    public var appIds: [String]?
    /// The accepted environments (`production`, `development`): for attestations, and for assertions whose gate
    /// accepts only the keys of some environments.
    public var environments: [String]?
    /// The clock-skew leeway of certificate and receipt windows, in seconds.
    public var leeway: Double?
    /// `require`, `verifyIfPresent` or `ignore`.
    public var receiptPolicy: String?
    /// The maximum age of an embedded receipt, in seconds.
    public var receiptMaximumAge: Double?
    /// The attestation root as PEM when it is not Apple's (the software Apple); `nil` for Apple's pinned root.
    public var attestationRoot: String?
    /// The receipt root as PEM when it is not Apple's; `nil` for Apple's pinned root.
    public var receiptRoot: String?
    /// The deployment policy's allowed validation categories, for attestations and assertions.
    public var allowedValidationCategories: [UInt32]?
    /// The deployment policy's minimum OS version, for attestations.
    public var minimumOSVersion: String?
    /// The deployment policy's macOS App IDs, whose keys must carry Apple's macOS access policy, for attestations.
    public var macOSAppIds: [String]?
    /// Whether the deployment policy accepted devices that report no iOS 27 data (`unreported`), for attestations and
    /// assertions.
    public var acceptsUnreported: Bool?
    /// The deployment policy's minimum iOS 27 bundle version, for attestations and assertions.
    public var minimumBundleVersion: String?
    /// What the deployment policy did with an assertion whose validation category changed since its key's
    /// registration (`refuse`, `step-up`, `allow`), for assertions. Its presence says the policy was recorded: an
    /// assertion bundle without it replays without a policy (the gate had none, or the bundle predates it).
    public var validationCategoryChange: String?
    /// How far an assertion's timestamp may be from the server's clock, in seconds, for assertions.
    public var timestampWindow: Double?

    /// An empty configuration (the assertion gate's adds ``timestampWindow``).
    public init() {}

    /// The configuration of `verifier` under `policy`.
    public init(verifier: AttestationVerifier.Configuration, policy: DeploymentPolicy?) {
        appIds = verifier.appIDs.map(\.description)
        environments = Self.names(verifier.environments)
        leeway = verifier.leeway
        receiptPolicy =
            switch verifier.receiptPolicy {
            case .require: "require"
            case .verifyIfPresent: "verifyIfPresent"
            case .ignore: "ignore"
            }
        receiptMaximumAge = verifier.receiptMaximumAge
        if !verifier.trustAnchors.isApple {
            attestationRoot = try? verifier.trustAnchors.attestation.certificate.serializeAsPEM().pemString
            receiptRoot = try? verifier.trustAnchors.receipt.certificate.serializeAsPEM().pemString
        }
        allowedValidationCategories = policy?.allowedValidationCategories.map { $0.sorted() }
        minimumOSVersion = policy?.minimumOSVersion
        if let macOS = policy?.macOSAppIDs, !macOS.isEmpty { macOSAppIds = macOS.map(\.description).sorted() }
        acceptsUnreported = policy?.acceptsUnreported == true ? true : nil
        minimumBundleVersion = policy?.minimumBundleVersion
    }

    /// The configuration of an assertion gate: its `timestampWindow`, the apps and environments of `acceptance` (when
    /// the gate has one) and the rules of `policy` that assertions are held to (when the recorder has one).
    public init(timestampWindow: Double, acceptance: KeyAcceptance?, policy: DeploymentPolicy?) {
        self.timestampWindow = timestampWindow
        if let acceptance {
            appIds = acceptance.appIDs.map(\.description).sorted()
            environments = Self.names(acceptance.environments)
        }
        if let policy {
            allowedValidationCategories = policy.allowedValidationCategories.map { $0.sorted() }
            acceptsUnreported = policy.acceptsUnreported ? true : nil
            minimumBundleVersion = policy.minimumBundleVersion
            validationCategoryChange = policy.validationCategoryChange.rawValue
        }
    }

    /// The verifier configuration recorded.
    /// - Throws: `bundle_invalid` when a value cannot be used.
    func verifierConfiguration() throws(FlowError) -> AttestationVerifier.Configuration {
        func invalid(_ why: String) -> FlowError { FlowError(.bundleInvalid, .malformed, why) }
        let apps = try Self.apps(appIds, "App ID")
        let environmentPolicy = try recordedEnvironments()
        let receipts: AttestationVerifier.ReceiptPolicy
        switch receiptPolicy ?? "require" {
        case "require": receipts = .require
        case "verifyIfPresent": receipts = .verifyIfPresent
        case "ignore": receipts = .ignore
        default: throw invalid("unknown receipt policy")
        }
        let leewayValue = leeway ?? 60
        guard leewayValue.isFinite, leewayValue >= 0, receiptMaximumAge?.isFinite ?? true else {
            throw invalid("a recorded time setting is not a number of seconds")
        }
        do throws(AttestKitError) {
            var anchors: TrustAnchors?
            switch (attestationRoot, receiptRoot) {
            case (nil, nil): anchors = nil
            case (let attestation?, let receipt?):
                anchors = TrustAnchors(
                    attestation: try TrustAnchor(pem: attestation), receipt: try TrustAnchor(pem: receipt))
            default: throw AttestKitError(.trustAnchorPinMismatch, "both roots or neither are recorded")
            }
            // The service refuses to start with production keys and roots that are not Apple's: a bundle naming both
            // was written by hand, and replaying it would let its own roots vouch for a forged chain.
            if environmentPolicy.allows(.production), let anchors, !anchors.isApple {
                throw AttestKitError(
                    .trustAnchorPinMismatch, "production keys with roots that are not Apple's, which no service runs")
            }
            return try AttestationVerifier.Configuration(
                appIDs: apps, environments: environmentPolicy, leeway: leewayValue, receiptPolicy: receipts,
                receiptMaximumAge: receiptMaximumAge, trustAnchors: anchors)
        } catch {
            throw invalid("the recorded configuration cannot be used: \(error.reason)")
        }
    }

    /// The deployment policy recorded.
    /// - Throws: `bundle_invalid` for a macOS App ID, a minimum version or a validation category change that is not
    ///   one (the service refuses such a configuration, so only an edited bundle has it).
    func deploymentPolicy() throws(FlowError) -> DeploymentPolicy {
        let macOS = Set(try Self.apps(macOSAppIds, "macOS App ID"))
        var change = DeploymentPolicy.ValidationCategoryChange.refuse
        if let text = validationCategoryChange {
            guard let recorded = DeploymentPolicy.ValidationCategoryChange(rawValue: text) else {
                throw FlowError(.bundleInvalid, .malformed, "unknown validation category change \(text)")
            }
            change = recorded
        }
        let policy = DeploymentPolicy(
            allowedValidationCategories: allowedValidationCategories.map(Set.init), minimumOSVersion: minimumOSVersion,
            macOSAppIDs: macOS, acceptsUnreported: acceptsUnreported ?? false,
            minimumBundleVersion: minimumBundleVersion, validationCategoryChange: change)
        do throws(ConfigurationError) {
            try policy.validateMinimumVersions()
        } catch {
            throw FlowError(.bundleInvalid, .malformed, "the recorded \(error.key) \(error.reason)")
        }
        return policy
    }

    /// The key acceptance recorded for an assertion: `nil` when the gate had none (neither list recorded).
    /// - Throws: `bundle_invalid` for an App ID or environment that is not one, or only one of the two lists.
    func keyAcceptance() throws(FlowError) -> KeyAcceptance? {
        guard appIds != nil || environments != nil else { return nil }
        guard appIds != nil, environments != nil else {
            throw FlowError(.bundleInvalid, .malformed, "the accepted apps and environments are recorded together")
        }
        return KeyAcceptance(appIDs: try Self.apps(appIds, "App ID"), environments: try recordedEnvironments())
    }

    /// The names of the environments `policy` allows, as recorded.
    private static func names(_ policy: EnvironmentPolicy) -> [String] {
        AppAttestEnvironment.allCases.filter(policy.allows).map(\.rawValue)
    }

    /// The App IDs of a recorded list (`kind` names it in the error).
    /// - Throws: `bundle_invalid` for one that is malformed.
    private static func apps(_ texts: [String]?, _ kind: String) throws(FlowError) -> [AppID] {
        var apps: [AppID] = []
        for text in texts ?? [] {
            do {
                apps.append(try AppID(text))
            } catch {
                throw FlowError(.bundleInvalid, .malformed, "the \(kind) \(text) is malformed")
            }
        }
        return apps
    }

    /// The environments recorded.
    /// - Throws: `bundle_invalid` for an unknown one, or none.
    private func recordedEnvironments() throws(FlowError) -> EnvironmentPolicy {
        var allowed: Set<AppAttestEnvironment> = []
        for name in environments ?? [] {
            guard let environment = AppAttestEnvironment(rawValue: name) else {
                throw FlowError(.bundleInvalid, .malformed, "unknown environment \(name)")
            }
            allowed.insert(environment)
        }
        switch (allowed.contains(.production), allowed.contains(.development)) {
        case (true, true): return .both
        case (true, false): return .production
        case (false, true): return .development
        case (false, false): throw FlowError(.bundleInvalid, .malformed, "no environment is recorded")
        }
    }
}
