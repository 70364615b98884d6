import AttestKitFlows
import ArgumentParser
import AsyncHTTPClient
import AttestKit
import AttestKitApple
import AttestKitServer
import AttestKitWire
import Configuration
import Foundation

/// The Apple key and services of the `devicecheck` and `receipt` commands, read as `attestkit serve` reads them:
/// these flags, then the `ATTESTKIT_APPLE_*` environment variables, then the file of `--config`, with the same keys
/// (`apple.key-file`, `apple.key-id`, `apple.team-id`, `apple.devicecheck-environment`, `apple.devicecheck-url`,
/// `apple.receipt-url`, `apple.timeout`). `--key-file`, `--key-id` and `--team-id` are older names of the flags.
struct AppleOptions: ParsableArguments {
    @Option(name: .long, help: "A configuration file, JSON or YAML, as for attestkit serve.")
    var config: String?

    @Option(name: .long, help: "A directory of secret files, as for attestkit serve (default: $ATTESTKIT_SECRETS_DIR).")
    var secretsDir: String?

    @Option(
        name: [.customLong("apple-key-file"), .customLong("key-file")],
        help: "The .p8 private key (PKCS#8 PEM) of a key with DeviceCheck enabled (apple.key-file).")
    var keyFile: String?

    @Option(
        name: [.customLong("apple-key-id"), .customLong("key-id")],
        help: "The key's 10-character key id, the JWT 'kid' (apple.key-id).")
    var keyId: String?

    @Option(
        name: [.customLong("apple-team-id"), .customLong("team-id")],
        help: "The Apple Developer Team ID, the JWT 'iss' (apple.team-id).")
    var teamId: String?

    @Option(
        name: .long,
        help: "development or production: DeviceCheck's host (apple.devicecheck-environment), or the receipt's.")
    var environment: String?

    @Option(
        name: .long,
        help: "Call this base URL instead of Apple's, e.g. attestkit mock-apple's http://127.0.0.1:PORT.")
    var baseUrl: String?

    @Option(name: .long, help: "Seconds one call may take, retries included (apple.timeout).")
    var timeout: Double?

    func validate() throws {
        if let timeout, !(timeout > 0 && timeout <= 600) {
            throw ValidationError("--timeout is between 0 and 600 seconds")
        }
        if let baseUrl, !(baseUrl.hasPrefix("http://") || baseUrl.hasPrefix("https://")) {
            throw ValidationError("--base-url is an http:// or https:// URL")
        }
        if let environment, AppAttestEnvironment(rawValue: environment) == nil {
            throw ValidationError("--environment is production or development, not \(environment)")
        }
    }

    /// The environment `--environment` names, if given.
    var chosenEnvironment: AppAttestEnvironment? { environment.flatMap(AppAttestEnvironment.init(rawValue:)) }

    /// The Apple settings of the flags, the environment and the configuration file, as `attestkit serve` reads
    /// them.
    ///
    /// - Throws: ``AppleCommandFailure`` naming the setting that is wrong, or saying where the key can be given.
    func apple(environment variables: [String: String] = ProcessInfo.processInfo.environment) async throws
        -> ServerConfiguration.Apple
    {
        try await settings(environment: variables).apple
    }

    /// The settings of the flags, the environment and the configuration file, as `attestkit serve` reads them,
    /// with the Apple section required (`devicecheck.states` names the bits as the service's answers do).
    ///
    /// - Throws: ``AppleCommandFailure`` naming the setting that is wrong, or saying where the key can be given.
    func settings(environment variables: [String: String] = ProcessInfo.processInfo.environment) async throws
        -> (apple: ServerConfiguration.Apple, deviceCheckStates: DeviceCheckStates?)
    {
        var flags: [String: String] = [:]
        flags["apple.key-file"] = keyFile
        flags["apple.key-id"] = keyId
        flags["apple.team-id"] = teamId
        flags["apple.devicecheck-environment"] = environment
        if let base = trimmedBaseURL {
            flags["apple.devicecheck-url"] = base
            flags["apple.receipt-url"] = base + AppAttestEnvironment.receiptExchangePath
        }
        flags["apple.timeout"] = timeout.map { String($0) }
        let configuration: ServerConfiguration
        do {
            configuration = try await ServerConfigurationSource.load(
                flags: flags.mapValues { ConfigValue(.string($0), isSecret: false) }, environment: variables,
                file: config, secretsDirectory: secretsDir)
        } catch {
            throw AppleCommandFailure("configuration: \(error)")
        }
        guard let apple = configuration.apple else {
            throw AppleCommandFailure(
                "no Apple key: give --apple-key-file, --apple-key-id and --apple-team-id, or set "
                    + "ATTESTKIT_APPLE_KEY_FILE, ATTESTKIT_APPLE_KEY_ID and ATTESTKIT_APPLE_TEAM_ID, or the "
                    + "apple section of --config, as for attestkit serve")
        }
        return (apple, configuration.deviceCheckStates)
    }

    /// Prints `message` as one line of the API's JSON (``WireJSON``: the service's field names, keys sorted).
    static func printJSON(_ message: some Encodable) throws {
        print(String(decoding: try WireJSON.encode(message), as: UTF8.self))
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
    private var trimmedBaseURL: String? {
        baseUrl.map { $0.hasSuffix("/") ? String($0.dropLast()) : $0 }
    }
}

/// A failure of an Apple command that is not about the arguments' syntax (printed without the usage text).
struct AppleCommandFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
