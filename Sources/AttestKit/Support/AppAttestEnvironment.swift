/// The App Attest environment a key was attested in, read from the AAGUID of its authenticator data.
///
/// TestFlight, App Store and Enterprise builds are always `production`; other builds follow the
/// `com.apple.developer.devicecheck.appattest-environment` entitlement.
public enum AppAttestEnvironment: String, Sendable, Hashable, CaseIterable, Codable {
    /// AAGUID `appattest` followed by seven zero bytes.
    case production
    /// AAGUID `appattestdevelop`.
    case development

    /// The 16-byte AAGUID Apple writes for this environment.
    public var aaguid: [UInt8] {
        switch self {
        case .production: Array("appattest".utf8) + [UInt8](repeating: 0, count: 7)
        case .development: Array("appattestdevelop".utf8)
        }
    }

    /// The environment whose AAGUID is exactly `bytes`, or `nil`. Compares all 16 bytes: the
    /// production value's trailing zero bytes are significant.
    public init?(aaguid bytes: some Collection<UInt8>) {
        guard let match = Self.allCases.first(where: { $0.aaguid.elementsEqual(bytes) }) else { return nil }
        self = match
    }

    /// The name Apple's receipts use in field 7 (`production` or `sandbox`).
    public var receiptName: String {
        switch self {
        case .production: "production"
        case .development: "sandbox"
        }
    }
}

/// Which environments a verifier accepts. An explicit choice: there is no default.
public struct EnvironmentPolicy: Sendable, Hashable, CustomStringConvertible {
    /// The accepted environments; never empty.
    public let allowed: Set<AppAttestEnvironment>

    private init(_ allowed: Set<AppAttestEnvironment>) { self.allowed = allowed }

    /// Only keys attested in production (App Store, TestFlight, Enterprise builds).
    public static let production = EnvironmentPolicy([.production])
    /// Only keys attested in development.
    public static let development = EnvironmentPolicy([.development])
    /// Both environments. Keep production and development keys apart downstream.
    public static let both = EnvironmentPolicy([.production, .development])

    /// Whether `environment` is accepted.
    public func allows(_ environment: AppAttestEnvironment) -> Bool { allowed.contains(environment) }

    /// `production`, `development` or `production+development`.
    public var description: String {
        allowed.count == 2 ? "production+development" : (allowed.first?.rawValue ?? "none")
    }
    /// Why a key attested in `environment` is refused, and what changes that: the environment the key was attested
    /// in (what its AAGUID says), the environments accepted, the `environments` setting and the app's
    /// `com.apple.developer.devicecheck.appattest-environment` entitlement. The first answer an app built from Xcode
    /// gets from a service that accepts production only, so it explains itself; it names nothing secret (the
    /// accepted environments are the deployment's, not a credential).
    func refusal(of environment: AppAttestEnvironment) -> String {
        let entitlement = "com.apple.developer.devicecheck.appattest-environment"
        switch environment {
        case .development:
            return "the key was attested in development (a development-signed build, such as one run from Xcode, "
                + "attests there unless its entitlement \(entitlement) is production) and this verifier accepts "
                + "\(self) only: allow development in the `environments` setting (development, or both), or set "
                + "the app's entitlement to production"
        case .production:
            return "the key was attested in production (TestFlight, App Store and Enterprise builds always are, and "
                + "so is a development-signed build whose entitlement \(entitlement) is production) and this verifier "
                + "accepts \(self) only: allow production in the `environments` setting (production, or both), or "
                + "set a development build's entitlement to development"
        }
    }
}
