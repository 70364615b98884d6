#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Settings of a ``PostgresAttestationStore``.
///
/// The password is kept out of ``description``.
public struct PostgresStoreConfiguration: Sendable, Hashable, CustomStringConvertible {
    /// How the connection is encrypted.
    public struct TLSMode: Sendable, Hashable, CustomStringConvertible {
        /// `disable`, `prefer` or `require`, as libpq's `sslmode`.
        public let rawValue: String

        private init(_ rawValue: String) {
            self.rawValue = rawValue
        }

        /// The mode with this `sslmode` name.
        /// - Throws: ``StoreError/Code/invalidURL`` for another name.
        public init(sslmode: String) throws(StoreError) {
            guard let mode = [TLSMode.disable, .prefer, .require].first(where: { $0.rawValue == sslmode }) else {
                throw StoreError(.invalidURL, "sslmode is disable, prefer or require")
            }
            self = mode
        }

        /// Plain TCP: for a server on loopback or a private network only.
        public static let disable = TLSMode("disable")
        /// TLS when the server offers it (certificates verified), else plain TCP.
        public static let prefer = TLSMode("prefer")
        /// TLS with full certificate verification, or no connection.
        public static let require = TLSMode("require")

        public var description: String { rawValue }

        /// The mode when none is given: ``prefer`` for a loopback host (`localhost`, `127.0.0.0/8`, `::1`), whose
        /// traffic never leaves the machine, ``require`` for any other host, so that credentials and attestation
        /// state never cross a network in clear text unless `sslmode=disable` or `prefer` says so.
        public static func defaultMode(host: String) -> TLSMode {
            isLoopback(host) ? .prefer : .require
        }

        /// Whether `host` is `localhost` or a literal loopback address. A name other than `localhost` is not
        /// loopback, whatever it resolves to: the decision must not depend on DNS.
        static func isLoopback(_ host: String) -> Bool {
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

    /// The server's host name or address.
    public var host: String
    /// The server's port.
    public var port: Int
    /// The role to log in as.
    public var username: String
    /// The role's password, if it has one.
    public var password: String?
    /// The database.
    public var database: String
    /// The schema holding the store's tables, created by the migrations: a lower-case identifier.
    public var schema: String
    /// Transport encryption: by default ``TLSMode/require`` unless ``host`` is a loopback address
    /// (``TLSMode/defaultMode(host:)``).
    public var tls: TLSMode
    /// The most connections the pool opens.
    public var maximumConnections: Int
    /// How long to wait for a new connection: TCP connect, TLS and login (`PostgresClient`'s
    /// `connectTimeout`). Also bounds the first connection of ``PostgresAttestationStore/prepare()``.
    public var connectTimeout: Duration
    /// How long one store operation may take, waiting for a pooled connection included (URL parameter
    /// `operation_timeout=SECONDS`). Past it the call throws ``StoreError/Code/storageUnavailable``
    /// ("… did not answer within N s") and the connection it used is closed, not returned to the pool, so a
    /// lost database host fails requests quickly instead of holding them for about a minute.
    /// ``PostgresAttestationStore/prepare()`` (migrations) is not bound by it. Between 1 ms and 1 hour.
    public var operationTimeout: Duration

    /// Creates a configuration.
    ///
    /// `tls` defaults to ``TLSMode/defaultMode(host:)``: TLS with verified certificates, or no connection, for any
    /// host but a loopback address.
    public init(
        host: String = "127.0.0.1",
        port: Int = 5432,
        username: String,
        password: String?,
        database: String,
        schema: String = "attestkit",
        tls: TLSMode? = nil,
        maximumConnections: Int = 20,
        connectTimeout: Duration = .seconds(10),
        operationTimeout: Duration = .seconds(10)
    ) {
        self.host = host
        self.port = port
        self.username = username
        self.password = password
        self.database = database
        self.schema = schema
        self.tls = tls ?? TLSMode.defaultMode(host: host)
        self.maximumConnections = maximumConnections
        self.connectTimeout = connectTimeout
        self.operationTimeout = operationTimeout
    }

    /// Checks the fields that reach the server outside of query parameters.
    /// - Throws: ``StoreError/Code/invalidInput`` for an empty host, user or database, a port outside
    ///   1…65535, a schema that is not a lower-case identifier, a pool size outside 1…1000, or an operation
    ///   timeout outside ``operationTimeouts``.
    func validated() throws(StoreError) -> PostgresStoreConfiguration {
        guard !host.isEmpty, !username.isEmpty, !database.isEmpty, (1...65_535).contains(port) else {
            throw StoreError(.invalidInput, "a PostgreSQL store needs a host, a port, a user and a database")
        }
        guard Self.isIdentifier(schema) else {
            throw StoreError(.invalidInput, "the schema must be a lower-case identifier of at most 63 characters")
        }
        guard (1...1_000).contains(maximumConnections) else {
            throw StoreError(.invalidInput, "the pool holds 1 to 1000 connections")
        }
        guard Self.operationTimeouts.contains(operationTimeout) else {
            throw StoreError(.invalidInput, "the operation timeout lies between 1 ms and 1 hour")
        }
        return self
    }

    /// The accepted ``operationTimeout`` values.
    static let operationTimeouts: ClosedRange<Duration> = .milliseconds(1) ... .seconds(3_600)

    /// `[a-z_][a-z0-9_]{0,62}`: safe to quote into DDL, which cannot take parameters.
    static func isIdentifier(_ name: String) -> Bool {
        let bytes = Array(name.utf8)
        guard let first = bytes.first, bytes.count <= 63 else { return false }
        func isLetter(_ byte: UInt8) -> Bool {
            (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || byte == UInt8(ascii: "_")
        }
        return isLetter(first)
            && bytes.allSatisfy { isLetter($0) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }
    }

    /// `postgres://user@host:port/database?schema=…&sslmode=…`, without the password.
    public var description: String {
        "postgres://\(username)@\(host):\(port)/\(database)?schema=\(schema)&sslmode=\(tls)"
    }
}
