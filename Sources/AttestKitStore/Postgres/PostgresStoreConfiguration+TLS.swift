import Foundation
import NIOSSL
import PostgresNIO

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

extension PostgresStoreConfiguration {
    /// How the connection is encrypted and the server's certificate checked: libpq's `sslmode`, with libpq's
    /// meanings.
    ///
    /// | `sslmode` | TLS | certificate |
    /// |---|---|---|
    /// | `disable` | never | - |
    /// | `allow`, `prefer` | when the server offers it, else plain TCP | unchecked, unless ``RootCertificates`` are named: chain checked |
    /// | `require` | required | unchecked, unless ``RootCertificates`` are named: then as `verify-ca` |
    /// | `verify-ca` | required | chain checked against the roots, host name not |
    /// | `verify-full` | required | chain and host name (or IP address) checked |
    ///
    /// Without ``PostgresStoreConfiguration/rootCertificates`` the roots are the system's (libpq would read
    /// `~/.postgresql/root.crt`). `allow` is taken as `prefer`: PostgresNIO cannot try plain TCP first.
    public struct TLSMode: Sendable, Hashable, CustomStringConvertible {
        /// libpq's name: `disable`, `allow`, `prefer`, `require`, `verify-ca` or `verify-full`.
        public let rawValue: String

        private init(_ rawValue: String) {
            self.rawValue = rawValue
        }

        /// The mode with this `sslmode` name.
        /// - Throws: ``StoreError/Code/invalidURL`` for another name, naming the accepted ones.
        public init(sslmode: String) throws(StoreError) {
            guard let mode = Self.allCases.first(where: { $0.rawValue == sslmode }) else {
                throw StoreError(
                    .invalidURL,
                    "sslmode is disable, allow, prefer, require, verify-ca or verify-full (libpq's names)")
            }
            self = mode
        }

        /// Every mode, weakest first.
        public static let allCases: [TLSMode] = [.disable, .allow, .prefer, .require, .verifyCA, .verifyFull]

        /// Plain TCP: for a server on loopback or a private network only.
        public static let disable = TLSMode("disable")
        /// As ``prefer`` here (libpq tries plain TCP first; PostgresNIO cannot).
        public static let allow = TLSMode("allow")
        /// TLS when the server offers it, else plain TCP; the certificate is not checked unless
        /// ``RootCertificates`` are named. Protects against a passive listener only.
        public static let prefer = TLSMode("prefer")
        /// TLS or no connection; the certificate is not checked (libpq's meaning: AttestKit's `require` used to
        /// check the chain and host name, which is now ``verifyFull``), unless ``RootCertificates`` are named:
        /// then as ``verifyCA``. Protects against a passive listener only.
        public static let require = TLSMode("require")
        /// TLS or no connection, the certificate chained to the roots; the host name is not checked.
        public static let verifyCA = TLSMode("verify-ca")
        /// TLS or no connection, the certificate chained to the roots and issued for the host (name or address).
        public static let verifyFull = TLSMode("verify-full")

        public var description: String { rawValue }

        /// Whether the mode refuses a connection without TLS.
        public var requiresTLS: Bool { self == .require || self == .verifyCA || self == .verifyFull }

        /// The mode when none is given: ``prefer`` for a loopback host (`localhost`, `127.0.0.0/8`, `::1`), whose
        /// traffic never leaves the machine, ``verifyFull`` for any other host (what AttestKit's `require` did
        /// before it took libpq's meaning), so that credentials and attestation state never cross a network in
        /// clear text, or to an impostor, unless the URL says so; ``disable`` for the directory of a Unix-domain
        /// socket (a host beginning with `/`), which carries no TLS and never leaves the machine.
        public static func defaultMode(host: String) -> TLSMode {
            if host.hasPrefix("/") { return .disable }
            return isLoopback(host) ? .prefer : .verifyFull
        }

        /// Whether `host` is `localhost` or a literal loopback address. A name other than `localhost` is not
        /// loopback, whatever it resolves to: the decision must not depend on DNS.
        package static func isLoopback(_ host: String) -> Bool {
            if host.lowercased() == "localhost" { return true }
            var ipv4 = in_addr()
            if inet_pton(AF_INET, host, &ipv4) == 1 {
                return UInt32(bigEndian: ipv4.s_addr) >> 24 == 127
            }
            var ipv6 = in6_addr()
            guard inet_pton(AF_INET6, host, &ipv6) == 1 else { return false }
            let bytes = withUnsafeBytes(of: &ipv6) { Array($0) }
            return bytes == [UInt8](repeating: 0, count: 15) + [1]
        }
    }

    /// The certificate authorities the server's certificate is checked against: libpq's `sslrootcert`.
    public struct RootCertificates: Sendable, Hashable, CustomStringConvertible {
        /// The PEM file of the roots, or `nil` for ``system``.
        public let path: String?

        private init(path: String?) {
            self.path = path
        }

        /// `sslrootcert=system` (libpq 16): the system's trusted roots; needs ``TLSMode/verifyFull``, the mode
        /// it implies when no `sslmode` is given.
        public static let system = RootCertificates(path: nil)

        /// `sslrootcert=PATH`: the certificates of a PEM file, instead of the system's roots. The file is read
        /// when the store is created; a file that cannot be read or holds no certificate is an error, never a
        /// fallback to the system's roots.
        public static func file(_ path: String) -> RootCertificates { RootCertificates(path: path) }

        /// The `sslrootcert` value: the path, or `system`.
        public var description: String { path ?? "system" }
    }

    /// Whether the server's certificate is checked: not for `disable`, nor for `allow`, `prefer` and `require`
    /// without ``rootCertificates``.
    package var checksCertificate: Bool { certificateVerification != .none }

    /// How the server's certificate is checked, for logs: `none`, `chain` or `chain and host`.
    package var certificateCheck: String {
        switch certificateVerification {
        case .fullVerification: "chain and host"
        case .noHostnameVerification: "chain"
        default: "none"
        }
    }

    /// The largest `sslrootcert` file read (a system bundle is about 200 KiB).
    static let rootCertificateFileLimit = 1 << 20

    /// Why a Unix-domain socket cannot have `tls` and `roots`, or `nil`: a socket carries no TLS, so a mode that
    /// requires it, or roots to check a certificate with, would never be honoured (libpq ignores them silently;
    /// here the configuration is refused). `allow` and `prefer` connect without TLS, as libpq does.
    static func socketConflict(_ tls: TLSMode, _ roots: RootCertificates?) -> String? {
        if tls.requiresTLS {
            return "a Unix-domain socket carries no TLS: sslmode=\(tls) cannot be honoured (use disable)"
        }
        if roots != nil { return "a Unix-domain socket carries no TLS: sslrootcert would never be used" }
        return nil
    }

    /// Why ``tls`` and ``rootCertificates`` do not go together, or `nil`.
    static func tlsConflict(_ tls: TLSMode, _ roots: RootCertificates?) -> String? {
        if roots == .system, tls != .verifyFull {
            return "sslrootcert=system needs sslmode=verify-full (libpq 16), not \(tls)"
        }
        if roots != nil, tls == .disable {
            return "sslrootcert names roots to check the server's certificate, and sslmode=disable turns TLS off"
        }
        if let path = roots?.path, path.isEmpty { return "sslrootcert names no file" }
        return nil
    }

    /// NIOSSL's check of the server's certificate, as libpq's for ``tls`` and ``rootCertificates``.
    var certificateVerification: CertificateVerification {
        switch tls {
        case .verifyFull: .fullVerification
        case .verifyCA: .noHostnameVerification
        case .disable: .none
        default: rootCertificates?.path == nil ? .none : .noHostnameVerification
        }
    }

    /// The TLS settings of a connection: the roots loaded, the verification set.
    /// - Throws: ``StoreError/Code/invalidInput`` for an `sslrootcert` file that cannot be read, is empty, larger
    ///   than 1 MiB or holds no PEM certificate, or a mode that contradicts it.
    func makeTLS() throws(StoreError) -> PostgresTLS {
        if let conflict = Self.tlsConflict(tls, rootCertificates) { throw StoreError(.invalidInput, conflict) }
        if tls == .disable { return .disable }
        var configuration = TLSConfiguration.makeClientConfiguration()
        configuration.certificateVerification = certificateVerification
        if let path = rootCertificates?.path {
            configuration.trustRoots = .certificates(try Self.loadRootCertificates(path))
        }
        return tls.requiresTLS ? .require(configuration) : .prefer(configuration)
    }

    /// Checks what ``makeTLS()`` checks, at start-up: the `sslrootcert` file is read and parsed.
    /// - Throws: ``StoreError/Code/invalidInput`` as ``makeTLS()``.
    package func checkTLS() throws(StoreError) {
        _ = try makeTLS()
    }

    /// The certificates of the PEM file at `path`.
    static func loadRootCertificates(_ path: String) throws(StoreError) -> [NIOSSLCertificate] {
        func refusal(_ reason: String) -> StoreError { StoreError(.invalidInput, "sslrootcert \(path) \(reason)") }
        guard let handle = FileHandle(forReadingAtPath: path) else { throw refusal("cannot be read") }
        defer { try? handle.close() }
        let data: Data
        do {
            data = try handle.read(upToCount: rootCertificateFileLimit + 1) ?? Data()
        } catch {
            throw refusal("cannot be read")
        }
        guard data.count <= rootCertificateFileLimit else { throw refusal("is larger than 1 MiB") }
        guard !data.isEmpty else { throw refusal("is empty") }
        let certificates: [NIOSSLCertificate]
        do {
            certificates = try NIOSSLCertificate.fromPEMBytes(Array(data))
        } catch {
            throw refusal("holds no readable PEM certificate (-----BEGIN CERTIFICATE-----)")
        }
        guard !certificates.isEmpty else { throw refusal("holds no PEM certificate") }
        return certificates
    }
}

/// The TLS of a PostgreSQL connection, in PostgresNIO's three cases.
enum PostgresTLS: Sendable {
    /// Plain TCP.
    case disable
    /// TLS when the server offers it.
    case prefer(TLSConfiguration)
    /// TLS or no connection.
    case require(TLSConfiguration)

    /// For the pool.
    var client: PostgresClient.Configuration.TLS {
        switch self {
        case .disable: .disable
        case .prefer(let configuration): .prefer(configuration)
        case .require(let configuration): .require(configuration)
        }
    }

    /// For one connection outside the pool.
    func connection() throws -> PostgresConnection.Configuration.TLS {
        switch self {
        case .disable: .disable
        case .prefer(let configuration): .prefer(try NIOSSLContext(configuration: configuration))
        case .require(let configuration): .require(try NIOSSLContext(configuration: configuration))
        }
    }
}
