import AttestKit
import AttestKitAppleMock
import AttestKitServer
import AttestKitTestSupport
import AttestKitTesting
import Crypto
import Logging
import Testing

/// Cancelling a listener while connections arrive. A Hummingbird listener whose task is cancelled drops the
/// connections it accepted and had not served yet, and SwiftNIO traps on each ("Deinited NIOAsyncWriter without
/// calling finish()"): the whole process ends with SIGILL, as a CI run of this suite did. `run()` of the server and
/// of the mock must stop as a graceful shutdown does. The race is narrow, so each test runs many rounds of
/// connections opened while the cancellation lands; on the old code the process traps within a few rounds. A
/// `run()` that never returns after its cancellation fails the test at its time limit.
extension ServerLifecycleTests {
    @Test(.timeLimit(.minutes(5))) func cancellingTheMockWhileConnectionsArriveStopsIt() async throws {
        for _ in 0..<Self.rounds {
            let mock = try MockAppleServer(
                configuration: .init(
                    verificationKeyPEM: P256.Signing.PrivateKey().publicKey.pemRepresentation,
                    keyID: Fixture.appleKeyID, teamID: Fixture.teamID),
                softwareApple: Fixture.apple)
            try await Self.cancelWhileConnecting {
                try await mock.run()
            } port: {
                try await mock.port()
            }
        }
    }

    @Test(.timeLimit(.minutes(5))) func cancellingTheServerWhileConnectionsArriveStopsIt() async throws {
        for _ in 0..<Self.rounds {
            let server = try AttestKitServer(
                configuration: .init(
                    appIDs: [Fixture.appID], environments: .development, host: "127.0.0.1", port: 0,
                    storageURL: "memory:", trustAnchors: Fixture.apple.trustAnchors, logLevel: .critical))
            try await Self.cancelWhileConnecting {
                try await server.run()
            } port: {
                try await server.boundPort()
            }
        }
    }

    private static let rounds = 50

    /// Runs `run` until it listens, then opens connections to it and cancels it while they are being accepted;
    /// returns once `run` has returned.
    private static func cancelWhileConnecting(
        _ run: @escaping @Sendable () async throws -> Void, port: () async throws -> Int
    ) async throws {
        let running = Task { try? await run() }
        defer { running.cancel() }
        let port = try await port()
        let connections = await withTaskGroup(of: RawConnection?.self) { connecting in
            for _ in 0..<16 {
                connecting.addTask { try? await RawConnection.open(port: port) }
            }
            try? await Task.sleep(for: .microseconds(200))
            running.cancel()
            var connections: [RawConnection] = []
            for await connection in connecting {
                if let connection { connections.append(connection) }
            }
            return connections
        }
        await running.value
        for connection in connections { await connection.close() }
    }
}
