extension AttestKitError {
    /// A stable failure code. New codes may be added in later releases; existing ones never change.
    ///
    /// Each code belongs to exactly one ``AttestKitError/Check``.
    public struct Code: StableErrorCode {
        /// The stable snake_case string, e.g. `nonce_mismatch`.
        public let rawValue: String
        /// The check this code belongs to.
        public let check: Check

        private init(_ rawValue: String, _ check: Check) {
            self.rawValue = rawValue
            self.check = check
        }

        /// A code of the ``AttestKitError/Check/policy`` check: the way an adopter's own ``AttestationPolicy``
        /// names its refusal.
        ///
        /// The string is what callers, HTTP answers and metric labels see, so make it stable, short snake_case,
        /// and start it with `policy_` so that it cannot be mistaken for (or equal) one of the verifier's codes:
        /// codes compare by their strings.
        ///
        /// ```swift
        /// extension AttestKitError.Code {
        ///     static let policyMaintenance = AttestKitError.Code(policy: "policy_maintenance")
        /// }
        /// ```
        ///
        /// - Parameter rawValue: The stable string, a literal.
        public init(policy rawValue: StaticString) {
            self.init(rawValue.description, .policy)
        }

        /// Every code, for documentation and exhaustive tests.
        public static var allCases: [Code] {
            [
                .inputTooLarge, .cborMalformed, .cborLimitExceeded, .attestationMalformed, .unsupportedFormat,
                .authenticatorDataMalformed, .assertionMalformed, .keyIdMalformed, .publicKeyMalformed,
                .clientDataHashMalformed, .appIdMalformed,
                .certificateMalformed, .certificateChainLength, .certificateUntrusted, .certificateExpired,
                .certificateNotYetValid, .trustAnchorPinMismatch, .keyAccessControlMalformed,
                .nonceMissing, .nonceMismatch,
                .keyIdMismatch, .credentialIdMismatch,
                .appIdMismatch,
                .environmentMismatch, .aaguidUnknown,
                .counterNotZero, .counterNotIncreasing,
                .signatureMalformed, .signatureInvalid,
                .receiptMissing, .receiptMalformed, .receiptSignatureInvalid, .receiptDigestMismatch,
                .receiptCertificateUntrusted, .receiptCertificateExpired, .receiptCertificateNotYetValid,
                .receiptSignerNotAuthorized, .receiptAppIdMismatch, .receiptKeyMismatch,
                .receiptClientHashMismatch, .receiptTypeUnexpected,
                .receiptTooOld, .receiptFromFuture,
                .policyValidationCategory, .policyOSVersion, .policyBundleVersion, .policyValidationCategoryChanged,
                .policyKeyAccessControl,
            ]
        }

        // MARK: format

        /// The input is larger than the verifier accepts.
        public static let inputTooLarge = Code("input_too_large", .format)
        /// The CBOR is not well formed, uses a feature Apple never sends, or has trailing bytes.
        public static let cborMalformed = Code("cbor_malformed", .format)
        /// The CBOR exceeds a size, count or nesting bound.
        public static let cborLimitExceeded = Code("cbor_limit_exceeded", .format)
        /// The attestation object lacks a field or has one of the wrong type.
        public static let attestationMalformed = Code("attestation_malformed", .format)
        /// The attestation `fmt` is not `apple-appattest`.
        public static let unsupportedFormat = Code("unsupported_format", .format)
        /// The authenticator data is truncated or inconsistent.
        public static let authenticatorDataMalformed = Code("authenticator_data_malformed", .format)
        /// The assertion object lacks a field or has one of the wrong type.
        public static let assertionMalformed = Code("assertion_malformed", .format)
        /// The key identifier is not base64 or base64url of 32 bytes. Part of the `keyId` check: a key
        /// identifier that cannot be decoded cannot match.
        public static let keyIdMalformed = Code("key_id_malformed", .keyId)
        /// A public key is not a valid P-256 point.
        public static let publicKeyMalformed = Code("public_key_malformed", .format)
        /// The client data hash has the wrong size.
        public static let clientDataHashMalformed = Code("client_data_hash_malformed", .format)
        /// An App ID is not `TEAMID.bundle.id`.
        public static let appIdMalformed = Code("app_id_malformed", .format)

        // MARK: certificate

        /// A certificate in x5c does not parse.
        public static let certificateMalformed = Code("certificate_malformed", .certificate)
        /// x5c does not hold exactly the credential certificate and one intermediate.
        public static let certificateChainLength = Code("certificate_chain_length", .certificate)
        /// The chain does not lead to the pinned App Attestation root.
        public static let certificateUntrusted = Code("certificate_untrusted", .certificate)
        /// A certificate of the chain had expired at the verification time.
        public static let certificateExpired = Code("certificate_expired", .certificate)
        /// A certificate of the chain was not yet valid at the verification time.
        public static let certificateNotYetValid = Code("certificate_not_yet_valid", .certificate)
        /// An embedded or configured trust anchor does not match its SHA-256 pin.
        public static let trustAnchorPinMismatch = Code("trust_anchor_pin_mismatch", .certificate)
        /// The credential certificate's key access-control extension (1.2.840.113635.100.8.6) is not the structure
        /// Apple writes (``AppAttestKeyAccessControl``). Thrown by its parser; the verifier itself only exposes a
        /// malformed extension, and ``MacOSKeyAccessControlPolicy`` refuses it for the App IDs it covers.
        public static let keyAccessControlMalformed = Code("key_access_control_malformed", .certificate)

        // MARK: nonce

        /// The credential certificate lacks a well-formed nonce extension (1.2.840.113635.100.8.2).
        public static let nonceMissing = Code("nonce_missing", .nonce)
        /// The certificate nonce is not SHA-256(authData ‖ clientDataHash).
        public static let nonceMismatch = Code("nonce_mismatch", .nonce)

        // MARK: keyId

        /// SHA-256 of the certificate's public key is not the claimed key identifier.
        public static let keyIdMismatch = Code("key_id_mismatch", .keyId)
        /// The authenticator data's attested credential is not the key: its credential id is not the key identifier,
        /// or its public key (COSE) is not the certified one.
        public static let credentialIdMismatch = Code("credential_id_mismatch", .keyId)

        // MARK: appId

        /// rpIdHash is not SHA-256 of an allowed App ID.
        public static let appIdMismatch = Code("app_id_mismatch", .appId)

        // MARK: environment

        /// The AAGUID names an environment the policy does not allow.
        public static let environmentMismatch = Code("environment_mismatch", .environment)
        /// The AAGUID is neither the production nor the development value.
        public static let aaguidUnknown = Code("aaguid_unknown", .environment)

        // MARK: counter

        /// An attestation's sign count is not zero.
        public static let counterNotZero = Code("counter_not_zero", .counter)
        /// An assertion's counter is not greater than the stored one (a replay).
        public static let counterNotIncreasing = Code("counter_not_increasing", .counter)

        // MARK: signature

        /// The assertion signature is not a DER ECDSA signature.
        public static let signatureMalformed = Code("signature_malformed", .signature)
        /// The assertion signature does not verify under the stored key.
        public static let signatureInvalid = Code("signature_invalid", .signature)

        // MARK: receipt

        /// The attestation carries no receipt, or an empty one, and the verifier requires it (its default).
        public static let receiptMissing = Code("receipt_missing", .receipt)
        /// The receipt container or payload does not parse.
        public static let receiptMalformed = Code("receipt_malformed", .receipt)
        /// The receipt's CMS signature does not verify.
        public static let receiptSignatureInvalid = Code("receipt_signature_invalid", .receipt)
        /// The receipt's messageDigest attribute is not SHA-256 of its content.
        public static let receiptDigestMismatch = Code("receipt_digest_mismatch", .receipt)
        /// The receipt signer does not chain to the pinned Apple Root CA - G3.
        public static let receiptCertificateUntrusted = Code("receipt_certificate_untrusted", .receipt)
        /// A receipt signing certificate had expired when the receipt was created (its field 12, the time the chain
        /// is checked at; the receipt's age is bounded by `maximumAge`).
        public static let receiptCertificateExpired = Code("receipt_certificate_expired", .receipt)
        /// A receipt signing certificate was not yet valid when the receipt was created (its field 12).
        public static let receiptCertificateNotYetValid = Code("receipt_certificate_not_yet_valid", .receipt)
        /// The receipt signer chains to the pinned root, but it or its CA lacks the extension by which Apple
        /// marks its receipt CA (1.2.840.113635.100.6.2.3) and its receipt signer (1.2.840.113635.100.12.15):
        /// the root certified the key for another purpose, possibly for a developer.
        public static let receiptSignerNotAuthorized = Code("receipt_signer_not_authorized", .receipt)
        /// The receipt's App ID is not the expected one.
        public static let receiptAppIdMismatch = Code("receipt_app_id_mismatch", .receipt)
        /// The receipt's attested key is not the registered key, or, inside an attestation, its attested certificate
        /// (field 3) is not that attestation's credential certificate.
        public static let receiptKeyMismatch = Code("receipt_key_mismatch", .receipt)
        /// The receipt inside an attestation names another client data hash (its field 4): it was made for
        /// another attestation of the key.
        public static let receiptClientHashMismatch = Code("receipt_client_hash_mismatch", .receipt)
        /// The receipt type is not the one expected (`ATTEST` inside an attestation, `RECEIPT` from Apple).
        public static let receiptTypeUnexpected = Code("receipt_type_unexpected", .receipt)
        /// The receipt's creation time is older than the allowed maximum age.
        public static let receiptTooOld = Code("receipt_too_old", .receipt)
        /// The receipt's creation time is later than the verification time plus leeway.
        public static let receiptFromFuture = Code("receipt_from_future", .receipt)

        // MARK: policy

        /// The attestation's iOS 27 validation category is not one the deployment allows
        /// (``ValidationCategoryPolicy``).
        public static let policyValidationCategory = Code("policy_validation_category", .policy)
        /// The attestation's OS version is below the deployment's minimum, or unknown (``MinimumOSVersionPolicy``).
        public static let policyOSVersion = Code("policy_os_version", .policy)
        /// A key of an App ID the deployment declares macOS lacks the access policy Apple documents for macOS keys
        /// (System Integrity Protection and Full Security mode), or its extension is absent or malformed
        /// (``MacOSKeyAccessControlPolicy``).
        public static let policyKeyAccessControl = Code("policy_key_access_control", .policy)
        /// The iOS 27 bundle version is below the deployment's minimum, not dot-separated integers, or not reported
        /// where one is required (``MinimumBundleVersionPolicy``).
        public static let policyBundleVersion = Code("policy_bundle_version", .policy)
        /// The assertion's iOS 27 validation category is not the one its key was registered with
        /// (``ValidationCategoryChangePolicy``).
        public static let policyValidationCategoryChanged = Code("policy_validation_category_changed", .policy)
    }
}

extension AttestKitError {
    // Static values so that `#expect(throws: AttestKitError.nonceMismatch)` reads naturally.
    // Equality is by code, so the placeholder reason does not matter.

    /// An error value with the given code, for comparisons.
    public static func code(_ code: Code) -> AttestKitError { AttestKitError(code, code.rawValue) }
}
