public import AttestKitWire
import AttestKitApple
import Foundation
import Logging

extension AttestKitApplication {
    /// `POST /v1/devicecheck/query` (backend): the device's two bits, with their state name when states are
    /// configured (`devicecheck.states`).
    /// - Throws: 503 `apple_not_configured`; `invalid_field`; Apple's codes (``FlowError/init(_:)-(AppleServiceError)``).
    public func deviceCheckQuery(_ request: DeviceTokenRequest) async throws(FlowError) -> DeviceCheckQueryResponse {
        try await perform { () async throws(FlowError) in
            let client = try deviceCheckClient()
            let token = try Self.deviceToken(request.deviceToken)
            let result = try await calling("query") { () async throws(AppleServiceError) in
                try await client.query(deviceToken: token, logger: logger)
            }
            return DeviceCheckQueryResponse(
                found: result.isFound, bit0: result.bit0, bit1: result.bit1,
                lastUpdateTime: result.lastUpdateTime?.description,
                state: configuration.deviceCheckStates?.name(bit0: result.bit0, bit1: result.bit1))
        }
    }

    /// `POST /v1/devicecheck/update` (backend, `mayUnban` `false`): sets the device's bits, or its named state;
    /// refuses to move a device out of the `banned` state. `POST /v1/devicecheck/unban` (operator, `mayUnban`
    /// `true`) may.
    /// - Throws: 503 `apple_not_configured`; `invalid_field`; 403 `devicecheck_unban_requires_admin`; Apple's codes.
    public func deviceCheckUpdate(
        _ request: DeviceCheckUpdateRequest, mayUnban: Bool
    ) async throws(FlowError) -> DeviceCheckUpdateResponse {
        try await perform { () async throws(FlowError) in
            let client = try deviceCheckClient()
            let token = try Self.deviceToken(request.deviceToken)
            var bits = (bit0: request.bit0, bit1: request.bit1)
            if let state = request.state {
                guard bits.bit0 == nil && bits.bit1 == nil else {
                    throw FlowError.invalidField("state", "give a state or bits, not both")
                }
                guard let states = configuration.deviceCheckStates else {
                    throw FlowError.invalidField("state", "no state names are configured (devicecheck.states)")
                }
                guard let named = states.bits(of: state) else {
                    throw FlowError.invalidField("state", "is one of \(states.names.joined(separator: ", "))")
                }
                bits = (named.bit0, named.bit1)
            }
            guard bits.bit0 != nil || bits.bit1 != nil else {
                throw FlowError.invalidField("bit0", "give bit0, bit1, both, or a state")
            }
            if !mayUnban, let states = configuration.deviceCheckStates,
                states.bits(of: DeviceCheckStates.bannedName) != nil
            {
                // Banned is sticky for the backend: read the device's state first (Apple offers no compare-and-set).
                let current = try await calling("query") { () async throws(AppleServiceError) in
                    try await client.query(deviceToken: token, logger: logger)
                }
                let next = (bits.bit0 ?? current.bit0, bits.bit1 ?? current.bit1)
                if states.isBanned(bit0: current.bit0, bit1: current.bit1),
                    !states.isBanned(bit0: next.0, bit1: next.1)
                {
                    throw FlowError(
                        .init("devicecheck_unban_requires_admin"), .refused,
                        "the device is banned; only the operator (POST /v1/devicecheck/unban, admin token) lifts a ban"
                    )
                }
            }
            try await calling("update") { () async throws(AppleServiceError) in
                try await client.update(deviceToken: token, bit0: bits.bit0, bit1: bits.bit1, logger: logger)
            }
            if mayUnban { logger.notice("devicecheck state set by the operator") }
            return DeviceCheckUpdateResponse(updated: true)
        }
    }

    /// `POST /v1/devicecheck/validate` (backend): whether Apple accepts the device token; `valid: false` for one
    /// Apple rejects.
    /// - Throws: 503 `apple_not_configured`; `invalid_field`; Apple's codes but `bad_device_token`.
    public func deviceCheckValidate(
        _ request: DeviceTokenRequest
    ) async throws(FlowError) -> DeviceCheckValidateResponse {
        try await perform { () async throws(FlowError) in
            let client = try deviceCheckClient()
            let token = try Self.deviceToken(request.deviceToken)
            do throws(FlowError) {
                try await calling("validate") { () async throws(AppleServiceError) in
                    try await client.validate(deviceToken: token, logger: logger)
                }
            } catch  where error.code.rawValue == AppleServiceError.Code.badDeviceToken.rawValue {
                return DeviceCheckValidateResponse(valid: false, reason: error.code.rawValue)
            }
            return DeviceCheckValidateResponse(valid: true, reason: nil)
        }
    }

    /// DeviceCheck's client, or 503 `apple_not_configured`.
    private func deviceCheckClient() throws(FlowError) -> DeviceCheckClient {
        guard let apple else {
            throw FlowError(
                .init("apple_not_configured"), .notConfigured,
                "no Apple key is configured (apple.key-file, apple.key-id, apple.team-id)")
        }
        return apple.deviceCheck
    }

    /// Runs one Apple call, counting its outcome (``FlowMetrics/countingDeviceCheck(_:_:)``) and converting its
    /// error.
    private func calling<Result>(
        _ operation: String, _ body: () async throws(AppleServiceError) -> Result
    ) async throws(FlowError) -> Result {
        do {
            return try await metrics.countingDeviceCheck(operation, body)
        } catch {
            throw FlowError(error)
        }
    }

    /// A device token: Base64 without line breaks, at most 8 KiB (Apple's are about 2.5 KiB), in either alphabet,
    /// padded or not, as every binary field; Apple is sent its standard, padded spelling, as the guarded routes do
    /// (Apple refuses base64url: a device relayed that way was answered `bad_device_token`, never banned).
    private static func deviceToken(_ text: String) throws(FlowError) -> String {
        Data(try Field.bytes(text, "deviceToken", maximum: 8_192)).base64EncodedString()
    }
}
