import AttestKitFlows
import AttestKit
import AttestKitServer
import AttestKitTesting
import Configuration
import Foundation
import Testing

/// `http.read-timeout`, `http.idle-timeout` and `http.max-connections` through the configuration layers, and the
/// maximum derived from the descriptor limit.
@Suite("Connection limits configuration")
struct ConnectionLimitsConfigurationTests {
    @Test("defaults: 10 s to read a request, 30 s idle, the maximum derived from the descriptor limit")
    func defaults() async throws {
        let loaded = try await ServerConfigurationSource.load(flags: [:], environment: [:], file: nil)
        #expect(loaded.connectionLimits == .init(readTimeout: .seconds(10), idleTimeout: .seconds(30)))
        #expect(loaded.connectionLimits.maxConnections == nil)
    }

    @Test("flags over environment over file, with fractions of a second")
    func layering() async throws {
        let file = try TemporaryFile(
            json: #"{"http": {"read-timeout": 5, "idle-timeout": 20.5, "max-connections": 500}}"#)
        let environment = ["ATTESTKIT_HTTP_READ_TIMEOUT": "2.25", "ATTESTKIT_HTTP_MAX_CONNECTIONS": "400"]
        let flags: [String: ConfigValue] = ["http.max-connections": "300"]
        let loaded = try await ServerConfigurationSource.load(flags: flags, environment: environment, file: file.path)
        #expect(loaded.connectionLimits.readTimeout == .milliseconds(2_250))
        #expect(loaded.connectionLimits.idleTimeout == .milliseconds(20_500))
        #expect(loaded.connectionLimits.maxConnections == 300)
    }

    @Test(
        "the default maximum keeps a reserve of an eighth of the limit, 64 to 1024 descriptors",
        arguments: [(1_024, 896), (256, 192), (128, 64), (64, 32), (20_000, 18_976), (1_048_576, 1_047_552)])
    func defaultMaximum(soft: Int, maximum: Int) {
        #expect(DescriptorLimit(soft: soft, hard: nil).defaultMaxConnections == maximum)
    }

    @Test("the server raises the soft descriptor limit to the hard one")
    func raised() throws {
        let limit = try #require(DescriptorLimit.raised())
        if let hard = limit.hard { #expect(limit.soft == hard || limit.soft >= 10_240) }
        #expect(DescriptorLimit.current() == limit)
    }

    @Test("a maximum not below the descriptor limit is refused when the server is created")
    func maximumAtTheLimit() throws {
        let limit = try #require(DescriptorLimit.current())
        try #require(limit.soft < 1_000_000)
        let apple = try SoftwareApple()
        var configuration = ServerConfiguration(
            appIDs: [try AppID("TEAMID1234.com.example.app")], environments: .development, storageURL: "memory:",
            trustAnchors: apple.trustAnchors)
        configuration.connectionLimits.maxConnections = limit.soft
        #expect { try AttestKitServer(configuration: configuration) } throws: { error in
            (error as? ServerConfigurationError)?.key == "http.max-connections"
        }
        configuration.connectionLimits.maxConnections = limit.soft - 1
        #expect(throws: Never.self) { try AttestKitServer(configuration: configuration) }
    }
}
