import AttestKitApple
import AttestKitFlows
import AttestKitWire
import Hummingbird
import Logging

extension AttestKitAPI {
    /// `POST /v1/devicecheck/query`.
    func deviceCheckQuery(_ request: Request, _ context: RouteContext) async throws -> Response {
        var request = request
        let client = try deviceCheckClient()
        let body = try await JSONRequest.decode(DeviceTokenRequest.self, from: &request, limit: configuration.bodyLimit)
        let token = try Self.deviceToken(body.deviceToken)
        let result = try await calling("query") { () async throws(AppleServiceError) in
            try await client.query(deviceToken: token, logger: context.logger)
        }
        return JSONResponse.make(
            .ok,
            DeviceCheckQueryResponse(
                found: result.isFound, bit0: result.bit0, bit1: result.bit1,
                lastUpdateTime: result.lastUpdateTime?.description,
                state: configuration.deviceCheckStates?.name(bit0: result.bit0, bit1: result.bit1)))
    }

    /// `POST /v1/devicecheck/update` (backend): refuses to move a device out of the `banned` state.
    func deviceCheckUpdate(_ request: Request, _ context: RouteContext) async throws -> Response {
        try await deviceCheckUpdate(request, context, mayUnban: false)
    }

    /// `POST /v1/devicecheck/unban` (operator): an update that may move a device out of the `banned` state.
    func deviceCheckUnban(_ request: Request, _ context: RouteContext) async throws -> Response {
        try await deviceCheckUpdate(request, context, mayUnban: true)
    }

    private func deviceCheckUpdate(_ request: Request, _ context: RouteContext, mayUnban: Bool) async throws -> Response
    {
        var request = request
        let client = try deviceCheckClient()
        let body = try await JSONRequest.decode(
            DeviceCheckUpdateRequest.self, from: &request, limit: configuration.bodyLimit)
        let token = try Self.deviceToken(body.deviceToken)
        var bits = (bit0: body.bit0, bit1: body.bit1)
        if let state = body.state {
            guard bits.bit0 == nil && bits.bit1 == nil else {
                throw APIError.invalidField("state", "give a state or bits, not both")
            }
            guard let states = configuration.deviceCheckStates else {
                throw APIError.invalidField("state", "no state names are configured (devicecheck.states)")
            }
            guard let named = states.bits(of: state) else {
                throw APIError.invalidField("state", "is one of \(states.names.joined(separator: ", "))")
            }
            bits = (named.bit0, named.bit1)
        }
        guard bits.bit0 != nil || bits.bit1 != nil else {
            throw APIError.invalidField("bit0", "give bit0, bit1, both, or a state")
        }
        if !mayUnban, let states = configuration.deviceCheckStates, states.bits(of: DeviceCheckStates.bannedName) != nil
        {
            // Banned is sticky for the backend: read the device's state first (Apple offers no compare-and-set).
            let current = try await calling("query") { () async throws(AppleServiceError) in
                try await client.query(deviceToken: token, logger: context.logger)
            }
            let next = (bits.bit0 ?? current.bit0, bits.bit1 ?? current.bit1)
            if states.isBanned(bit0: current.bit0, bit1: current.bit1), !states.isBanned(bit0: next.0, bit1: next.1) {
                throw APIError(
                    .forbidden, "devicecheck_unban_requires_admin",
                    "the device is banned; only the operator (POST /v1/devicecheck/unban, admin token) lifts a ban")
            }
        }
        try await calling("update") { () async throws(AppleServiceError) in
            try await client.update(deviceToken: token, bit0: bits.bit0, bit1: bits.bit1, logger: context.logger)
        }
        if mayUnban { context.logger.notice("devicecheck state set by the operator") }
        return JSONResponse.make(.ok, DeviceCheckUpdateResponse(updated: true))
    }

    /// `POST /v1/devicecheck/validate`: `valid: false` for a token Apple rejects.
    func deviceCheckValidate(_ request: Request, _ context: RouteContext) async throws -> Response {
        var request = request
        let client = try deviceCheckClient()
        let body = try await JSONRequest.decode(DeviceTokenRequest.self, from: &request, limit: configuration.bodyLimit)
        let token = try Self.deviceToken(body.deviceToken)
        do {
            try await calling("validate") { () async throws(AppleServiceError) in
                try await client.validate(deviceToken: token, logger: context.logger)
            }
        } catch let error as APIError where error.code == AppleServiceError.Code.badDeviceToken.rawValue {
            return JSONResponse.make(.ok, DeviceCheckValidateResponse(valid: false, reason: error.code))
        }
        return JSONResponse.make(.ok, DeviceCheckValidateResponse(valid: true, reason: nil))
    }

    private func deviceCheckClient() throws -> DeviceCheckClient {
        guard let apple else {
            throw APIError(
                .serviceUnavailable, "apple_not_configured",
                "no Apple key is configured (apple.key-file, apple.key-id, apple.team-id)")
        }
        return apple.deviceCheck
    }

    /// Runs one Apple call, counting its outcome and mapping its error.
    private func calling<Result>(
        _ operation: String, _ body: () async throws(AppleServiceError) -> Result
    ) async throws -> Result {
        do {
            let result = try await body()
            metrics.deviceCheck(operation, outcome: "ok")
            return result
        } catch {
            metrics.deviceCheck(operation, outcome: error.code.rawValue)
            throw APIError(FlowError(error))
        }
    }

    /// A device token: Base64 without line breaks, at most 8 KiB (Apple's are about 2.5 KiB).
    static func deviceToken(_ text: String) throws -> String {
        _ = try Field.bytes(text, "deviceToken", maximum: 8_192)
        return text
    }
}
