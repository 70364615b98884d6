public import AttestKitWire
import AttestKit
import AttestKitStore
import Foundation
import Logging

extension AttestKitApplication {
    /// `GET /v1/keys/{keyId}` (operator): the key record with its risk history; its `state` is `expired` when the
    /// key is active but unused for longer than `keys.expire-after` (its next assertion is refused `key_expired`).
    /// - Parameter keyID: The key id as the path carries it: standard Base64, percent-encoded.
    /// - Throws: `key_id_malformed`, `invalid_field` (400); `key_not_found` (404); `storage_unavailable`.
    public func keyReport(keyID: String) async throws(FlowError) -> KeyRecordResponse {
        try await perform { () async throws(FlowError) in
            let report = try await keys.report(of: try Self.pathKeyID(keyID))
            var response = KeyRecordResponse(
                report.key, policy: configuration.policy.riskPolicy, riskHistory: report.riskHistory)
            if report.key.state == .active,
                KeyStanding(expiry: configuration.keyExpiry).isExpired(report.key, at: now())
            {
                response.state = KeyRecordResponse.expiredState
            }
            return response
        }
    }

    /// `POST /v1/keys/{keyId}/revoke` (operator): revokes the key; its assertions are refused from now on.
    /// - Parameter keyID: The key id as the path carries it: standard Base64, percent-encoded.
    /// - Throws: `key_id_malformed`, `invalid_field` (400); `key_not_found` (404); `storage_unavailable`.
    public func revokeKey(keyID: String) async throws(FlowError) -> KeyRecordResponse {
        try await perform { () async throws(FlowError) in
            let keyID = try Self.pathKeyID(keyID)
            defer { gate.forget(keyID) }
            let record = try await keys.revoke(keyID)
            logger.notice("key revoked", metadata: ["keyId": "\(keyID)"])
            return KeyRecordResponse(record, policy: configuration.policy.riskPolicy)
        }
    }

    /// `DELETE /v1/keys/{keyId}` (operator): deletes the key with its receipt and risk history (a device's data
    /// erased); its assertions are refused as `key_not_found` from now on.
    /// - Parameter keyID: The key id as the path carries it: standard Base64, percent-encoded.
    /// - Throws: `key_id_malformed`, `invalid_field` (400); `key_not_found` (404); `storage_unavailable`.
    public func deleteKey(keyID: String) async throws(FlowError) {
        try await perform { () async throws(FlowError) in
            let keyID = try Self.pathKeyID(keyID)
            // Forgotten whatever the store answered: a deletion that committed before a failure was reported (a
            // deadline past the commit) would be answered 404 when retried.
            defer { gate.forget(keyID) }
            try await keys.delete(keyID)
            logger.notice("key deleted", metadata: ["keyId": "\(keyID)"])
        }
    }

    /// A key id from a path parameter: percent-decoded, then in its one canonical spelling (``Field``).
    private static func pathKeyID(_ text: String) throws(FlowError) -> KeyID {
        try Field.keyID(text.removingPercentEncoding ?? text)
    }
}
