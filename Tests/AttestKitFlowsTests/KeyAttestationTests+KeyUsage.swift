import AttestKitFlows
import Testing
import X509

extension KeyAttestationTests {
    /// Relying parties (OpenSSL, BoringSSL) refuse a certificate whose issuer's keyUsage lacks keyCertSign: such a
    /// CA would issue certificates that introspect active here and fail everywhere else, so it is refused at start.
    @Test("a CA whose keyUsage does not allow signing certificates is refused; one without keyUsage is accepted")
    func caKeyUsage() throws {
        #expect(throws: FlowError(.keyAttestationCAInvalid, .notConfigured, "")) {
            _ = try Self.authority(keyUsage: KeyUsage(digitalSignature: true))
        }
        _ = try Self.authority(keyUsage: nil)
        _ = try Self.authority(keyUsage: KeyUsage(digitalSignature: true, keyCertSign: true))
    }
}
