import AttestKit
import AttestKitApple
import AttestKitFlows
import AttestKitStore
import AttestKitWire
import Testing

/// The conversions of the flows' dependencies' errors keep their codes and give the kinds the API's statuses
/// come from.
struct ErrorKindTests {
    @Test(
        "store errors",
        arguments: [
            (StoreError.counterNotIncreasing, FlowError.Kind.conflict),
            (.challengeConsumed, .conflict), (.keyExists, .conflict), (.receiptNotNewer, .conflict),
            (.challengeNotFound, .refused), (.challengeExpired, .refused), (.keyNotFound, .refused),
            (.keyRevoked, .refused), (.invalidInput, .malformed), (.storageUnavailable, .unavailable(retryAfter: nil)),
        ])
    func store(error: StoreError, kind: FlowError.Kind) {
        let flow = FlowError(error)
        #expect(flow.kind == kind)
        #expect(flow.code.rawValue == error.code.rawValue)
    }

    @Test("a storage failure tells the client nothing, and the operator everything")
    func storageReason() {
        let flow = FlowError(StoreError(.storageUnavailable, "SQLite database or disk is full"))
        #expect(flow.reason == "storage is unavailable")
        #expect((flow.underlying as? StoreError)?.reason == "SQLite database or disk is full")
        #expect(flow.description == "storage_unavailable: storage is unavailable")
    }

    @Test("verification errors: format is malformed, a counter replay a conflict, the rest refused")
    func verification() {
        #expect(FlowError(AttestKitError(.counterNotIncreasing, "x")).kind == .conflict)
        #expect(FlowError(AttestKitError(.keyIdMalformed, "x")).kind == .malformed)
        #expect(FlowError(AttestKitError(.signatureInvalid, "x")).kind == .refused)
    }

    @Test(
        "Apple's errors",
        arguments: [
            (AppleServiceError.Code.badDeviceToken, "bad_device_token", FlowError.Kind.malformed),
            (.badBits, "bad_bits", .malformed),
            // What the server writes (its clock's timestamp, the payload): never the client's input.
            (.badTimestamp, "bad_timestamp", .upstreamFailure), (.badPayload, "bad_payload", .upstreamFailure),
            (.rateLimited, "apple_rate_limited", .unavailable(retryAfter: 60)),
            (.timeout, "apple_unavailable", .unavailable(retryAfter: nil)),
            (.invalidAuthorizationToken, "apple_authorization_failed", .upstreamFailure),
            (.noData, "apple_error", .upstreamFailure),
        ])
    func apple(code: AppleServiceError.Code, flowCode: String, kind: FlowError.Kind) {
        let flow = FlowError(AppleServiceError(code, "x"))
        #expect(flow.code.rawValue == flowCode)
        #expect(flow.kind == kind)
    }

    @Test("errors compare by code; unknown errors are not converted")
    func equality() {
        #expect(FlowError(.rateLimited, .malformed, "a") == FlowError.rateLimited("x", retryAfter: 1))
        #expect(FlowError(converting: CancellationError()) == nil)
        #expect(FlowError(converting: RequestBindingError(.invalidTarget))?.kind == .malformed)
        #expect(FlowError.invalidField("purpose", "is attest or assert").reason == "purpose: is attest or assert")
    }
}
