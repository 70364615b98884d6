import Foundation

/// Where a store keeps its state, chosen by one URL.
///
/// - `memory:`: ``MemoryAttestationStore``, in this process only.
/// - `sqlite:PATH`: ``SQLiteAttestationStore`` at `PATH`, relative to the working directory or absolute
///   (`sqlite:///abs/path` also works).
/// - `postgres://USER:PASSWORD@HOST:PORT/DATABASE?PARAMETER=VALUE&…` (or `postgresql://`):
///   ``PostgresAttestationStore``; port 5432, user and password percent-encoded. A host beginning with `/`
///   (percent-encoded in the authority, or as the `host` parameter: `postgres://USER@/DATABASE?host=/run/postgresql`)
///   is the directory of the server's Unix-domain socket, libpq's meaning
///   (``PostgresStoreConfiguration/unixSocketPath``). The parameters:
///   - `host=DIRECTORY`: the directory of a Unix-domain socket, an absolute path, when the authority names no host.
///   - `schema=NAME`: the schema of the tables, `attestkit` by default.
///   - `sslmode=MODE`: libpq's names and meanings (``PostgresStoreConfiguration/TLSMode``): `disable`, `allow`,
///     `prefer`, `require`, `verify-ca`, `verify-full`; by default `verify-full`, or `prefer` for a loopback host
///     (``PostgresStoreConfiguration/TLSMode/defaultMode(host:)``).
///   - `sslrootcert=PATH`: the PEM file of the roots the server's certificate is checked against, instead of the
///     system's; `system` for the system's roots, which implies and needs `verify-full` (libpq 16).
///   - `pool_max_conns=N`: the most connections of the pool, 1 to 1000, 20 by default (libpq has no pool; the
///     name is pgx's, `pgxpool`).
///   - `operation_timeout=SECONDS`: ``PostgresStoreConfiguration/operationTimeout``, decimal seconds from
///     `0.001` to `3600`, 10 by default.
///
/// Anything else is refused with ``StoreError/Code/invalidURL``. The ``description`` hides the password.
public struct StoreURL: Sendable, Hashable, CustomStringConvertible {
    /// Which backend the URL names.
    public struct Backend: Sendable, Hashable, CustomStringConvertible {
        /// `memory`, `sqlite` or `postgres`.
        public let rawValue: String

        private init(_ rawValue: String) {
            self.rawValue = rawValue
        }

        /// ``MemoryAttestationStore``.
        public static let memory = Backend("memory")
        /// ``SQLiteAttestationStore``.
        public static let sqlite = Backend("sqlite")
        /// ``PostgresAttestationStore``.
        public static let postgres = Backend("postgres")

        public var description: String { rawValue }
    }

    /// The backend.
    public let backend: Backend
    /// For ``Backend/sqlite``: the database file.
    public let sqlitePath: String?
    /// For ``Backend/postgres``: the connection settings.
    public let postgres: PostgresStoreConfiguration?

    /// Parses a storage URL.
    /// - Throws: ``StoreError/Code/invalidURL`` for an unknown scheme or a malformed URL.
    public init(_ string: String) throws(StoreError) {
        guard string.utf8.count <= 4_096, !string.unicodeScalars.contains(where: { $0.value < 0x20 }) else {
            throw StoreError(.invalidURL, "a storage URL is at most 4096 printable characters")
        }
        if string == "memory:" {
            self.init(backend: .memory, sqlitePath: nil, postgres: nil)
        } else if string.hasPrefix("sqlite:") {
            var path = String(string.dropFirst("sqlite:".count))
            if path.hasPrefix("//") { path.removeFirst(2) }
            guard !path.isEmpty, !path.hasSuffix("/") else {
                throw StoreError(.invalidURL, "sqlite:PATH needs the path of a file")
            }
            self.init(backend: .sqlite, sqlitePath: path, postgres: nil)
        } else if string.hasPrefix("postgres://") || string.hasPrefix("postgresql://") {
            self.init(backend: .postgres, sqlitePath: nil, postgres: try Self.postgres(string))
        } else {
            throw StoreError(
                .invalidURL, "a storage URL is memory:, sqlite:PATH or postgres://user:password@host:port/db")
        }
    }

    private init(backend: Backend, sqlitePath: String?, postgres: PostgresStoreConfiguration?) {
        self.backend = backend
        self.sqlitePath = sqlitePath
        self.postgres = postgres
    }

    /// The URL, with the PostgreSQL password left out.
    public var description: String {
        switch backend {
        case .sqlite: "sqlite:\(sqlitePath ?? "")"
        case .postgres: postgres?.description ?? "postgres:"
        default: "memory:"
        }
    }

    private static func postgres(_ string: String) throws(StoreError) -> PostgresStoreConfiguration {
        guard let components = URLComponents(string: string), let host = try postgresHost(components) else {
            throw StoreError(.invalidURL, "a PostgreSQL URL is postgres://user:password@host:port/database")
        }
        guard let user = components.user, !user.isEmpty else {
            throw StoreError(.invalidURL, "a PostgreSQL URL names a user: postgres://user@host/database")
        }
        var database = components.path
        if database.hasPrefix("/") { database.removeFirst() }
        guard !database.isEmpty, !database.contains("/") else {
            throw StoreError(.invalidURL, "a PostgreSQL URL names one database: postgres://user@host/database")
        }
        let port = components.port ?? 5432
        guard (1...65_535).contains(port) else {
            throw StoreError(.invalidURL, "the PostgreSQL port must lie between 1 and 65535")
        }
        var configuration = PostgresStoreConfiguration(
            host: host.hasPrefix("[") ? String(host.dropFirst().dropLast()) : host,
            port: port,
            username: user,
            password: components.password,
            database: database)
        var sslmode: PostgresStoreConfiguration.TLSMode?
        for item in components.queryItems ?? [] {
            guard let value = item.value, !value.isEmpty else {
                throw StoreError(.invalidURL, "the URL parameter \(item.name) has no value")
            }
            switch item.name {
            case "host":
                continue  // read above
            case "schema":
                guard PostgresStoreConfiguration.isIdentifier(value) else {
                    throw StoreError(.invalidURL, "schema must be a lower-case identifier")
                }
                configuration.schema = value
            case "sslmode":
                sslmode = try PostgresStoreConfiguration.TLSMode(sslmode: value)
            case "sslrootcert":
                configuration.rootCertificates = value == "system" ? .system : .file(value)
            case "pool_max_conns":
                configuration.maximumConnections = try poolSize(value)
            case "operation_timeout":
                configuration.operationTimeout = try operationTimeout(value)
            default:
                throw StoreError(.invalidURL, "unknown PostgreSQL URL parameter \(item.name)")
            }
        }
        if let sslmode {
            configuration.tls = sslmode
        } else if configuration.rootCertificates == .system {
            configuration.tls = .verifyFull
        }
        if let conflict = PostgresStoreConfiguration.tlsConflict(configuration.tls, configuration.rootCertificates) {
            throw StoreError(.invalidURL, conflict)
        }
        if let refusal = configuration.socketRefusal { throw StoreError(.invalidURL, refusal) }
        return configuration
    }

    /// The URL's host: the authority's (a name, an address, or a percent-encoded socket directory), or the `host`
    /// parameter's, which names the directory of a Unix-domain socket (`postgres://user@/database?host=/run/postgresql`,
    /// libpq's form); `nil` for neither.
    /// - Throws: ``StoreError/Code/invalidURL`` for both, a `host` parameter given twice or not an absolute path.
    private static func postgresHost(_ components: URLComponents) throws(StoreError) -> String? {
        let parameters = (components.queryItems ?? []).filter { $0.name == "host" }
        let authority = components.host.flatMap { $0.isEmpty ? nil : $0 }
        guard let parameter = parameters.first else { return authority }
        guard parameters.count == 1, authority == nil else {
            throw StoreError(.invalidURL, "a PostgreSQL URL names its host once: in the authority or as host=DIRECTORY")
        }
        guard let directory = parameter.value, directory.hasPrefix("/") else {
            throw StoreError(
                .invalidURL, "the host parameter names the directory of a Unix-domain socket: an absolute path")
        }
        return directory
    }

    /// `pool_max_conns=N`: a plain decimal integer within ``PostgresStoreConfiguration/poolSizes``.
    private static func poolSize(_ value: String) throws(StoreError) -> Int {
        guard value.utf8.count <= 4, value.utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }),
            let size = Int(value), PostgresStoreConfiguration.poolSizes.contains(size)
        else { throw StoreError(.invalidURL, "pool_max_conns is a whole number of connections from 1 to 1000") }
        return size
    }

    /// `operation_timeout=SECONDS`: a plain decimal number of seconds (`10`, `2.5`), whole milliseconds, within
    /// ``PostgresStoreConfiguration/operationTimeouts``.
    private static func operationTimeout(_ value: String) throws(StoreError) -> Duration {
        let refusal = StoreError(.invalidURL, "operation_timeout is a number of seconds from 0.001 to 3600")
        guard value.utf8.count <= 16,
            value.utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) || $0 == UInt8(ascii: ".") }),
            let seconds = Double(value), seconds.isFinite, seconds <= 3_600
        else { throw refusal }
        // Bounded before the conversion: 16 digits of seconds are more milliseconds than an Int64 holds (a trap).
        let timeout = Duration.milliseconds(Int64((seconds * 1_000).rounded()))
        guard PostgresStoreConfiguration.operationTimeouts.contains(timeout) else { throw refusal }
        return timeout
    }
}
