public import AttestKit
public import AttestKitStore
public import AttestKitWire

extension KeyRecordResponse {
    /// The answer that shows `record`: its risk status and step-up decided by `policy`, with `riskHistory` for
    /// the operator's view, the thumbprint of its app key when a key attestation bound one, and the key's access
    /// control (`keyAccessControl`): `keyAccessControl` when given (a registration's, as its attestation certified
    /// it), else the one stored with the key (absent for keys registered before the store kept it).
    public init(
        _ record: KeyRecord, policy: RiskPolicy, riskHistory: [RiskMetricEntry]? = nil,
        keyAccessControl: AppAttestKeyAccessControl.Reading? = nil
    ) {
        self.init(
            keyId: record.keyID.base64, appId: record.appID.description, environment: record.environment.rawValue,
            state: record.state.rawValue, counter: record.counter, createdAt: APITime.format(record.createdAt),
            lastAssertionAt: record.lastAssertionAt.map(APITime.format),
            revokedAt: record.revokedAt.map(APITime.format), osVersion: record.osVersion,
            bundleVersion: record.bundleVersion, validationCategory: record.validationCategory,
            receipt: record.receiptCreatedAt.map {
                ReceiptInfo(createdAt: APITime.format($0), refreshAt: record.receiptRefreshAt.map(APITime.format))
            },
            riskMetric: record.riskMetric, riskStatus: RiskPolicy.status(record.riskMetric),
            stepUp: policy.requiresStepUp(record.riskMetric),
            riskHistory: riskHistory?.map {
                RiskEntry(
                    riskMetric: $0.riskMetric, receiptCreatedAt: APITime.format($0.receiptCreatedAt),
                    recordedAt: APITime.format($0.recordedAt))
            },
            appKey: record.appKey.map { AppKey(thumbprint: $0.thumbprint) },
            keyAccessControl: KeyAccessControl(keyAccessControl ?? record.keyAccessControlReading))
    }
}

extension KeyRecordResponse.KeyAccessControl {
    /// The wire form of `reading`: `macos_full_security`, `other` or `malformed` with the extension's value; `nil`
    /// when the extension is absent.
    public init?(_ reading: AppAttestKeyAccessControl.Reading) {
        switch reading {
        case .absent:
            return nil
        case .present(let accessControl):
            self.init(
                policy: accessControl.isMacOSFullSecurityPolicy ? "macos_full_security" : "other",
                value: Base64.encode(accessControl.extensionValue))
        case .malformed(let value):
            self.init(policy: "malformed", value: Base64.encode(value))
        }
    }
}
