import ArgumentParser
import AttestKitServer
import AttestKitStore
import Configuration
import Foundation
import Logging

/// `attestkit migrate`: applies the schema migrations this release knows, apart from `serve`.
struct MigrateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "migrate",
        abstract: "Apply the storage schema migrations this release knows, then exit.",
        discussion: """
            Reads the storage settings as attestkit serve does (storage.url from --storage, ATTESTKIT_STORAGE_URL, \
            --secrets-dir or --config; the PostgreSQL password from ATTESTKIT_STORAGE_PASSWORD or the secrets file \
            storage-password, never a flag), so it can run with the URL and password of a role that may change \
            the schema while the replicas run with storage.migrations=verify and a role that may not. Safe to run \
            while replicas serve and from several places at once: migrations are applied under a lock, each once. \
            A schema newer than this release is left alone when every newer migration is additive, and refused \
            otherwise. Prints the schema version found and left.
            """
    )

    @OptionGroup var sources: ConfigurationSourceOptions

    @Option(
        name: .long,
        help: """
            sqlite:PATH or postgres://user@host:port/db (storage.url); a PostgreSQL password from \
            ATTESTKIT_STORAGE_PASSWORD or the secrets file storage-password, never here.
            """)
    var storage: String?

    func run() async throws {
        var flags: [String: ConfigValue] = [:]
        if let storage {
            if let refusal = ServerConfigurationSource.commandLineRefusal(key: "storage.url", value: storage) {
                throw ValidationError("\(refusal)")
            }
            flags["storage.url"] = ConfigValue(.string(storage), isSecret: false)
        }
        let configuration: ServerConfiguration
        do {
            configuration = try await ServerConfigurationSource.load(
                flags: flags, file: sources.config, secretsDirectory: sources.secretsDir)
        } catch {
            throw ServeFailure("configuration: \(error)")
        }
        let logger = ServeCommand.logger(configuration)
        // A misspelt ATTESTKIT_STORAGE_URL would leave the default storage in place: say so before migrating it.
        ServeCommand.warnOfUnknownVariables(logger: logger)
        let version: SchemaVersion?
        do {
            version = try await configuration.migrateStorage(logger: logger)
        } catch {
            throw ServeFailure("migrate: \(error)")
        }
        let line = version.map { "attestkit migrate: \($0)" } ?? "attestkit migrate: memory: has no schema"
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }
}
