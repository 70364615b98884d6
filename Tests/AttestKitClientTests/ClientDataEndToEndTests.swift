import AttestKit
import AttestKitClient
import AttestKitClientSimulator
import AttestKitWire
import Crypto
import Foundation
import Testing

/// The client attesting a key over the service's challenge and the app's own bytes, against a real
/// `attestkit serve` on loopback (``EndToEndTests/App``).
@Suite("AttestKitClient attestation client data end to end", .serialized, .timeLimit(.minutes(3)))
struct ClientDataEndToEndTests {
    typealias App = EndToEndTests.App

    @Test("attestKey(appData:) registers a new key over the challenge and the app's bytes; it then signs requests")
    func attestedWithAppData() async throws {
        try await ServiceProcess.with(apple: EndToEndTests.apple) { service in
            let app = App(service: service)
            #expect(try await app.order() == 1)
            let first = try #require(app.keyStore.registeredKeyID)
            let appData = Data(#"{"user":"42","session":"s-7"}"#.utf8)

            let answer = try await app.manager.attestKey(appData: appData)
            #expect(answer.keyId != first && answer.state == "active" && answer.counter == 0)
            #expect(answer.appData == appData.base64EncodedString())
            #expect(app.keyStore.registeredKeyID == answer.keyId)
            #expect(await app.manager.attestationCount == 2)
            // The device attested the new key with SHA-256 of 32 challenge bytes followed by the app's bytes.
            let hashes = app.provider.attestationHashes(for: answer.keyId)
            #expect(hashes.count == 1 && hashes.first?.count == 32)
            // The requests that follow are asserted with the new key.
            #expect(try await app.order() == 1)
            #expect(app.backend.outcomes.last?.keyID == answer.keyId && app.backend.outcomes.last?.status == 200)
        }
    }

    @Test("no app bytes, or more than fit beside the challenge, are refused before anything is asked")
    func refusedLocally() async throws {
        try await ServiceProcess.with(apple: EndToEndTests.apple) { service in
            let app = App(service: service)
            for appData in [Data(), Data(count: AttestationClientData.maximumLength - 31)] {
                let error = await #expect(throws: AttestKitClientError.self) {
                    try await app.manager.attestKey(appData: appData)
                }
                #expect(error?.code == .invalidRequest)
            }
            #expect(app.provider.calls.generateKey == 0 && app.provider.calls.attestKey == 0)
            // The most that fit register.
            let longest = Data(repeating: 7, count: AttestationClientData.maximumLength - 32)
            let answer = try await app.manager.attestKey(appData: longest)
            #expect(answer.appData == longest.base64EncodedString())
        }
    }

    @Test("under the service's ramp the key is named on its challenge: admitted, it registers; deferred, nothing is attested")
    func underTheRamp() async throws {
        // A ceiling turns the ramp on (every attest challenge must name its key) and admits every install.
        try await ServiceProcess.with(apple: EndToEndTests.apple, settings: ["ramp.daily-ceiling=100"]) { service in
            let app = App(service: service)
            let answer = try await app.manager.attestKey(appData: Data("user-42".utf8))
            #expect(answer.appData == Data("user-42".utf8).base64EncodedString())
            #expect(app.keyStore.registeredKeyID == answer.keyId)
        }
        // A share of 0 defers every install: no key is attested, and the caller is told when to ask again.
        try await ServiceProcess.with(
            apple: EndToEndTests.apple, settings: ["ramp.share=0", "ramp.recheck-after=600"]
        ) { service in
            let app = App(service: service)
            let error = await #expect(throws: AttestKitClientError.self) {
                try await app.manager.attestKey(appData: Data("user-42".utf8))
            }
            #expect(error?.code == .attestationDeferred)
            #expect(app.provider.calls.attestKey == 0)
            #expect(app.keyStore.registeredKeyID == nil)
        }
    }
}
