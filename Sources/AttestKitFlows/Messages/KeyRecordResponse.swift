import AttestKit
package import AttestKitStore
import Foundation

/// A registered key as the API shows it. Holds no key material beyond the public identifier.
package struct KeyRecordResponse: Encodable {
    package struct ReceiptInfo: Encodable {
        package var createdAt: String
        package var refreshAt: String?
    }

    package struct RiskEntry: Encodable {
        package var riskMetric: Int
        package var receiptCreatedAt: String
        package var recordedAt: String
    }

    package var keyId: String
    package var appId: String
    package var environment: String
    package var state: String
    package var counter: UInt32
    package var createdAt: String
    package var lastAssertionAt: String?
    package var revokedAt: String?
    package var osVersion: String?
    package var bundleVersion: String?
    package var validationCategory: UInt32?
    package var receipt: ReceiptInfo?
    package var riskMetric: Int?
    /// `unknown` until Apple rated the key (its receipt traded), then `assessed`.
    package var riskStatus: String
    package var stepUp: Bool
    package var riskHistory: [RiskEntry]?

    package init(_ record: KeyRecord, policy: RiskPolicy, riskHistory: [RiskMetricEntry]? = nil) {
        keyId = record.keyID.base64
        appId = record.appID.description
        environment = record.environment.rawValue
        state = record.state.rawValue
        counter = record.counter
        createdAt = APITime.format(record.createdAt)
        lastAssertionAt = record.lastAssertionAt.map(APITime.format)
        revokedAt = record.revokedAt.map(APITime.format)
        osVersion = record.osVersion
        bundleVersion = record.bundleVersion
        validationCategory = record.validationCategory
        receipt = record.receiptCreatedAt.map {
            ReceiptInfo(createdAt: APITime.format($0), refreshAt: record.receiptRefreshAt.map(APITime.format))
        }
        riskMetric = record.riskMetric
        riskStatus = RiskPolicy.status(record.riskMetric)
        stepUp = policy.requiresStepUp(record.riskMetric)
        self.riskHistory = riskHistory?.map {
            RiskEntry(
                riskMetric: $0.riskMetric, receiptCreatedAt: APITime.format($0.receiptCreatedAt),
                recordedAt: APITime.format($0.recordedAt))
        }
    }
}
