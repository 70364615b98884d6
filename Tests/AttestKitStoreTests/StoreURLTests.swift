import AttestKitStore
import Foundation
import Testing

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
        "sslmode is require by default, prefer on a loopback host, and the URL's own when it has one",
        arguments: [
            ("db.internal", "require"), ("10.0.0.5", "require"), ("[fe80::1]", "require"), ("128.0.0.1", "require"),
            ("localhost.example.com", "require"), ("127.0.0.1.nip.io", "require"), ("[::2]", "require"),
            ("localhost", "prefer"), ("LOCALHOST", "prefer"), ("127.0.0.1", "prefer"), ("127.8.9.10", "prefer"),
            ("[::1]", "prefer"), ("[0:0:0:0:0:0:0:1]", "prefer"),
        ])
    func defaultTLS(host: String, mode: String) throws {
        let url = try StoreURL("postgres://u@\(host):5432/db")
        #expect(url.postgres?.tls.rawValue == mode)
        #expect(url.description.hasSuffix("sslmode=\(mode)"))
        for explicit in ["disable", "prefer", "require"] {
            #expect(try StoreURL("postgres://u@\(host)/db?sslmode=\(explicit)").postgres?.tls.rawValue == explicit)
        }
    }

    @Test("a configuration built in code follows the same default")
    func defaultTLSInCode() {
        let remote = PostgresStoreConfiguration(host: "db.internal", username: "u", password: nil, database: "d")
        #expect(remote.tls == .require)
        #expect(PostgresStoreConfiguration(username: "u", password: nil, database: "d").tls == .prefer)
        let plain = PostgresStoreConfiguration(
            host: "db.internal", username: "u", password: nil, database: "d", tls: .disable)
        #expect(plain.tls == .disable)
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
            "postgres://u@h/db?operation_timeout=nan", "postgres://u@h/db?operation_timeout=.",
            "postgres://u@h/db?operation_timeout=10s", "postgres://u@h/db?operation_timeout=",
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
