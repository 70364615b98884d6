public import AttestKit
public import AttestKitStore
public import AttestKitWire

/// What an assertion is verified over: the client data, and the freshness the gate enforces.
///
/// Built from the request an edge received (method, target, body, and the freshness its headers or fields name),
/// from a canonical `RequestBinding`, or from raw client data a backend forwards. Every way checks
/// the same things and throws the same codes, so the HTTP endpoint and every middleware agree.
public struct AssertionBinding: Sendable, Hashable {
    /// The client data the app hashed.
    public let clientData: ClientDataInput
    /// The freshness the gate enforces.
    public let freshness: Freshness

    /// The binding of a canonical request binding: its client data and the freshness it names.
    /// - Throws: `invalid_freshness` for a challenge id that is not one of this service's.
    public init(_ binding: RequestBinding) throws(FlowError) {
        _ = try AssertionGate.challengeID(of: binding.freshness)
        self.init(.clientData(binding.clientData), binding.freshness)
    }

    private init(_ clientData: ClientDataInput, _ freshness: Freshness) {
        self.clientData = clientData
        self.freshness = freshness
    }

    /// The binding of a request as received: its method, target (path and query as sent) and body.
    /// - Throws: the binding's codes (`invalid_method`, `invalid_target`, `invalid_freshness`), malformed.
    public init(
        method: String, target: String, body: some Sequence<UInt8>, freshness: Freshness
    ) throws(FlowError) {
        let binding: RequestBinding
        do {
            binding = try RequestBinding(method: method, target: target, body: body, freshness: freshness)
        } catch {
            throw FlowError(error)
        }
        try self.init(binding)
    }

    /// The binding of a request described by the SHA-256 of its body.
    /// - Throws: the binding's codes (`invalid_body_hash` among them), malformed.
    public init(
        method: String, target: String, bodySHA256: [UInt8], freshness: Freshness
    ) throws(FlowError) {
        let binding: RequestBinding
        do {
            binding = try RequestBinding(
                method: method, target: target, bodySHA256: bodySHA256, freshness: freshness)
        } catch {
            throw FlowError(error)
        }
        try self.init(binding)
    }

    /// The binding of raw client data a backend forwards, with the challenge id it names beside it, if any.
    ///
    /// Client data in AttestKit's canonical format must be exactly that (a variant that does not round-trip is
    /// refused, never taken as the caller's own scheme, which would skip the freshness check), and a challenge id
    /// beside it must be the one it names. Any other client data is the caller's own scheme: its freshness is the
    /// caller's (a challenge id beside it is consumed), and the counter still refuses replays.
    /// - Throws: `client_data_malformed`, `invalid_freshness`, or `invalid_field` for a differing challenge id.
    public init(clientData: [UInt8], challengeID: ChallengeID?) throws(FlowError) {
        guard RequestBinding.claimsAttestKitFormat(clientData) else {
            self.init(.clientData(clientData), challengeID.map { .challenge($0.string) } ?? .vouchedByCaller)
            return
        }
        guard let binding = try? RequestBinding(clientData: clientData) else {
            throw FlowError(
                .clientDataMalformed, .malformed,
                "the client data starts like AttestKit's canonical client data but is not canonical")
        }
        try self.init(binding)
        if let challengeID, try AssertionGate.challengeID(of: freshness) != challengeID {
            throw FlowError.invalidField("challengeId", "differs from the challenge the client data names")
        }
    }
}
