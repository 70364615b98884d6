import AttestKit
import AttestKitFlows
import AttestKitStore
import AttestKitWire
import Crypto
import Foundation
import Testing

extension TokenServiceTests {
    /// A key stranded by a configuration change (its App ID or environment no longer accepted) is refused at its
    /// next assertion; the tokens it bought before must stop counting with it.
    @Test(
        "a key whose App ID or environment is no longer accepted: its session tokens introspect inactive and are refused",
        arguments: FlowBench.strandings)
    func strandedKeyTokens(acceptance: KeyAcceptance, code: String) async throws {
        let bench = try FlowBench()
        let device = try await bench.registeredDevice()
        let record = try #require(try await bench.store.key(device.keyID))
        let configuration = try Self.configuration()
        let before = TokenService(
            configuration: configuration, store: bench.store,
            keyStanding: KeyStanding(acceptance: KeyAcceptance(appIDs: [FlowBench.appID], environments: .development)))
        let after = TokenService(
            configuration: configuration, store: bench.store, keyStanding: KeyStanding(acceptance: acceptance))
        var generator = SystemRandomNumberGenerator()
        let kept = try before.issue(for: record, using: &generator)
        let stranded = try before.issue(for: record, using: &generator)
        #expect(try await before.introspect(stranded.token).active)

        #expect(try await after.introspect(stranded.token) == .inactive)
        let error = await #expect(throws: FlowError.self) { try await after.consume(stranded.token) }
        #expect(error?.code.rawValue == code && error?.kind.httpStatus == 403)
        // Refused before consumption: the token is still unconsumed for a configuration that accepts the key.
        #expect(try await before.consume(stranded.token) == stranded.claims)
        #expect(try await before.consume(kept.token) == kept.claims)
    }
}

extension TokenServiceTests {
    /// A token bought without a key (a debug or a DeviceCheck token) names its App ID only: once `apps` no longer
    /// accepts it, the token stops counting as a key's would.
    @Test("a debug-trust token of an App ID no longer accepted introspects inactive and is refused app_not_accepted")
    func strandedAppWithoutKey() async throws {
        let key = P256.Signing.PrivateKey()
        let store = MemoryAttestationStore()
        let debugTokens = try DebugTokens([DebugTokenSessionTests.debugToken], environments: .development)
        func service(accepting apps: [AppID]) throws -> TokenService {
            TokenService(
                configuration: try TokenService.Configuration(signingKey: TokenSigningKey(privateKey: key)),
                store: store, debugTokens: debugTokens,
                keyStanding: KeyStanding(acceptance: KeyAcceptance(appIDs: apps, environments: .development)))
        }
        let before = try service(accepting: [FlowBench.appID])
        let issued = try before.issue(debugToken: DebugTokenSessionTests.debugToken, appIDs: [FlowBench.appID])
        let after = try service(accepting: [try AppID("ZZZZZZZZZZ.com.example.other")])

        #expect(try await after.introspect(issued.token) == .inactive)
        let error = await #expect(throws: FlowError.self) { try await after.consume(issued.token) }
        #expect(error?.code.rawValue == "app_not_accepted" && error?.kind.httpStatus == 403)
        #expect(try await before.introspect(issued.token).active)
        #expect(try await before.consume(issued.token).trust == "debug")
    }
}
