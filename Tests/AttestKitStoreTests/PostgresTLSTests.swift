import AttestKitStore
import AttestKitTestSupport
import Foundation
import NIOSSL
import Testing

@testable import AttestKitStore

/// `sslmode` and `sslrootcert` as libpq means them, checked on the TLS configuration the store connects with.
@Suite("PostgreSQL TLS: libpq's sslmode and sslrootcert")
struct PostgresTLSTests {
    /// A self-signed P-256 CA certificate (`openssl req -x509 -newkey ec`), valid until 2126: only parsed here.
    static let caPEM = """
        -----BEGIN CERTIFICATE-----
        MIIBpTCCAUugAwIBAgIUUvinO/Tr6cAfjpmeG0l6cKzxYX0wCgYIKoZIzj0EAwIw
        JzElMCMGA1UEAwwcQXR0ZXN0S2l0IHRlc3QgUG9zdGdyZVNRTCBDQTAgFw0yNjEx
        MjcxMjQwMDBaGA8yMTI2MTEwMzEyNDAwMFowJzElMCMGA1UEAwwcQXR0ZXN0S2l0
        IHRlc3QgUG9zdGdyZVNRTCBDQTBZMBMGByqGSM49AgEGCCqGSM49AwEHA0IABByV
        RFjahp1jaldja16Daw8NcP2NGhsVZW+r+GzbMimclwHr9swJIilTExHvUGHEVa7A
        BGv0M91z3j3jqEbHruOjUzBRMB0GA1UdDgQWBBR3EnnTJVyjAYQM0fl9kLgqV+D+
        qzAfBgNVHSMEGDAWgBR3EnnTJVyjAYQM0fl9kLgqV+D+qzAPBgNVHRMBAf8EBTAD
        AQH/MAoGCCqGSM49BAMCA0gAMEUCIQDZHxXzjuLIa7U5m4+PMjC6Af+olkywIh0Z
        JBc71hqx9gIgRdHBp/Xix3T9ALlJ2rQRCDRQal0ophItGIzm5kyJx8s=
        -----END CERTIFICATE-----

        """

    /// What a connection does: no TLS, TLS when offered, or TLS required; the check and the roots.
    struct Expected: Sendable, CustomStringConvertible {
        let negotiation: String
        let verification: CertificateVerification
        let privateRoots: Bool

        var description: String { "\(negotiation) \(verification) private roots: \(privateRoots)" }
    }

    /// The TLS of the URL's store, as PostgresNIO receives it.
    static func tls(_ url: String) throws -> (negotiation: String, configuration: TLSConfiguration?) {
        let configuration = try #require(try StoreURL(url).postgres)
        switch try configuration.makeTLS() {
        case .disable: return ("disable", nil)
        case .prefer(let tls): return ("prefer", tls)
        case .require(let tls): return ("require", tls)
        }
    }

    static func check(_ url: String, _ expected: Expected, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let (negotiation, configuration) = try tls(url)
        #expect(negotiation == expected.negotiation, "\(url)", sourceLocation: sourceLocation)
        guard let configuration else {
            #expect(expected.negotiation == "disable", sourceLocation: sourceLocation)
            return
        }
        #expect(
            configuration.certificateVerification == expected.verification, "\(url)", sourceLocation: sourceLocation)
        switch configuration.trustRoots {
        case .certificates(let roots):
            #expect(expected.privateRoots, "\(url)", sourceLocation: sourceLocation)
            #expect(roots == (try NIOSSLCertificate.fromPEMBytes(Array(caPEM.utf8))), sourceLocation: sourceLocation)
        case .default, nil:
            #expect(!expected.privateRoots, "\(url)", sourceLocation: sourceLocation)
        default:
            Issue.record("unexpected roots \(String(describing: configuration.trustRoots))")
        }
    }

    @Test("each sslmode without sslrootcert: libpq's meaning, the system's roots where the chain is checked")
    func modes() throws {
        let host = "postgres://u@db.internal/db"
        try Self.check(
            "\(host)?sslmode=disable", Expected(negotiation: "disable", verification: .none, privateRoots: false))
        try Self.check(
            "\(host)?sslmode=allow", Expected(negotiation: "prefer", verification: .none, privateRoots: false))
        try Self.check(
            "\(host)?sslmode=prefer", Expected(negotiation: "prefer", verification: .none, privateRoots: false))
        try Self.check(
            "\(host)?sslmode=require", Expected(negotiation: "require", verification: .none, privateRoots: false))
        try Self.check(
            "\(host)?sslmode=verify-ca",
            Expected(negotiation: "require", verification: .noHostnameVerification, privateRoots: false))
        try Self.check(
            "\(host)?sslmode=verify-full",
            Expected(negotiation: "require", verification: .fullVerification, privateRoots: false))
        // The default of a remote host: the chain and the host name, never less.
        try Self.check(host, Expected(negotiation: "require", verification: .fullVerification, privateRoots: false))
        // The default of a loopback host: libpq's prefer.
        try Self.check(
            "postgres://u@127.0.0.1/db", Expected(negotiation: "prefer", verification: .none, privateRoots: false))
    }

    @Test("sslrootcert=PATH: the file's roots; require, prefer and allow then check the chain, as libpq")
    func privateRoots() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.url.appendingPathComponent("ca.pem").path
        try Data(Self.caPEM.utf8).write(to: URL(fileURLWithPath: path))
        let host = "postgres://u@db.internal/db?sslrootcert=\(path)"
        let chain = Expected(negotiation: "require", verification: .noHostnameVerification, privateRoots: true)
        try Self.check("\(host)&sslmode=require", chain)
        try Self.check("\(host)&sslmode=verify-ca", chain)
        try Self.check(
            "\(host)&sslmode=verify-full",
            Expected(negotiation: "require", verification: .fullVerification, privateRoots: true))
        try Self.check(host, Expected(negotiation: "require", verification: .fullVerification, privateRoots: true))
        for mode in ["prefer", "allow"] {
            try Self.check(
                "\(host)&sslmode=\(mode)",
                Expected(negotiation: "prefer", verification: .noHostnameVerification, privateRoots: true))
        }
        #expect(try StoreURL("\(host)&sslmode=require").postgres?.certificateCheck == "chain")
    }

    @Test("sslrootcert=system: the system's roots, verify-full implied (libpq 16)")
    func systemRoots() throws {
        let full = Expected(negotiation: "require", verification: .fullVerification, privateRoots: false)
        try Self.check("postgres://u@127.0.0.1/db?sslrootcert=system", full)
        try Self.check("postgres://u@db.internal/db?sslmode=verify-full&sslrootcert=system", full)
    }

    @Test(
        "an sslrootcert file that is missing, empty, not PEM or a directory stops the store from being created",
        arguments: ["missing", "empty", "garbage", "key only", "truncated", "directory"])
    func unusableRoots(kind: String) throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.url.appendingPathComponent("ca.pem").path
        let pem = Self.caPEM
        switch kind {
        case "empty": try Data().write(to: URL(fileURLWithPath: path))
        case "garbage": try Data("not a certificate\n".utf8).write(to: URL(fileURLWithPath: path))
        case "key only":
            try Data("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n".utf8)
                .write(to: URL(fileURLWithPath: path))
        case "truncated": try Data(pem.utf8.prefix(pem.utf8.count / 2)).write(to: URL(fileURLWithPath: path))
        case "directory": try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
        default: break
        }
        for mode in ["require", "verify-ca", "verify-full", "prefer"] {
            let url = try StoreURL("postgres://u@db.internal/db?sslmode=\(mode)&sslrootcert=\(path)")
            let configuration = try #require(url.postgres)
            #expect(throws: StoreError.invalidInput, "\(kind) \(mode)") { _ = try configuration.makeTLS() }
            #expect(throws: StoreError.invalidInput, "\(kind) \(mode)") {
                _ = try PostgresAttestationStore(configuration: configuration)
            }
            do {
                try configuration.checkTLS()
                Issue.record("\(kind) accepted")
            } catch {
                #expect(error.reason.contains("sslrootcert \(path)"), "\(error)")
            }
        }
    }

    @Test("a configuration built in code is held to the same sslrootcert rules")
    func rootsInCode() {
        for (tls, roots) in [
            (PostgresStoreConfiguration.TLSMode.require, PostgresStoreConfiguration.RootCertificates.system),
            (.disable, .file("/etc/ca.pem")), (.verifyCA, .system), (.verifyFull, .file("")),
        ] {
            let configuration = PostgresStoreConfiguration(
                username: "u", password: nil, database: "d", tls: tls, rootCertificates: roots)
            #expect(throws: StoreError.invalidInput, "\(tls) \(roots)") {
                _ = try PostgresAttestationStore(configuration: configuration)
            }
        }
    }

    @Test("an unknown sslmode names the six accepted ones")
    func unknownMode() {
        do {
            _ = try StoreURL("postgres://u@h/db?sslmode=verify")
            Issue.record("accepted")
        } catch {
            #expect(error.code == .invalidURL)
            for name in ["disable", "allow", "prefer", "require", "verify-ca", "verify-full"] {
                #expect(error.reason.contains(name))
            }
        }
    }
}

/// A real TLS handshake with a private cluster whose certificate a test CA signed for 127.0.0.1.
@Suite("PostgreSQL TLS against a server", .serialized)
struct PostgresTLSServerTests {
    @Test(
        "each sslmode connects, or refuses, as libpq would, with the test CA or without it",
        .enabled(if: PostgresFaultTests.enabled, "PostgreSQL's server binaries are not installed"))
    func handshakes() async throws {
        let cluster = try await PostgresCluster.create()
        do {
            let (ca, otherCA) = try await cluster.enableTLS()
            let base = "postgres://attestkit@127.0.0.1:\(cluster.port)/postgres?schema=tls_check"
            let cases: [(String, Bool)] = [
                ("sslmode=disable", true),
                ("sslmode=require", true),  // encrypted, the unknown CA not checked: libpq's require
                ("sslmode=prefer", true),
                ("sslmode=verify-full&sslrootcert=\(ca)", true),  // chain, and the IP address in the certificate
                ("sslmode=verify-ca&sslrootcert=\(ca)", true),
                ("sslmode=require&sslrootcert=\(ca)", true),
                ("sslmode=verify-full", false),  // the system's roots do not know the test CA
                ("sslmode=verify-ca", false),
                ("sslrootcert=system", false),
                ("sslmode=verify-ca&sslrootcert=\(otherCA)", false),
                ("sslmode=require&sslrootcert=\(otherCA)", false),  // with roots, require checks the chain
                ("sslrootcert=\(otherCA)", false),  // the default on 127.0.0.1 is prefer: with roots, checked
            ]
            for (parameters, connects) in cases {
                let url = try StoreURL("\(base)&\(parameters)")
                do {
                    _ = try await url.withStore { _ in true }
                    #expect(connects, "\(parameters) connected")
                } catch {
                    #expect(!connects, "\(parameters): \(error)")
                }
            }
        } catch {
            Issue.record(error)
        }
        try await cluster.destroy()
    }
}
