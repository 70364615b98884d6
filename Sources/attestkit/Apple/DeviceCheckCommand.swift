import AttestKitFlows
import ArgumentParser
import AsyncHTTPClient
import AttestKitApple
import AttestKitServer
import AttestKitTesting
import AttestKitWire
import Foundation

/// `attestkit devicecheck query|update|validate`: Apple's DeviceCheck two bits from the shell.
struct DeviceCheckCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "devicecheck",
        abstract: "Query or update a device's two DeviceCheck bits, or validate a device token, with Apple.",
        discussion: """
            Each call signs an ES256 provider token with the Apple key (never printed) and POSTs to Apple's \
            DeviceCheck in --environment, or to --base-url (attestkit mock-apple). The key and the service are the \
            settings of attestkit serve: the flags, else ATTESTKIT_APPLE_KEY_FILE, ATTESTKIT_APPLE_KEY_ID, \
            ATTESTKIT_APPLE_TEAM_ID, ATTESTKIT_APPLE_DEVICECHECK_ENVIRONMENT, ATTESTKIT_APPLE_DEVICECHECK_URL and \
            ATTESTKIT_APPLE_TIMEOUT, else the apple section of --config. --json prints the answers of the service's \
            /v1/devicecheck routes (with the state name of devicecheck.states when configured). Apple's errors \
            print as 'CODE (HTTP STATUS): reason - Apple said "TEXT"' and exit 1.
            """,
        subcommands: [Query.self, Update.self, Validate.self, ProviderToken.self]
    )

    /// The options every subcommand takes.
    struct Common: ParsableArguments {
        @Option(name: .long, help: "The device token: Base64 of DCDevice.generateToken(), no line breaks.")
        var deviceToken: String

        @OptionGroup var apple: AppleOptions

        @Flag(name: .long, help: "Print the answer as the service's /v1/devicecheck routes do, in JSON.")
        var json = false

        /// Runs `body` with a client, inside an HTTP client that is shut down afterwards.
        /// `body` also gets the state names of `devicecheck.states`, if configured.
        func withClient<Result: Sendable>(
            _ body: (DeviceCheckClient, DeviceCheckStates?) async throws -> Result
        ) async throws -> Result {
            let settings = try await apple.settings()
            let tokens = try settings.apple.tokenProvider()
            return try await HTTPClient.withHTTPClient(configuration: AppleOptions.httpConfiguration) { http in
                try await body(
                    DeviceCheckClient(
                        configuration: settings.apple.deviceCheckConfiguration, tokens: tokens, httpClient: http),
                    settings.deviceCheckStates)
            }
        }
    }

    /// `query`: print the bits and the month of their last update.
    struct Query: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print a device's two bits and the month they were last updated.",
            discussion: "A device whose bits were never set prints 'not found' (Apple's 'Failed to find bit state').")

        @OptionGroup var common: Common

        func run() async throws {
            let (result, states) = try await common.withClient { client, states in
                (try await client.query(deviceToken: common.deviceToken), states)
            }
            let state = states?.name(bit0: result.bit0, bit1: result.bit1)
            if common.json {
                // The answer of POST /v1/devicecheck/query, field for field.
                try AppleOptions.printJSON(
                    DeviceCheckQueryResponse(
                        found: result.isFound, bit0: result.bit0, bit1: result.bit1,
                        lastUpdateTime: result.lastUpdateTime?.description, state: state))
            } else if result.isFound {
                print("bit0: \(result.bit0)")
                print("bit1: \(result.bit1)")
                print("lastUpdateTime: \(result.lastUpdateTime?.description ?? "none")")
                if let state { print("state: \(state)") }
            } else {
                print("not found: the bits of this device were never set (both read as false)")
            }
        }
    }

    /// `update`: set one or both bits.
    struct Update: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Set one or both bits of a device.")

        @OptionGroup var common: Common

        @Option(name: .long, help: "The new bit 0: true or false.")
        var bit0: Bool?

        @Option(name: .long, help: "The new bit 1: true or false.")
        var bit1: Bool?

        func validate() throws {
            guard bit0 != nil || bit1 != nil else { throw ValidationError("give --bit0 and/or --bit1") }
        }

        func run() async throws {
            try await common.withClient { client, _ in
                try await client.update(deviceToken: common.deviceToken, bit0: bit0, bit1: bit1)
            }
            let changed = [bit0.map { "bit0=\($0)" }, bit1.map { "bit1=\($0)" }].compactMap { $0 }
            if common.json {
                try AppleOptions.printJSON(DeviceCheckUpdateResponse(updated: true))
            } else {
                print("updated: \(changed.joined(separator: " "))")
            }
        }
    }

    /// `validate`: ask Apple whether the device token is valid.
    struct Validate: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Ask Apple whether a device token is valid.")

        @OptionGroup var common: Common

        func run() async throws {
            try await common.withClient { client, _ in try await client.validate(deviceToken: common.deviceToken) }
            if common.json {
                try AppleOptions.printJSON(DeviceCheckValidateResponse(valid: true))
            } else {
                print("valid: Apple accepted the device token")
            }
        }
    }

    /// `provider-token` (hidden): write a provider token to a file, for cross-checking it with another JWT library.
    struct ProviderToken: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "provider-token",
            abstract: "Write a provider token (JWT) to a file (mode 0600), for interoperability checks.",
            shouldDisplay: false)

        @OptionGroup var apple: AppleOptions

        @Option(name: .long, help: "The file to write the token to.")
        var out: String

        func run() async throws {
            let token = try await apple.apple().tokenProvider().token()
            guard PrivateFile.save(Array(token.utf8), to: out) == 0 else {
                throw AppleCommandFailure("cannot write \(out)")
            }
            print("wrote a provider token to \(out)")
        }
    }
}
