/// An ``AttestationPolicy`` of any type, where a concrete type is needed (composing a stored policy).
struct AnyAttestationPolicy: AttestationPolicy {
    let wrapped: any AttestationPolicy

    init(_ wrapped: any AttestationPolicy) { self.wrapped = wrapped }

    func check(_ attestation: VerifiedAttestation) -> PolicyResult { wrapped.check(attestation) }
}
