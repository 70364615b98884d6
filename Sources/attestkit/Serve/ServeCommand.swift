import ArgumentParser
import AttestKitServer
import Configuration
import Foundation
import Logging
import NIOCore
import ServiceLifecycle
import UnixSignals

/// `attestkit serve`: the AttestKit HTTP service.
struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Run the AttestKit HTTP service (challenges, attestations, assertions, DeviceCheck, key admin).",
        discussion: """
            With no arguments it listens on 127.0.0.1:8080 with SQLite under ./attestkit-data/. Settings come from \
            flags, then ATTESTKIT_* environment variables, then the files of --secrets-dir (or \
            ATTESTKIT_SECRETS_DIR: one file per setting, named like admin-token), then the JSON or YAML file of \
            --config, then defaults; every \
            setting has a dotted key (http.port, apps, storage.url, ...; see docs/service.md 'Configuration') \
            that --set KEY=VALUE sets from the command line. Secrets (admin.token, admin.previous-tokens, \
            backend.tokens, debug.tokens, storage.password, a storage URL's password) are read from ATTESTKIT_* \
            variables, --secrets-dir or --config only, never from a flag (command lines are visible to other \
            users). SIGINT or SIGTERM shuts down \
            gracefully: /ready answers 503 draining while requests are still served for shutdown.drain-period \
            (default 5 s; a second signal ends it), then the listener closes, in-flight requests finish, background \
            services stop, the store closes, all within shutdown.grace-period.
            """
    )

    @OptionGroup var sources: ConfigurationSourceOptions

    @Option(name: .long, help: "The address to bind (http.host).")
    var host: String?

    @Option(name: .long, help: "The port to bind, 0 for a free one (http.port).")
    var port: Int?

    @Option(name: .long, help: "Write the bound port to this file once listening.")
    var portFile: String?

    @Option(name: .long, help: "An allowed app, TEAMID.bundle.id (repeatable; apps).")
    var app: [String] = []

    @Option(name: .long, help: "production, development or both (environments).")
    var environments: String?

    @Option(
        name: .long,
        help: """
            sqlite:PATH, postgres://user@host:port/db or memory: (storage.url); a PostgreSQL password from \
            ATTESTKIT_STORAGE_PASSWORD or the secrets file storage-password, never here.
            """)
    var storage: String?

    @Option(name: .long, help: "The .p8 key of Apple's DeviceCheck and receipt services (apple.key-file).")
    var appleKeyFile: String?

    @Option(name: .long, help: "The key's id (apple.key-id).")
    var appleKeyId: String?

    @Option(name: .long, help: "The Apple Developer Team ID (apple.team-id).")
    var appleTeamId: String?

    @Option(
        name: .long,
        help: "TESTING ONLY: a PEM root to trust for attestations instead of Apple's (trust.attestation-root).")
    var trustAttestationRoot: String?

    @Option(
        name: .long, help: "TESTING ONLY: a PEM root to trust for receipts instead of Apple's (trust.receipt-root).")
    var trustReceiptRoot: String?

    @Option(name: .long, help: "trace, debug, info, notice, warning, error or critical (log.level).")
    var logLevel: String?

    @Option(name: .long, help: "auto (text on a terminal, JSON otherwise), json or text (log.format).")
    var logFormat: String?

    @Option(
        name: .customLong("set"),
        help: "Any setting as KEY=VALUE, e.g. --set rate-limit.attestations-per-ip=10 (repeatable).")
    var settings: [String] = []

    func run() async throws {
        let configuration: ServerConfiguration
        do {
            configuration = try await ServerConfigurationSource.load(
                flags: try flags(), file: sources.config, secretsDirectory: sources.secretsDir)
        } catch {
            throw ServeFailure("configuration: \(error)")
        }
        let logger = Self.logger(configuration)
        Self.warnOfUnknownVariables(logger: logger)
        let server = try AttestKitServer(configuration: configuration, logger: logger)
        // Signals are handled here rather than by the group: the first starts the graceful shutdown (the drain, then
        // the server), a second one cuts the drain short, one more cancels whatever still runs.
        var groupConfiguration = ServiceGroupConfiguration(services: [server, server.drain], logger: logger)
        groupConfiguration.maximumGracefulShutdownDuration = configuration.shutdown.gracePeriod
        let group = ServiceGroup(configuration: groupConfiguration)
        let signals = await UnixSignalsSequence(trapping: .sigterm, .sigint)
        do {
            try await withThrowingTaskGroup(of: Void.self) { tasks in
                tasks.addTask { try await group.run() }
                tasks.addTask { await Self.shutdown(on: signals, group: group, drain: server.drain, logger: logger) }
                let bound = try await server.boundPort()
                if let portFile { try Data("\(bound)\n".utf8).write(to: URL(fileURLWithPath: portFile)) }
                FileHandle.standardOutput.write(
                    Data("attestkit serve listening on http://\(configuration.host):\(bound)\n".utf8))
                // The group ends (shut down or failed), or the signals ask to stop now: either way nothing else runs.
                try await tasks.next()
                tasks.cancelAll()
            }
        } catch let error as IOError {
            throw ServeFailure(ListenFailure.describe(error, configuration: configuration))
        }
    }

    /// Follows SIGTERM and SIGINT: the first shuts `group` down gracefully (the drain first), a second one during the
    /// drain ends it (the listener closes, in-flight requests finish); a signal after that returns, so that the caller
    /// cancels what still runs. Returns also when cancelled.
    private static func shutdown(
        on signals: UnixSignalsSequence, group: ServiceGroup, drain: DrainService, logger: Logger
    ) async {
        var received = 0
        for await signal in signals {
            received += 1
            if received == 1 {
                logger.info("signal: shutting down", metadata: ["signal": "\(signal)"])
                await group.triggerGracefulShutdown()
            } else if received > 2 || !drain.endDrain(shutdownRequested: true) {
                // A second signal ends the drain, even one that came before the drain began; any after it, or one
                // once the drain is over, stops now.
                logger.notice("signal during shutdown: stopping now", metadata: ["signal": "\(signal)"])
                return
            }
        }
    }

    /// The flags as dotted settings, `--set` last so that it wins.
    private func flags() throws -> [String: ConfigValue] {
        var values: [String: String] = [:]
        values["http.host"] = host
        values["http.port"] = port.map(String.init)
        values["apps"] = app.isEmpty ? nil : app.joined(separator: ",")
        values["environments"] = environments
        values["storage.url"] = storage
        values["apple.key-file"] = appleKeyFile
        values["apple.key-id"] = appleKeyId
        values["apple.team-id"] = appleTeamId
        values["trust.attestation-root"] = trustAttestationRoot
        values["trust.receipt-root"] = trustReceiptRoot
        values["log.level"] = logLevel
        values["log.format"] = logFormat
        for setting in settings {
            guard let equals = setting.firstIndex(of: "="), equals != setting.startIndex else {
                throw ValidationError("--set takes KEY=VALUE, got '\(setting)'")
            }
            let key = String(setting[..<equals])
            values[key] = String(setting[setting.index(after: equals)...])
        }
        // Every secret is refused here, whichever flag carried it (--storage, --set): `ps` shows command lines.
        for (key, value) in values.sorted(by: { $0.key < $1.key }) {
            if let refusal = ServerConfigurationSource.commandLineRefusal(key: key, value: value) {
                throw ValidationError("\(refusal)")
            }
        }
        return values.mapValues { ConfigValue(.string($0), isSecret: false) }
    }

    /// The process's logger: JSON lines or text on standard error, at the configured level; `auto` writes text to
    /// a terminal and JSON elsewhere.
    static func logger(_ configuration: ServerConfiguration) -> Logger {
        let level = configuration.logLevel
        let json = configuration.logFormat.resolved(terminal: isatty(STDERR_FILENO) == 1) == .json
        LoggingSystem.bootstrap { label in
            guard json else {
                var handler = StreamLogHandler.standardError(label: label)
                handler.logLevel = level
                return handler
            }
            return JSONLogHandler(label: label, level: level)
        }
        var logger = Logger(label: "attestkit.server")
        logger.logLevel = level
        return logger
    }

    /// Logs a warning for each `ATTESTKIT_*` variable of the process's environment that names no setting (its name
    /// and the closest setting's variable, never its value): such a variable leaves its setting's default in place.
    static func warnOfUnknownVariables(logger: Logger) {
        for unknown in ServerConfigurationSource.unknownVariables(in: ProcessInfo.processInfo.environment) {
            var metadata: Logger.Metadata = ["variable": "\(unknown.name)"]
            if let suggestion = unknown.suggestion { metadata["did_you_mean"] = "\(suggestion)" }
            logger.warning("an ATTESTKIT_ environment variable names no setting and is ignored", metadata: metadata)
        }
    }
}

/// A failure of `attestkit serve` that is not about the arguments' syntax (printed without the usage text).
struct ServeFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
