public import AttestKit
public import Configuration
import Foundation

/// A setting's type that swift-configuration converts from a string through its own protocol
/// (`ExpressibleByConfigString`), and that can say why a string is not one: swift-configuration's conversion
/// answers only `nil`, and a bad value must fail naming the key and why (``StrictConfigReader/value(_:as:)``).
protocol ConfigStringSetting: ExpressibleByConfigString {
    /// Why `configString`, which does not convert, is refused: the rest of a sentence that starts with the key
    /// (`is an http or https URL`). Never holds the value of a secret.
    static func refusal(of configString: String) -> String
}

/// `apps`: `TEAMID.bundle.id`, parsed with `AppID(validating:)` (a Team ID of 10 characters A-Z and 0-9).
@available(macOS 15.0, iOS 18.0, watchOS 11.0, tvOS 18.0, visionOS 2.0, *)
extension AppID: ExpressibleByConfigString, ConfigStringSetting {
    /// Parses an App ID as a configuration gives one: `AppID(validating:)`.
    public init?(configString: String) {
        guard let appID = try? AppID(validating: configString) else { return nil }
        self = appID
    }

    static func refusal(of configString: String) -> String {
        do {
            _ = try AppID(validating: configString)
            return "holds '\(configString)', which is not an App ID"
        } catch {
            return "holds '\(configString)', which is not an App ID: \(error.reason)"
        }
    }
}

/// `environments`: `production`, `development` or `both`.
@available(macOS 15.0, iOS 18.0, watchOS 11.0, tvOS 18.0, visionOS 2.0, *)
extension EnvironmentPolicy: ExpressibleByConfigString, ConfigStringSetting {
    /// `production`, `development` or `both`.
    public init?(configString: String) {
        switch configString {
        case "production": self = .production
        case "development": self = .development
        case "both": self = .both
        default: return nil
        }
    }

    static func refusal(of configString: String) -> String { "is production, development or both" }
}

/// `http.trusted-proxies`: an IP address or a CIDR network (not one of every address, which
/// ``ServerConfiguration/validate()`` refuses).
@available(macOS 15.0, iOS 18.0, watchOS 11.0, tvOS 18.0, visionOS 2.0, *)
extension IPNetwork: ExpressibleByConfigString, ConfigStringSetting {
    /// Parses `address/prefix` or a bare address (`IPNetwork.init(_:)`).
    public init?(configString: String) {
        self.init(configString)
    }

    static func refusal(of configString: String) -> String {
        "holds an entry that is not an IP address or CIDR network"
    }

}

/// An `http` or `https` URL with a host (`apple.devicecheck-url`, `apple.receipt-url`), through swift-configuration's
/// own conversion of `URL`; the text is kept as given.
@available(macOS 15.0, iOS 18.0, watchOS 11.0, tvOS 18.0, visionOS 2.0, *)
struct WebURL: ConfigStringSetting {
    /// The URL as the configuration gave it.
    let text: String

    init?(configString: String) {
        guard let url = URL(configString: configString), let scheme = url.scheme?.lowercased(),
            scheme == "http" || scheme == "https", let host = url.host, !host.isEmpty
        else { return nil }
        text = configString
    }

    var description: String { text }

    static func refusal(of configString: String) -> String { "is an http or https URL" }
}
