import AttestKitStore
import Foundation
import Testing

@testable import AttestKitStore

@Suite("Storage URLs")
struct StoreURLTests {
    @Test("memory: and sqlite:PATH")
    func simpleURLs() throws {
        #expect(try StoreURL("memory:").backend == .memory)
        let relative = try StoreURL("sqlite:attestkit-data/store.sqlite")
        #expect(relative.backend == .sqlite)
        #expect(relative.sqlitePath == "attestkit-data/store.sqlite")
        #expect(try StoreURL("sqlite:/var/lib/attestkit/store.sqlite").sqlitePath == "/var/lib/attestkit/store.sqlite")
        #expect(
            try StoreURL("sqlite:///var/lib/attestkit/store.sqlite").sqlitePath == "/var/lib/attestkit/store.sqlite")
        #expect(relative.description == "sqlite:attestkit-data/store.sqlite")
    }

    @Test("postgres:// with every part, percent-decoded, and its defaults")
    func postgresURLs() throws {
        let url = try StoreURL(
            "postgres://app%40team:p%40ss%2Fw0rd@db.internal:6543/attest?schema=tenant_1&sslmode=require")
        let postgres = try #require(url.postgres)
        #expect(url.backend == .postgres)
        #expect(postgres.username == "app@team")
        #expect(postgres.password == "p@ss/w0rd")
        #expect(postgres.host == "db.internal")
        #expect(postgres.port == 6543)
        #expect(postgres.database == "attest")
        #expect(postgres.schema == "tenant_1")
        #expect(postgres.tls == .require)
        #expect(!url.description.contains("p@ss"))
        #expect(!url.description.contains("p%40ss"))

        let defaults = try #require(try StoreURL("postgresql://attestkit@127.0.0.1/attestkit").postgres)
        // Loopback: today's default; any other host requires TLS (see defaultTLS below).
        #expect(defaults.port == 5432)
        #expect(defaults.password == nil)
        #expect(defaults.schema == "attestkit")
        #expect(defaults.tls == .prefer)
        #expect(defaults.operationTimeout == .seconds(10))
        #expect(try StoreURL("postgres://u@[::1]:5433/db").postgres?.host == "::1")
    }

    @Test(
        "sslmode is verify-full by default, prefer on a loopback host, and the URL's own when it has one",
        arguments: [
            ("db.internal", "verify-full"), ("10.0.0.5", "verify-full"), ("[fe80::1]", "verify-full"),
            ("128.0.0.1", "verify-full"), ("localhost.example.com", "verify-full"), ("127.0.0.1.nip.io", "verify-full"),
            ("[::2]", "verify-full"), ("localhost", "prefer"), ("LOCALHOST", "prefer"), ("127.0.0.1", "prefer"),
            ("127.8.9.10", "prefer"), ("[::1]", "prefer"), ("[0:0:0:0:0:0:0:1]", "prefer"),
        ])
    func defaultTLS(host: String, mode: String) throws {
        let url = try StoreURL("postgres://u@\(host):5432/db")
        #expect(url.postgres?.tls.rawValue == mode)
        #expect(url.description.contains("sslmode=\(mode)&"))
        for explicit in ["disable", "allow", "prefer", "require", "verify-ca", "verify-full"] {
            #expect(try StoreURL("postgres://u@\(host)/db?sslmode=\(explicit)").postgres?.tls.rawValue == explicit)
        }
    }

    @Test("a configuration built in code follows the same default")
    func defaultTLSInCode() {
        let remote = PostgresStoreConfiguration(host: "db.internal", username: "u", password: nil, database: "d")
        #expect(remote.tls == .verifyFull)
        #expect(PostgresStoreConfiguration(username: "u", password: nil, database: "d").tls == .prefer)
        let plain = PostgresStoreConfiguration(
            host: "db.internal", username: "u", password: nil, database: "d", tls: .disable)
        #expect(plain.tls == .disable)
        let system = PostgresStoreConfiguration(username: "u", password: nil, database: "d", rootCertificates: .system)
        #expect(system.tls == .verifyFull)
    }

    @Test(
        "a host beginning with / is the directory of a Unix-domain socket, as libpq means it; no TLS by default",
        arguments: [
            ("postgres://u:p@/db?host=/run/postgresql", "/run/postgresql", "/run/postgresql/.s.PGSQL.5432"),
            ("postgres://u@:5433/db?host=/run/postgresql/", "/run/postgresql/", "/run/postgresql/.s.PGSQL.5433"),
            ("postgres://u@%2Frun%2Fpostgresql:6432/db", "/run/postgresql", "/run/postgresql/.s.PGSQL.6432"),
            ("postgresql://u@/db?host=/&sslmode=prefer", "/", "/.s.PGSQL.5432"),
        ])
    func unixSocket(text: String, host: String, path: String) throws {
        let configuration = try #require(try StoreURL(text).postgres)
        #expect(configuration.host == host)
        #expect(configuration.unixSocketPath == path)
        #expect(configuration.tls == (text.contains("sslmode=prefer") ? .prefer : .disable))
        #expect(try StoreURL(StoreURL(text).description).postgres == StoreURL(text).postgres.map {
            var copy = $0
            copy.password = nil
            return copy
        })
        #expect(try StoreURL("postgres://u@h/db").postgres?.unixSocketPath == nil)
    }

    @Test("a socket configuration built in code: no TLS by default; TLS required, roots or a long path refused")
    func unixSocketInCode() throws {
        let socket = PostgresStoreConfiguration(host: "/run/postgresql", username: "u", password: nil, database: "d")
        #expect(socket.tls == .disable && socket.socketRefusal == nil)
        for mode in [PostgresStoreConfiguration.TLSMode.require, .verifyCA, .verifyFull] {
            var refused = socket
            refused.tls = mode
            #expect(throws: StoreError.invalidInput) { _ = try PostgresAttestationStore(configuration: refused) }
        }
        var roots = socket
        roots.rootCertificates = .file("/ca.pem")
        #expect(roots.socketRefusal != nil)
        let long = PostgresStoreConfiguration(
            host: "/" + String(repeating: "d", count: 93), username: "u", password: nil, database: "d")
        #expect(long.unixSocketPath?.utf8.count == 108)
        #expect(throws: StoreError.invalidInput) { _ = try PostgresAttestationStore(configuration: long) }
        let longest = PostgresStoreConfiguration(
            host: "/" + String(repeating: "d", count: 92), username: "u", password: nil, database: "d")
        #expect(longest.socketRefusal == nil)
    }

    @Test(
        "pool_max_conns=N sets the pool size, 1 to 1000; 20 without it",
        arguments: [("1", 1), ("8", 8), ("020", 20), ("1000", 1_000)])
    func poolSize(value: String, size: Int) throws {
        #expect(try StoreURL("postgres://u@h/db?pool_max_conns=\(value)").postgres?.maximumConnections == size)
        #expect(try StoreURL("postgres://u@h/db").postgres?.maximumConnections == 20)
        #expect(
            try StoreURL("postgres://u@h/db?pool_max_conns=\(value)").description.contains("pool_max_conns=\(size)"))
    }

    @Test("the description is a URL that parses back to the same settings, without the password")
    func descriptionRoundTrip() throws {
        let text =
            "postgres://u:secret-pw@db.internal:6543/app?schema=s1&sslmode=require&sslrootcert=/etc/ca%20dir/a%26b.pem"
            + "&pool_max_conns=7&operation_timeout=10"
        let url = try StoreURL(text)
        #expect(url.postgres?.rootCertificates == .file("/etc/ca dir/a&b.pem"))
        #expect(!url.description.contains("secret-pw"))
        var expected = try #require(url.postgres)
        expected.password = nil
        #expect(try StoreURL(url.description).postgres == expected)
        let system = try StoreURL("postgres://u@db.internal/app?sslrootcert=system")
        #expect(try StoreURL(system.description).postgres == system.postgres)
    }

    @Test(
        "operation_timeout=SECONDS sets the PostgreSQL operation deadline",
        arguments: [
            ("1", Duration.seconds(1)), ("2.5", .milliseconds(2_500)), ("0.001", .milliseconds(1)),
            ("3600", .seconds(3_600)),
        ])
    func operationTimeout(value: String, timeout: Duration) throws {
        let url = try StoreURL("postgres://u@h/db?sslmode=disable&operation_timeout=\(value)")
        #expect(url.postgres?.operationTimeout == timeout)
        #expect(url.postgres?.tls == .disable)
    }

    @Test(
        "anything else is refused clearly",
        arguments: [
            "", "memory", "memory:x", "sqlite:", "sqlite:dir/", "mysql://u@h/db", "file:///tmp/x", "postgres://",
            "postgres://h/db", "postgres://u@h", "postgres://u@h/", "postgres://u@h/a/b", "postgres://u@h:0/db",
            "postgres://u@h/db?schema=Bad-Name", "postgres://u@h/db?sslmode=verify", "postgres://u@h/db?search_path=x",
            "postgres://u@h/db?schema=", "sqlite:a\u{0}b", "postgres://u@h/db?operation_timeout=0",
            "postgres://u@h/db?operation_timeout=0.0004", "postgres://u@h/db?operation_timeout=-1",
            "postgres://u@h/db?operation_timeout=3601", "postgres://u@h/db?operation_timeout=1e3",
            "postgres://u@h/db?operation_timeout=9999999999999999",
            "postgres://u@h/db?operation_timeout=nan", "postgres://u@h/db?operation_timeout=.",
            "postgres://u@h/db?operation_timeout=10s", "postgres://u@h/db?operation_timeout=",
            // sslmode: libpq's six names only, as written.
            "postgres://u@h/db?sslmode=verify_full", "postgres://u@h/db?sslmode=VERIFY-FULL",
            "postgres://u@h/db?sslmode=required", "postgres://u@h/db?sslmode=true", "postgres://u@h/db?sslmode=",
            // sslrootcert: system needs verify-full (libpq 16); roots with TLS off are a contradiction.
            "postgres://u@h/db?sslrootcert=system&sslmode=require",
            "postgres://u@h/db?sslmode=verify-ca&sslrootcert=system",
            "postgres://u@h/db?sslrootcert=system&sslmode=disable",
            "postgres://u@h/db?sslrootcert=/ca.pem&sslmode=disable",
            "postgres://u@h/db?sslrootcert=",
            // pool_max_conns: a whole number from 1 to 1000.
            "postgres://u@h/db?pool_max_conns=0", "postgres://u@h/db?pool_max_conns=1001",
            "postgres://u@h/db?pool_max_conns=-1", "postgres://u@h/db?pool_max_conns=1e3",
            "postgres://u@h/db?pool_max_conns=10000", "postgres://u@h/db?pool_max_conns=5.0",
            "postgres://u@h/db?pool_max_conns=%205", "postgres://u@h/db?pool_max_conns=",
            "postgres://u@h/db?pool_size=5", "postgres://u@h/db?max_connections=5",
            // host=DIRECTORY: an absolute path, once, when the authority names no host; a socket carries no TLS.
            "postgres://u@h/db?host=/run/postgresql", "postgres://u@/db?host=run/postgresql", "postgres://u@/db?host=",
            "postgres://u@/db?host=/a&host=/b", "postgres://u@/db?host=db.internal", "postgres://u@/db",
            "postgres://u@/db?host=/run/postgresql&sslmode=require",
            "postgres://u@/db?host=/run/postgresql&sslmode=verify-ca",
            "postgres://u@/db?host=/run/postgresql&sslmode=verify-full",
            "postgres://u@/db?host=/run/postgresql&sslrootcert=system",
            "postgres://u@/db?host=/run/postgresql&sslmode=prefer&sslrootcert=/ca.pem",
            "postgres://u@/db?host=/\(String(repeating: "d", count: 93))",
        ])
    func refused(text: String) {
        #expect(throws: StoreError.invalidURL) { _ = try StoreURL(text) }
    }

    @Test("withStore runs a prepared store and closes it")
    func withStore() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let url = try StoreURL("sqlite:" + directory.url.appendingPathComponent("a/b/store.sqlite").path)
        let counts = try await url.withStore { store in
            _ = try await store.issueChallenge(purpose: .attest, now: TestKeys.t0)
            return try await store.keyCounts()
        }
        #expect(counts.total == 0)
        #expect(FileManager.default.fileExists(atPath: directory.url.appendingPathComponent("a/b/store.sqlite").path))
        #expect(try await StoreURL("memory:").withStore { _ in 1 } == 1)
    }
}
