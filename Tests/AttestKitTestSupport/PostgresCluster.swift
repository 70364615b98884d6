public import AttestKit
public import AttestKitStore
import AttestKitTesting
public import Foundation

#if canImport(Glibc)
import Glibc
private let streamSocket = Int32(SOCK_STREAM.rawValue)
#elseif canImport(Darwin)
import Darwin
private let streamSocket = SOCK_STREAM
#endif

/// A private PostgreSQL cluster for fault tests, made and driven by `scripts/postgres-cluster`: `initdb` in a
/// temporary directory, its own port on 127.0.0.1, role `attestkit` logging in without a password, database
/// `postgres`. Never the machine's own cluster, so the tests may restart, stop, crash (SIGKILL) and freeze
/// (SIGSTOP) it. As root the script runs PostgreSQL as the `postgres` user, which PostgreSQL requires.
///
/// Always call ``destroy()``, also when the test fails: it thaws and stops the cluster and removes its directory.
public final class PostgresCluster: Sendable {
    /// A failed cluster command.
    public struct Failure: Error, CustomStringConvertible {
        /// What went wrong, with the script's standard error.
        public let description: String
    }

    /// `scripts/postgres-cluster` in this repository.
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("scripts/postgres-cluster")

    /// The cluster's directory (data, log, socket).
    public let directory: URL
    /// The port it listens on, on 127.0.0.1.
    public let port: Int

    private init(directory: URL, port: Int) {
        self.directory = directory
        self.port = port
    }

    /// Whether PostgreSQL's server binaries are installed (`scripts/postgres` installs them).
    public static var isInstalled: Bool {
        let versions = (try? FileManager.default.contentsOfDirectory(atPath: "/usr/lib/postgresql")) ?? []
        return versions.contains {
            FileManager.default.isExecutableFile(atPath: "/usr/lib/postgresql/\($0)/bin/initdb")
        }
    }

    /// Creates and starts a cluster on a free port.
    public static func create() async throws -> PostgresCluster {
        var lastError: (any Error)?
        for _ in 0..<3 {
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
                "attestkit-pg-\(UUID().uuidString.prefix(8))")
            let cluster = PostgresCluster(directory: directory, port: try freePort())
            do {
                try await cluster.run("create", String(cluster.port))
                return cluster
            } catch {
                lastError = error
                try? await cluster.destroy()
            }
        }
        throw lastError ?? Failure(description: "no cluster")
    }

    /// Starts the cluster (after ``stop()`` or ``kill()``), waiting until it accepts connections.
    public func start() async throws { try await run("start") }
    /// Fast shutdown: clients are disconnected.
    public func stop() async throws { try await run("stop") }
    /// Fast shutdown, then start.
    public func restart() async throws { try await run("restart") }
    /// SIGKILL of the postmaster: a crash. ``start()`` recovers from the WAL.
    public func kill() async throws { try await run("kill") }
    /// SIGSTOP of the postmaster and its backends: a hung host that still accepts TCP connections.
    public func freeze() async throws { try await run("freeze") }
    /// SIGCONT of what ``freeze()`` stopped.
    public func thaw() async throws { try await run("thaw") }
    /// Turns TLS on with a test CA's server certificate for 127.0.0.1 and `localhost`, and restarts: returns the
    /// PEM paths of that CA and of another CA that signed nothing here.
    public func enableTLS() async throws -> (ca: String, otherCA: String) {
        try await run("tls")
        let tls = directory.appendingPathComponent("tls")
        return (tls.appendingPathComponent("ca.pem").path, tls.appendingPathComponent("other-ca.pem").path)
    }
    /// Thaws, stops and removes the cluster.
    public func destroy() async throws { try await run("destroy") }

    /// A store configuration for `schema` on this cluster.
    public func configuration(schema: String, operationTimeout: Duration) -> PostgresStoreConfiguration {
        PostgresStoreConfiguration(
            host: "127.0.0.1", port: port, username: "attestkit", password: nil, database: "postgres",
            schema: schema, tls: .disable, maximumConnections: PostgresTestServer.connectionsPerStore,
            connectTimeout: .seconds(2), operationTimeout: operationTimeout)
    }

    /// The storage URL of ``configuration(schema:operationTimeout:)``, for `attestkit serve --storage`.
    public func url(schema: String, operationTimeout: Duration) -> String {
        "postgres://attestkit@127.0.0.1:\(port)/postgres?schema=\(schema)&sslmode=disable"
            + "&operation_timeout=\(operationTimeout.components.seconds)"
    }

    /// The stored counter of each key in `schema` (-1 for a key that is not there), read by a store of its own.
    public func storedCounters(schema: String, keys: [KeyID]) async throws -> [Int] {
        let store = try PostgresAttestationStore(
            configuration: configuration(schema: schema, operationTimeout: .seconds(5)))
        return try await withThrowingTaskGroup(of: [Int]?.self) { group in
            group.addTask {
                try await store.run()
                return nil
            }
            defer { group.cancelAll() }
            var counters: [Int] = []
            for key in keys {
                counters.append(try await store.key(key).map { Int($0.counter) } ?? -1)
            }
            await store.close()
            return counters
        }
    }

    private func run(_ arguments: String...) async throws {
        let process = try ChildProcess(
            executable: Self.script.path, arguments: [arguments[0], directory.path] + arguments.dropFirst(),
            standardOutput: .null, standardError: .pipe)
        let output = try await process.collectOutput()
        guard output.termination == .exit(0) else {
            let command = "postgres-cluster " + arguments.joined(separator: " ")
            let text = String(decoding: output.standardError, as: UTF8.self)
            throw Failure(description: "\(command) ended with \(output.termination): \(text)")
        }
    }

    /// A port nothing listens on now, from the kernel (bind to port 0).
    private static func freePort() throws -> Int {
        let descriptor = socket(AF_INET, streamSocket, 0)
        guard descriptor >= 0 else { throw Failure(description: "socket() failed") }
        defer { close(descriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(descriptor, $0, length) == 0 && getsockname(descriptor, $0, &length) == 0
            }
        }
        guard bound else { throw Failure(description: "bind() failed") }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}
