import Foundation

/// Settings of a ``PostgresAttestationStore``.
///
/// The password is kept out of ``description``.
public struct PostgresStoreConfiguration: Sendable, Hashable, CustomStringConvertible {
    /// The server's host name or address, or, beginning with `/`, the directory of its Unix-domain socket (libpq's
    /// meaning): the pool then connects to ``unixSocketPath``, a server on the same machine (or a proxy's socket
    /// beside the process), without TCP and without TLS.
    public var host: String
    /// The server's port; for a Unix-domain socket, the number in the socket file's name (`.s.PGSQL.5432`).
    public var port: Int
    /// The role to log in as.
    public var username: String
    /// The role's password, if it has one.
    public var password: String?
    /// The database.
    public var database: String
    /// The schema holding the store's tables, created by the migrations: a lower-case identifier.
    public var schema: String
    /// Transport encryption and the check of the server's certificate (URL parameter `sslmode`, libpq's names
    /// and meanings): by default ``TLSMode/verifyFull`` unless ``host`` is a loopback address
    /// (``TLSMode/defaultMode(host:)``), or with ``RootCertificates/system``.
    public var tls: TLSMode
    /// The roots the server's certificate is checked against (URL parameter `sslrootcert`), or `nil` for the
    /// system's roots where ``tls`` checks it. A file makes `require`, `prefer` and `allow` check the chain too,
    /// as libpq does.
    public var rootCertificates: RootCertificates?
    /// The most connections the pool opens (URL parameter `pool_max_conns`, ``poolSizes``; libpq has no pool).
    /// Every replica opens up to this many: N replicas need N × this many of the server's `max_connections`.
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
    /// `tls` defaults to ``TLSMode/defaultMode(host:)``: TLS with the chain and host name checked, or no
    /// connection, for any host but a loopback address; ``TLSMode/verifyFull`` with ``RootCertificates/system``.
    public init(
        host: String = "127.0.0.1",
        port: Int = 5432,
        username: String,
        password: String?,
        database: String,
        schema: String = "attestkit",
        tls: TLSMode? = nil,
        rootCertificates: RootCertificates? = nil,
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
        self.tls = tls ?? (rootCertificates == .system ? .verifyFull : TLSMode.defaultMode(host: host))
        self.rootCertificates = rootCertificates
        self.maximumConnections = maximumConnections
        self.connectTimeout = connectTimeout
        self.operationTimeout = operationTimeout
    }

    /// The path of the server's Unix-domain socket when ``host`` names its directory (begins with `/`):
    /// `HOST/.s.PGSQL.PORT`, as libpq builds it; `nil` for a host reached over TCP.
    public var unixSocketPath: String? {
        guard host.hasPrefix("/") else { return nil }
        var directory = host
        while directory.count > 1, directory.hasSuffix("/") { directory.removeLast() }
        return "\(directory == "/" ? "" : directory)/.s.PGSQL.\(port)"
    }

    /// The longest ``unixSocketPath`` the system can connect to, in bytes (`sun_path` holds 108 with its NUL).
    static let maximumSocketPathLength = 107

    /// Why the Unix-domain socket of ``host`` cannot be used as configured, or `nil` (also for a TCP host): TLS
    /// required or roots named (``socketConflict(_:_:)``), or a path longer than the system connects to.
    var socketRefusal: String? {
        guard let socket = unixSocketPath else { return nil }
        if let conflict = Self.socketConflict(tls, rootCertificates) { return conflict }
        guard socket.utf8.count <= Self.maximumSocketPathLength else {
            return "the Unix-domain socket path is longer than \(Self.maximumSocketPathLength) bytes"
        }
        return nil
    }

    /// Checks the fields that reach the server outside of query parameters.
    /// - Throws: ``StoreError/Code/invalidInput`` for an empty host, user or database, a port outside
    ///   1…65535, a schema that is not a lower-case identifier, a pool size outside ``poolSizes``, an operation
    ///   timeout outside ``operationTimeouts``, ``rootCertificates`` that ``tls`` contradicts, or a Unix-domain
    ///   socket with TLS required or roots named (a socket carries no TLS) or a path too long to connect to.
    func validated() throws(StoreError) -> PostgresStoreConfiguration {
        guard !host.isEmpty, !username.isEmpty, !database.isEmpty, (1...65_535).contains(port) else {
            throw StoreError(.invalidInput, "a PostgreSQL store needs a host, a port, a user and a database")
        }
        if let refusal = socketRefusal { throw StoreError(.invalidInput, refusal) }
        guard Self.isIdentifier(schema) else {
            throw StoreError(.invalidInput, "the schema must be a lower-case identifier of at most 63 characters")
        }
        guard Self.poolSizes.contains(maximumConnections) else {
            throw StoreError(.invalidInput, "the pool holds 1 to 1000 connections")
        }
        if let conflict = Self.tlsConflict(tls, rootCertificates) { throw StoreError(.invalidInput, conflict) }
        guard Self.operationTimeouts.contains(operationTimeout) else {
            throw StoreError(.invalidInput, "the operation timeout lies between 1 ms and 1 hour")
        }
        return self
    }

    /// The accepted ``maximumConnections`` values.
    public static let poolSizes: ClosedRange<Int> = 1...1_000

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

    /// `postgres://user@host:port/database?schema=…&sslmode=…&pool_max_conns=…` (and `&sslrootcert=…` when
    /// set), without the password; for a Unix-domain socket `postgres://user@:port/database?host=DIRECTORY&…`.
    public var description: String {
        var allowed = CharacterSet.urlQueryAllowed
        allowed.remove(charactersIn: "&=+#")
        func parameter(_ value: String) -> String {
            value.addingPercentEncoding(withAllowedCharacters: allowed) ?? value
        }
        var text =
            unixSocketPath == nil
            ? "postgres://\(username)@\(host):\(port)/\(database)?"
            : "postgres://\(username)@:\(port)/\(database)?host=\(parameter(host))&"
        text += "schema=\(schema)&sslmode=\(tls)"
        text += "&pool_max_conns=\(maximumConnections)"
        if let rootCertificates { text += "&sslrootcert=\(parameter(rootCertificates.description))" }
        return text
    }
}
