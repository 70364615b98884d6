import AttestKit
import AttestKitClient
import AttestKitClientSimulator
import AttestKitTesting
import Foundation
import Testing

/// The simulated App Attest provider's own simulations of a device's rare events.
@Suite struct SimulatedAppAttestProviderTests {
    static let apple: SoftwareApple = {
        do {
            return try SoftwareApple(seed: Array("SimulatedAppAttestProviderTests".utf8))
        } catch {
            preconditionFailure("cannot build the software Apple: \(error)")
        }
    }()

    static func provider() throws -> SimulatedAppAttestProvider {
        SimulatedAppAttestProvider(
            device: SimulatedDevice(
                apple: apple,
                configuration: .init(appID: try AppID("ABCDE12345.com.example.app"), environment: .development)))
    }

    /// The spellings of a key identifier `KeyID(string:)` reads: standard Base64 and base64url, padded or not.
    static func spellings(of keyID: String) -> [String] {
        let unpadded = String(keyID.prefix { $0 != "=" })
        let url = keyID.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
        return [keyID, unpadded, url, String(url.prefix { $0 != "=" })]
    }

    /// A provider and an attested key whose standard Base64 differs from its base64url spelling, so that its four
    /// spellings are distinct.
    static func attestedKey(_ hash: Data) async throws -> (SimulatedAppAttestProvider, String) {
        while true {
            let provider = try Self.provider()
            let keyID = try await provider.generateKey()
            guard keyID.contains(where: { $0 == "+" || $0 == "/" }) else { continue }
            _ = try await provider.attestKey(keyID, clientDataHash: hash)
            return (provider, keyID)
        }
    }

    @Test("a key invalidated under one Base64 spelling is forgotten under every spelling of the same key")
    func anInvalidatedKeyIsForgottenWhateverItsSpelling() async throws {
        let hash = Data(repeating: 1, count: 32)
        for position in 0..<4 {
            let (provider, keyID) = try await Self.attestedKey(hash)
            let spellings = Self.spellings(of: keyID)
            #expect(Set(spellings).count == 4)
            for spelling in spellings {
                #expect(try KeyID(string: spelling) == KeyID(string: keyID))
                _ = try await provider.generateAssertion(spelling, clientDataHash: hash)
            }
            provider.invalidate(spellings[position])
            for spelling in spellings {
                await #expect(throws: DeviceServiceError.invalidKey, "invalidated as \(spellings[position])") {
                    _ = try await provider.generateAssertion(spelling, clientDataHash: hash)
                }
            }
        }
    }

    @Test("invalidating text that names no key changes nothing")
    func invalidatingANonKeyIsHarmless() async throws {
        let provider = try Self.provider()
        let keyID = try await provider.generateKey()
        let hash = Data(repeating: 2, count: 32)
        _ = try await provider.attestKey(keyID, clientDataHash: hash)
        provider.invalidate("not a key")
        _ = try await provider.generateAssertion(keyID, clientDataHash: hash)
        await #expect(throws: DeviceServiceError.invalidKey) {
            _ = try await provider.generateAssertion("not a key", clientDataHash: hash)
        }
    }
}
