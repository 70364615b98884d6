import AttestKitFlows
import Configuration
import Foundation
import Testing

@testable import AttestKitServer

/// The table of settings (``ServerSetting/all``) against the reads of ``ServerConfiguration`` and the two tables of
/// the documentation, so that a key spelled in one place and not the other fails here.
@Suite("One table of settings, checked against the reads and the documentation")
struct ServerSettingsTests {
    /// The root of the repository.
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// The table's types by key.
    static let tableTypes = Dictionary(
        ServerSetting.all.map { ($0.key, $0.type) }, uniquingKeysWith: { first, _ in first })

    @Test("Each key once; a default opens its documentation; the derived lists follow the table")
    func tableIsConsistent() {
        let keys = ServerSetting.all.map(\.key)
        #expect(Set(keys).count == keys.count)
        for setting in ServerSetting.all {
            if let defaultValue = setting.defaultValue {
                #expect(setting.documentation.hasPrefix("`\(defaultValue)`"), "\(setting.key)")
            }
            #expect(!setting.documentation.isEmpty && !setting.documentation.contains("|"), "\(setting.key)")
        }
        #expect(ServerConfiguration.configurationKeys == keys)
        #expect(ServerConfiguration.secretKeys == Set(ServerSetting.all.filter(\.isSecret).map(\.key)))
        #expect(
            ServerConfiguration.secretKeys.isSuperset(of: [
                "admin.token", "admin.previous-tokens", "backend.tokens", "storage.url",
            ]))
    }

    @Test("ServerConfiguration reads every setting of the table, as the table's type, and nothing else")
    func readsMatchTheTable() async throws {
        let log = StrictConfigReader.ReadLog()
        let reader = try await ServerConfigurationSource.reader(environment: [:])
        _ = try ServerConfiguration(settings: StrictConfigReader(reader: reader, readLog: log))
        let read = log.types
        #expect(Set(read.keys).subtracting(Self.tableTypes.keys).isEmpty, "read but not in the table")
        #expect(Set(Self.tableTypes.keys).subtracting(read.keys).isEmpty, "in the table but never read")
        for (key, type) in read {
            #expect(Self.tableTypes[key] == type, "\(key) is read as \(type)")
        }
    }

    @Test("The secrets of the table are read as secrets, the other settings not")
    func secretsFollowTheTable() async throws {
        let reporter = CollectingReporter()
        var environment: [String: String] = [:]
        for setting in ServerSetting.all where setting.isSecret {
            environment[setting.environmentVariable] =
                setting.key == "storage.url" ? "memory:" : "s3cret-value-0123456789-0123456789"
        }
        environment["ATTESTKIT_HTTP_HOST"] = "127.0.0.1"
        let reader = try await ServerConfigurationSource.reader(environment: environment, accessReporter: reporter)
        _ = try? ServerConfiguration(reader: reader)
        var secretness: [String: Bool] = [:]
        for event in reporter.events {
            guard let value = try? event.result.get() else { continue }
            secretness[event.metadata.key.description] = value.isSecret
        }
        for setting in ServerSetting.all where environment[setting.environmentVariable] != nil {
            #expect(secretness[setting.key] == setting.isSecret, "\(setting.key)")
        }
    }

    @Test("A reader scoped to a section reads its keys, names whole keys in errors and takes secrecy from the table")
    func scopedReader() async throws {
        let reporter = CollectingReporter()
        let reader = try await ServerConfigurationSource.reader(
            environment: [
                "ATTESTKIT_TOKENS_TTL": "soon", "ATTESTKIT_TOKENS_ISSUER": "issuer",
                "ATTESTKIT_ADMIN_TOKEN": "s3cret-admin-token-0123456789",
            ],
            accessReporter: reporter)
        let log = StrictConfigReader.ReadLog()
        let settings = StrictConfigReader(reader: reader, readLog: log)
        let tokens = settings.scoped(to: "tokens")
        #expect(tokens.key("ttl") == "tokens.ttl")
        #expect(try tokens.string("issuer") == "issuer")
        let error = #expect(throws: ServerConfigurationError.self) { try tokens.double("ttl") }
        #expect(error?.key == "tokens.ttl" && error?.reason.contains("soon") == false)
        #expect(try settings.scoped(to: "admin").string("token") == "s3cret-admin-token-0123456789")
        #expect(log.types == ["tokens.issuer": .string, "tokens.ttl": .number, "admin.token": .string])
        let adminReads = reporter.events.filter { $0.metadata.key.description == "admin.token" }
        #expect(!adminReads.isEmpty)
        for event in adminReads {
            #expect((try? event.result.get())??.isSecret == true)
        }
    }

    @Test("The table of ServerConfiguration.init(reader:)'s documentation is the table of settings, row by row")
    func doccTableMatches() throws {
        let path = Self.root.appendingPathComponent(
            "Sources/AttestKitServer/Configuration/ServerConfiguration+Reader.swift")
        let source = try String(contentsOf: path, encoding: .utf8)
        let rows = source.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { $0.hasPrefix("/// | `") }.map { String($0.dropFirst(4)) }
        let expected = ServerSetting.all.map(\.documentationRow)
        #expect(rows == expected, "write the rows as: \n\(expected.map { "/// \($0)" }.joined(separator: "\n"))")
    }

    @Test("docs/service.md's configuration table lists each setting once, with its variable and secrecy")
    func serviceTableMatches() throws {
        let text = try String(
            contentsOf: Self.root.appendingPathComponent("docs/service.md"), encoding: .utf8)
        let documented = try Self.documentedSettings(markdown: text)
        let table = ServerSetting.all
        #expect(documented.map(\.key).count == Set(documented.map(\.key)).count, "a key documented twice")
        #expect(Set(documented.map(\.key)) == Set(table.map(\.key)))
        let byKey = Dictionary(table.map { ($0.key, $0) }, uniquingKeysWith: { first, _ in first })
        for row in documented {
            guard let setting = byKey[row.key] else { continue }
            #expect(row.isSecret == setting.isSecret, "\(row.key): secrecy")
            if row.variable.hasSuffix("*") {
                #expect(setting.environmentVariable.hasPrefix(row.variable.dropLast()), "\(row.key): variable")
            } else {
                #expect(row.variable == setting.environmentVariable, "\(row.key): variable")
            }
        }
    }

    @Test("The service.md check reads grouped cells, and catches a missing key, a wrong variable and lost secrecy")
    func serviceTableCheckBites() throws {
        let markdown = """
            | Key | Environment variable | Default |
            |-----|----------------------|---------|
            | `admin.token` (secret) | `ATTESTKIT_ADMIN_TOKEN` | none |
            | `tokens.issuer`, `tokens.ttl` | `ATTESTKIT_TOKENS_*` | none |

            """
        let rows = try Self.documentedSettings(markdown: markdown)
        #expect(rows.map(\.key) == ["admin.token", "tokens.issuer", "tokens.ttl"])
        #expect(rows.map(\.isSecret) == [true, false, false])
        #expect(rows.map(\.variable) == ["ATTESTKIT_ADMIN_TOKEN", "ATTESTKIT_TOKENS_*", "ATTESTKIT_TOKENS_*"])
        #expect(throws: (any Error).self) { try Self.documentedSettings(markdown: "no table") }
    }

    /// A setting as a row of docs/service.md names it.
    struct DocumentedSetting {
        var key: String
        var variable: String
        var isSecret: Bool
    }

    /// The settings of the markdown table under `| Key | Environment variable | Default |`: a cell of keys may name
    /// several, comma-separated, each in backquotes, with `(secret)` after the last for secret ones.
    static func documentedSettings(markdown: String) throws -> [DocumentedSetting] {
        let lines = markdown.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        guard let header = lines.firstIndex(of: "| Key | Environment variable | Default |") else {
            throw TableMissing()
        }
        var settings: [DocumentedSetting] = []
        for line in lines[(header + 2)...] {
            guard line.hasPrefix("|") else { break }
            let cells = line.split(separator: "|", omittingEmptySubsequences: false).dropFirst()
                .map { $0.trimmingCharacters(in: .whitespaces) }
            guard cells.count >= 3 else { throw TableMissing() }
            let isSecret = cells[0].hasSuffix("(secret)")
            let keyCell = isSecret ? String(cells[0].dropLast("(secret)".count)) : cells[0]
            let variable = cells[1].trimmingCharacters(in: CharacterSet(charactersIn: "`"))
            for name in keyCell.split(separator: ",") {
                let key = name.trimmingCharacters(in: .whitespaces).trimmingCharacters(
                    in: CharacterSet(charactersIn: "`"))
                settings.append(DocumentedSetting(key: key, variable: variable, isSecret: isSecret))
            }
        }
        return settings
    }

    /// The markdown holds no configuration table.
    struct TableMissing: Error {}
}
