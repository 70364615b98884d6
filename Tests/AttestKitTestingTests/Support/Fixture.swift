import AttestKit
import AttestKitTesting
import Crypto
import Foundation
import Testing

/// What the suites share: one seeded software Apple (P-384 signatures are the slow part), a fixed time and an
/// App ID, and helpers to verify and to expect a rejection.
enum Fixture {
    /// 2026-04-12T13:20:00Z: every simulated object of the suites is made and verified at this time.
    static let time = Date(timeIntervalSince1970: 1_776_000_000)
    static let seed = Array("AttestKitTestingTests".utf8)

    static let apple: SoftwareApple = {
        do {
            return try SoftwareApple(seed: seed, at: time)
        } catch {
            preconditionFailure("cannot build the software Apple: \(error)")
        }
    }()

    static let appID: AppID = {
        do { return try AppID("ABCDE12345.com.example.app") } catch { preconditionFailure("\(error)") }
    }()

    static let challenge = Array("server challenge 42".utf8)
    static var clientDataHash: [UInt8] { Array(SHA256.hash(data: challenge)) }

    static func device(
        _ environment: AppAttestEnvironment = .production, appID: AppID = appID, iOS27: Bool = false
    ) -> SimulatedDevice {
        SimulatedDevice(apple: apple, configuration: .init(appID: appID, environment: environment, iOS27: iOS27))
    }

    /// A verifier trusting the software Apple (or `anchors`), for `appID` in `environments`.
    static func verifier(
        _ environments: EnvironmentPolicy = .both, appID: AppID = appID, anchors: TrustAnchors? = apple.trustAnchors
    ) throws -> AttestationVerifier {
        AttestationVerifier(
            configuration: try .init(
                appIDs: [appID], environments: environments, receiptPolicy: .require, trustAnchors: anchors))
    }

    /// An attested key of a new device, with its attestation object.
    static func attested(
        _ environment: AppAttestEnvironment = .production, iOS27: Bool = false
    ) throws -> (device: SimulatedDevice, keyID: KeyID, object: [UInt8]) {
        let device = device(environment, iOS27: iOS27)
        let keyID = device.generateKey()
        let object = try device.attestKey(keyID, clientDataHash: clientDataHash, at: time)
        return (device, keyID, object)
    }

    /// The error `body` throws, which must be an `AttestKitError`; records an issue otherwise.
    static func rejection(
        _ comment: String = "", sourceLocation: SourceLocation = #_sourceLocation, _ body: () async throws -> Void
    ) async -> AttestKitError? {
        do {
            try await body()
            Issue.record("\(comment): expected an AttestKitError, got success", sourceLocation: sourceLocation)
        } catch let error as AttestKitError {
            return error
        } catch {
            Issue.record("\(comment): expected an AttestKitError, got \(error)", sourceLocation: sourceLocation)
        }
        return nil
    }

    /// Expects `body` to fail with `code` (and so with its check).
    static func expect(
        _ code: AttestKitError.Code, _ comment: String = "", sourceLocation: SourceLocation = #_sourceLocation,
        _ body: () async throws -> Void
    ) async {
        let error = await rejection(comment, sourceLocation: sourceLocation, body)
        #expect(error?.code == code, "\(comment): got \(String(describing: error))", sourceLocation: sourceLocation)
        #expect(error?.check == code.check, sourceLocation: sourceLocation)
    }
}

extension Collection where Element == UInt8 {
    /// The offsets of the first occurrence of `part`, as integer offsets from the start.
    func offsets(of part: some Collection<UInt8>) -> Range<Int>? {
        guard let range = Array(self).firstRange(of: Array(part)) else { return nil }
        return range
    }
}

extension Array where Element == UInt8 {
    /// A copy with the byte at `offset` XOR-ed with `mask` (never 0).
    func flipping(_ offset: Int, mask: UInt8 = 0x01) -> [UInt8] {
        var copy = self
        copy[offset] ^= mask == 0 ? 0x01 : mask
        return copy
    }
}
