import AttestKit
@testable import AttestKitClient
import AttestKitClientSimulator
import AttestKitTesting
import Foundation
import Synchronization
import Testing
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// An invalidation or a reset that arrives while what it drops is being fetched: the session token asked for
/// before ``AttestKitHTTPClient/invalidateSessionToken()``, the key attested before ``AppAttestManager/resetKey(_:)``.
/// Each must win: what the fetch brings is not kept over it.
@Suite("AttestKitClient invalidations and resets during a fetch")
struct ResetDuringFetchTests {
    /// A gate a test holds an operation at: ``pass()`` notes the arrival and waits until ``open()``.
    actor Gate {
        private var isOpen = false
        private var arrivals = 0
        private var held: [CheckedContinuation<Void, Never>] = []
        private var watchers: [CheckedContinuation<Void, Never>] = []

        /// Arrives at the gate, and waits until it is open.
        func pass() async {
            arrivals += 1
            for watcher in watchers { watcher.resume() }
            watchers = []
            guard !isOpen else { return }
            await withCheckedContinuation { held.append($0) }
        }

        /// Waits until an operation arrived at the gate.
        func arrival() async {
            guard arrivals == 0 else { return }
            await withCheckedContinuation { watchers.append($0) }
        }

        /// Opens the gate: what waits at it goes on, and so does what arrives later.
        func open() {
            isOpen = true
            for waiting in held { waiting.resume() }
            held = []
        }
    }

    /// The scripted service, with the first `POST /v1/attestations` held at a gate until the test opens it.
    final class HeldRegistration: HTTPTransport {
        let inner: FakeService
        let gate = Gate()
        private let posts = Mutex(0)

        init(_ inner: FakeService) { self.inner = inner }

        func send(_ request: URLRequest) async throws -> (Data, HTTPURLResponse) {
            if request.url?.path == "/v1/attestations" {
                let number = posts.withLock { count in
                    count += 1
                    return count
                }
                if number == 1 { await gate.pass() }
            }
            return try await inner.send(request)
        }
    }

    /// A manager over a simulated device and a scripted service whose first registration post is held.
    struct App {
        let provider = SimulatedAppAttestProvider(
            device: SimulatedDevice(
                apple: EndToEndTests.apple,
                configuration: .init(appID: ServiceProcess.appID, environment: .development)))
        let store = MemoryKeyIDStore()
        let service = FakeService()
        let transport: HeldRegistration
        let manager: AppAttestManager

        init() {
            transport = HeldRegistration(service)
            manager = AppAttestManager(
                provider: provider, keyStore: store,
                service: AttestKitService(baseURL: FakeService.serviceURL, transport: transport), random: { 0.999 })
        }

        /// Starts ``AppAttestManager/attestedKeyID()`` and returns once its registration post is held, with the key
        /// being posted.
        func attestationHeldAtItsPost() async throws -> (Task<String, any Error>, String) {
            let manager = manager
            let attesting = Task { try await manager.attestedKeyID() }
            await transport.gate.arrival()
            let posting = try #require(await manager.keyState)
            #expect(posting.stage == .attested && posting.registrationPosted == true)
            return (attesting, try #require(posting.keyID))
        }
    }

    /// A session token named `name`, good for an hour after `now`.
    static func entry(_ name: String, _ now: Date) -> SessionTokenCache.Entry {
        .init(token: SessionToken(token: name, expiresAt: now.addingTimeInterval(3600)), keyID: "key")
    }

    @Test("an invalidation during a token fetch wins: its token is not cached, and the next call fetches anew")
    func invalidationDuringTokenFetch() async throws {
        let cache = SessionTokenCache()
        let gate = Gate()
        let now = Date(timeIntervalSince1970: 1_763_700_000)
        let first = Task {
            try await cache.token(now: now, margin: 60, refused: nil) {
                await gate.pass()
                return Self.entry("A", now)
            }
        }
        await gate.arrival()
        await cache.invalidate()
        await gate.open()
        // The caller that asked before the invalidation gets the token its fetch brought.
        #expect(try await first.value.token.token == "A")

        let fetches = Counter()
        let second = try await cache.token(now: now, margin: 60, refused: nil) {
            fetches.add()
            return Self.entry("B", now)
        }
        #expect(second.token.token == "B")
        #expect(fetches.value == 1)
        #expect(try await cache.token(now: now, margin: 60, refused: nil) { Self.entry("C", now) }.token.token == "B")
    }

    @Test("a call after an invalidation does not join the fetch under way: it fetches a token of its own")
    func callAfterInvalidationFetchesItsOwn() async throws {
        let cache = SessionTokenCache()
        let gate = Gate()
        let now = Date(timeIntervalSince1970: 1_763_700_000)
        // On a cache that joined the held fetch, this would wait for ever: open the gate after a while regardless.
        let valve = Task {
            try await Task.sleep(for: .seconds(5))
            await gate.open()
        }
        defer { valve.cancel() }
        let first = Task {
            try await cache.token(now: now, margin: 60, refused: nil) {
                await gate.pass()
                return Self.entry("A", now)
            }
        }
        await gate.arrival()
        await cache.invalidate()
        let second = try await cache.token(now: now, margin: 60, refused: nil) { Self.entry("B", now) }
        #expect(second.token.token == "B")
        await gate.open()
        #expect(try await first.value.token.token == "A")
        // The held fetch, ending last, did not replace the token fetched after the invalidation.
        #expect(try await cache.token(now: now, margin: 60, refused: nil) { Self.entry("C", now) }.token.token == "B")
    }

    @Test("a reset while the key's registration is posted wins: the key is not kept, and a new one is attested")
    func resetDuringRegistration() async throws {
        let app = App()
        let (attesting, posted) = try await app.attestationHeldAtItsPost()
        try await app.manager.resetKey()
        await app.transport.gate.open()

        let interrupted = await #expect(throws: AttestKitClientError.self) { try await attesting.value }
        #expect(interrupted?.code == .unavailable)
        let state = try #require(await app.manager.keyState)
        #expect(state.keyID != posted && state.stage == .none)
        #expect(state.retiredKeyIDs == [posted])
        #expect(app.store.load()?.keyID != posted)
        #expect(app.store.registeredKeyID == nil)

        let next = try await app.manager.attestedKeyID()
        #expect(next != posted)
        #expect(app.provider.calls.generateKey == 2 && app.provider.calls.attestKey == 2)
        #expect(app.store.registeredKeyID == next)
        #expect(try await app.manager.keyIDsForErasure() == [next, posted])
    }

    @Test("a reset while a key attested with app data is posted wins: that key is not made the manager's")
    func resetDuringAppDataAttestation() async throws {
        let app = App()
        let manager = app.manager
        let attesting = Task { try await manager.attestKey(appData: Data("order 42".utf8)) }
        await app.transport.gate.arrival()
        try await manager.resetKey()
        await app.transport.gate.open()

        let interrupted = await #expect(throws: AttestKitClientError.self) { try await attesting.value }
        #expect(interrupted?.code == .unavailable, "\(String(describing: interrupted))")
        #expect(await manager.keyState?.stage != .registered, "the reset stands")
        #expect(app.store.registeredKeyID == nil)

        let next = try await manager.attestedKeyID()
        #expect(app.provider.calls.generateKey == 2)
        #expect(app.store.registeredKeyID == next)
    }

    @Test("a call after a reset does not wait for the attestation it interrupted, which saves nothing over it")
    func callAfterResetObtainsANewKey() async throws {
        let app = App()
        // On a manager that joined the held attestation, this would wait for ever: open the gate after a while.
        let gate = app.transport.gate
        let valve = Task {
            try await Task.sleep(for: .seconds(5))
            await gate.open()
        }
        defer { valve.cancel() }
        let (attesting, posted) = try await app.attestationHeldAtItsPost()
        try await app.manager.resetKey()
        let next = try await app.manager.attestedKeyID()
        #expect(next != posted && app.store.registeredKeyID == next)

        await gate.open()
        let interrupted = await #expect(throws: AttestKitClientError.self) { try await attesting.value }
        #expect(interrupted?.code == .unavailable)
        #expect(app.store.registeredKeyID == next)
        #expect(try await app.manager.attestedKeyID() == next)
        #expect(try await app.manager.keyIDsForErasure() == [next, posted])
    }

    /// A count a fetch adds to.
    final class Counter: Sendable {
        private let count = Mutex(0)

        /// The count.
        var value: Int { count.withLock { $0 } }

        /// Adds one.
        func add() { count.withLock { $0 += 1 } }
    }
}
