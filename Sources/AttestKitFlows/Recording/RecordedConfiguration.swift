public import AttestKit
import SwiftASN1
import X509

/// The settings a recorded verification ran with: enough to build the same verifier, gate window and policy again.
public struct RecordedConfiguration: Sendable, Hashable, Codable {
    /// The accepted App IDs (`TEAMID.bundle.id`), for attestations.
    public var appIds: [String]?
    /// The accepted environments (`production`, `development`), for attestations.
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
    /// The deployment policy's allowed validation categories, for attestations.
    public var allowedValidationCategories: [UInt32]?
    /// The deployment policy's minimum OS version, for attestations.
    public var minimumOSVersion: String?
    /// The deployment policy's macOS App IDs, whose keys must carry Apple's macOS access policy, for attestations.
    public var macOSAppIds: [String]?
    /// Whether the deployment policy accepted devices that report no iOS 27 data (`unreported`), for attestations.
    public var acceptsUnreported: Bool?
    /// The deployment policy's minimum iOS 27 bundle version, for attestations.
    public var minimumBundleVersion: String?
    /// How far an assertion's timestamp may be from the server's clock, in seconds, for assertions.
    public var timestampWindow: Double?

    /// An empty configuration (the assertion gate's adds ``timestampWindow``).
    public init() {}

    /// The configuration of `verifier` under `policy`.
    public init(verifier: AttestationVerifier.Configuration, policy: DeploymentPolicy?) {
        appIds = verifier.appIDs.map(\.description)
        environments = AppAttestEnvironment.allCases.filter(verifier.environments.allows).map(\.rawValue)
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

    /// The verifier configuration recorded.
    /// - Throws: `bundle_invalid` when a value cannot be used.
    func verifierConfiguration() throws(FlowError) -> AttestationVerifier.Configuration {
        func invalid(_ why: String) -> FlowError { FlowError(.bundleInvalid, .malformed, why) }
        var apps: [AppID] = []
        for text in appIds ?? [] {
            do { apps.append(try AppID(text)) } catch { throw invalid("the App ID \(text) is malformed") }
        }
        var allowed: Set<AppAttestEnvironment> = []
        for name in environments ?? [] {
            guard let environment = AppAttestEnvironment(rawValue: name) else {
                throw invalid("unknown environment \(name)")
            }
            allowed.insert(environment)
        }
        let environmentPolicy: EnvironmentPolicy
        switch (allowed.contains(.production), allowed.contains(.development)) {
        case (true, true): environmentPolicy = .both
        case (true, false): environmentPolicy = .production
        case (false, true): environmentPolicy = .development
        case (false, false): throw invalid("no environment is recorded")
        }
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
            return try AttestationVerifier.Configuration(
                appIDs: apps, environments: environmentPolicy, leeway: leewayValue, receiptPolicy: receipts,
                receiptMaximumAge: receiptMaximumAge, trustAnchors: anchors)
        } catch {
            throw invalid("the recorded configuration cannot be used: \(error.reason)")
        }
    }

    /// The deployment policy recorded.
    var deploymentPolicy: DeploymentPolicy {
        DeploymentPolicy(
            allowedValidationCategories: allowedValidationCategories.map(Set.init), minimumOSVersion: minimumOSVersion,
            macOSAppIDs: Set((macOSAppIds ?? []).compactMap { try? AppID($0) }),
            acceptsUnreported: acceptsUnreported ?? false, minimumBundleVersion: minimumBundleVersion)
    }
}
