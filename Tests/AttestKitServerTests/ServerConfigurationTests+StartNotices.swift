import AttestKit
import AttestKitServer
import Configuration
import Logging
import Testing

extension ServerConfigurationTests {
    @Test("the start notices: a risk threshold on a replica without an Apple key is named, with the key it is not")
    func startNotices() async throws {
        func messages(_ flags: [String: String]) async throws -> [String] {
            let loaded = try await ServerConfigurationSource.load(
                flags: flags.mapValues { ConfigValue(.string($0), isSecret: false) }, environment: [:], file: nil)
            return loaded.startNotices.map(\.message)
        }
        let plain = try await messages([:])
        #expect(plain.contains { $0.hasPrefix("no Apple key") })
        #expect(plain.contains { $0.hasPrefix("no app is configured") })
        #expect(!plain.contains { $0.contains("risk-metric-threshold") })
        #expect(!plain.contains { $0.contains("TEST CERTIFICATE AUTHORITY") })

        let threshold = try await ServerConfigurationSource.load(
            flags: ["policy.risk-metric-threshold": ConfigValue(.string("5"), isSecret: false)], environment: [:],
            file: nil)
        let notice = try #require(threshold.startNotices.first { $0.message.contains("risk-metric-threshold") })
        #expect(notice.level == .warning)
    }
}
