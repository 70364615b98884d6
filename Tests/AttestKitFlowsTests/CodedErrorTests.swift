import AttestKit
import AttestKitApple
import AttestKitFlows
import AttestKitStore
import AttestKitTesting
import Testing

/// Every error type on the one base (`CodedError`): equal and hashed by code alone, whatever the reason and the
/// source line, and described as `code: reason` unless the type tells more.
struct CodedErrorTests {
    /// Two errors of `type` with one code and different reasons, and one with another code.
    private func checkScaffolding<Failure: CodedError>(
        _ first: Failure, _ sameCode: Failure, _ otherCode: Failure, description: String
    ) {
        #expect(first == sameCode)
        #expect(first.hashValue == sameCode.hashValue)
        #expect(Set([first, sameCode]).count == 1)
        #expect(first != otherCode)
        #expect(first.description == description)
    }

    @Test("AttestKitError")
    func attestKit() {
        checkScaffolding(
            AttestKitError(.nonceMismatch, "the nonce differs"), AttestKitError(.nonceMismatch, "another reason"),
            AttestKitError(.nonceMissing, "the nonce differs"), description: "nonce_mismatch: the nonce differs")
        // A policy code compares by its string, whatever check it was made for.
        #expect(AttestKitError.Code(policy: "policy_validation_category") == .policyValidationCategory)
        #expect(AttestKitError.Code.nonceMismatch.description == "nonce_mismatch")
    }

    @Test("StoreError")
    func store() {
        checkScaffolding(
            StoreError(.keyExists, "key exists"), StoreError(.keyExists, "again", line: 1),
            StoreError(.keyNotFound, "key exists"), description: "key_exists: key exists")
        #expect(StoreError.Code.keyRevoked.description == "key_revoked")
    }

    @Test("AppleServiceError keeps its own description")
    func apple() {
        checkScaffolding(
            AppleServiceError(.rateLimited, "slow down", status: 429, appleText: "Too many"),
            AppleServiceError.code(.rateLimited), AppleServiceError(.noData, "slow down", status: 429),
            description: "rate_limited (HTTP 429): slow down - Apple said \"Too many\"")
        #expect(AppleServiceError.Code.rateLimited.description == "rate_limited")
    }

    @Test("FlowError")
    func flow() {
        checkScaffolding(
            FlowError(.timestampOutsideWindow, .refused, "late"),
            FlowError(.timestampOutsideWindow, .malformed, "other"),
            FlowError(.invalidFreshness, .refused, "late"), description: "timestamp_outside_window: late")
        #expect(FlowError.Code("invalid_field") == .invalidField)
        #expect(FlowError.Code.invalidField.description == "invalid_field")
    }

    @Test("SoftwareAppleError")
    func softwareApple() {
        checkScaffolding(
            SoftwareAppleError(.invalidKey, "unknown key"), SoftwareAppleError(.invalidKey, "other"),
            SoftwareAppleError(.invalidInput, "unknown key"), description: "invalid_key: unknown key")
    }
}
