import Foundation
import Testing
import X509

@testable import AttestKit

/// Verification times, leeways and maximum ages outside what a clock can mean (NaN, infinities, negatives) never
/// turn a time check off and never trap: the checks fail closed.
@Suite struct TimeParameterTests {
    static let unusable: [Double] = [.nan, Double.infinity, -Double.infinity, -60]

    @Test("an unusable leeway counts as none: an expired leaf stays expired", arguments: unusable)
    func attestationLeeway(_ leeway: Double) async throws {
        let verifier = try AttestationVerifierTests.verifier(leeway: leeway)
        #expect(verifier.configuration.leeway == 0)
        // The verifier takes it as 0 also when it is set after the configuration was made.
        var configuration = verifier.configuration
        configuration.leeway = leeway
        let late = try AttestationVerifierTests.leaf().notValidAfter.addingTimeInterval(30)
        for verifier in [verifier, AttestationVerifier(configuration: configuration)] {
            await #expect(throws: AttestKitError.code(.certificateExpired)) {
                try await AttestationVerifierTests.verify(verifier: verifier, at: late)
            }
        }
    }

    @Test("a NaN verification time refuses an attestation and a receipt")
    func notANumberTime() async throws {
        let nowhere = Date(timeIntervalSinceReferenceDate: .nan)
        await #expect(throws: AttestKitError.self) { try await AttestationVerifierTests.verify(at: nowhere) }
        await #expect(throws: AttestKitError.code(.receiptFromFuture)) {
            try await ReceiptTests.verify(ReceiptTests.attest2024, at: nowhere)
        }
    }

    @Test("an unusable receipt leeway counts as none", arguments: unusable)
    func receiptLeeway(_ leeway: Double) async throws {
        let verifier = try ReceiptVerifier(leeway: leeway)
        #expect(verifier.leeway == 0)
        // Created 2024-10-26T09:35:00.542Z: 30 s before is inside the default leeway, outside none.
        let early = Date(timeIntervalSince1970: 1_729_935_300.542 - 30)
        _ = try await ReceiptTests.verify(ReceiptTests.attest2024, at: early)
        await #expect(throws: AttestKitError.code(.receiptFromFuture)) {
            try await ReceiptTests.verify(ReceiptTests.attest2024, with: verifier, at: early)
        }
    }

    @Test("a NaN or negative maximum age refuses a receipt older than the leeway; an infinite one is no limit")
    func maximumAges() async throws {
        let later = Date(timeIntervalSince1970: 1_729_935_300.542 + 600)
        for age: Double in [.nan, -Double.infinity, -1] {
            let error = await #expect(throws: AttestKitError.code(.receiptTooOld)) {
                try await ReceiptTests.verify(ReceiptTests.attest2024, maximumAge: age, at: later)
            }
            #expect(error?.reason.isEmpty == false)
        }
        _ = try await ReceiptTests.verify(ReceiptTests.attest2024, maximumAge: Double.infinity, at: later)
    }

    @Test("seconds outside a window are written for any value, without trapping")
    func formattedSeconds() {
        #expect(AttestKitError.formatted(seconds: 0.4664) == "0.466")
        #expect(AttestKitError.formatted(seconds: 10.2) == "11")
        #expect(AttestKitError.formatted(seconds: .infinity) == "inf")
        #expect(AttestKitError.formatted(seconds: .nan) == "nan")
        #expect(AttestKitError.formatted(seconds: 1e300).count == 301)
        #expect(AttestKitError.formatted(seconds: -.infinity) == "-inf")
    }
}
