import ArgumentParser
import AsyncHTTPClient
import AttestKit
import AttestKitApple
import Foundation

/// `--key-file`, `--key-id`, `--team-id`: the `.p8` key that signs provider tokens.
struct AppleKeyOptions: ParsableArguments {
    @Option(name: .long, help: "The .p8 private key file (PKCS#8 PEM) of a key with DeviceCheck enabled.")
    var keyFile: String

    @Option(name: .long, help: "The key's 10-character key id (the JWT 'kid').")
    var keyId: String

    @Option(name: .long, help: "The Apple Developer Team ID (the JWT 'iss').")
    var teamId: String

    /// A token provider for the key. The key is read here and never printed.
    func tokens() throws -> AppleTokenProvider {
        let pem: String
        do {
            pem = try String(contentsOfFile: keyFile, encoding: .utf8)
        } catch {
            throw AppleCommandFailure("cannot read the key file \(keyFile)")
        }
        return try AppleTokenProvider(privateKeyPEM: pem, keyID: keyId, teamID: teamId)
    }
}

/// `--environment`, `--base-url`, `--timeout`: which Apple (or mock) to call, and how long to wait.
struct AppleServiceOptions: ParsableArguments {
    @Option(name: .long, help: "development or production.", transform: SimulationArguments.environment)
    var environment: AppAttestEnvironment

    @Option(
        name: .long, help: "Call this base URL instead of Apple's, e.g. attestkit mock-apple's http://127.0.0.1:PORT.")
    var baseUrl: String?

    @Option(name: .long, help: "Seconds one call may take, retries included.")
    var timeout: Double = 15

    func validate() throws {
        guard timeout > 0, timeout <= 600 else { throw ValidationError("--timeout is between 0 and 600 seconds") }
        if let baseUrl, !(baseUrl.hasPrefix("http://") || baseUrl.hasPrefix("https://")) {
            throw ValidationError("--base-url is an http:// or https:// URL")
        }
    }

    /// Deadline, size cap and retries.
    var transport: TransportConfiguration {
        TransportConfiguration(timeout: .milliseconds(Int(timeout * 1_000)))
    }

    /// The HTTP client's configuration: a refused connection counts as an attempt of the retry policy (instead of
    /// being retried by the pool until the deadline), and redirects are not followed (Apple does not redirect, and
    /// a provider token must not follow one).
    static var httpConfiguration: HTTPClient.Configuration {
        var configuration = HTTPClient.Configuration()
        configuration.connectionPool.retryConnectionEstablishment = false
        configuration.redirectConfiguration = .disallow
        return configuration
    }

    /// The base URL without a trailing slash, if one was given.
    var trimmedBaseURL: String? {
        baseUrl.map { $0.hasSuffix("/") ? String($0.dropLast()) : $0 }
    }
}

/// A failure of an Apple command that is not about the arguments' syntax (printed without the usage text).
struct AppleCommandFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
