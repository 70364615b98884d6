public import Foundation
public import Logging
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Writes a ``VerificationBundle`` for every failed verification into a directory (opt-in, `record.directory`),
/// bounded in count and bytes, oldest removed first.
///
/// Two quotas, so that nobody can flush the evidence by sending garbage: refusals of **known** keys (an assertion of a
/// key the store holds; an attestation refused at or after its receipt, which Apple's certificate chain must pass
/// first, or after verification) are bounded by ``maximumCount`` and ``maximumBytes``; everything else (unknown
/// keys, malformed input, attestations refused before their chain was known good: anyone can send those) by
/// ``unknownMaximumCount`` and ``unknownMaximumBytes``, small by default, and never evicts a known key's bundle.
/// ``Quota/init(of:)`` decides. Bundles of the unknown quota end in `-unknown.json`.
///
/// Within the known quota, one key keeps at most ``maximumPerKey`` bundles: past that, a bundle of the key replaces
/// the key's own oldest. Anyone can send refused assertions that name a registered key (their own device's, or a
/// key id they saw), so without this one key could flush every other key's evidence; with it, a flood naming one key
/// removes at most ``maximumPerKey`` bundles of others (k key ids, up to k times that). The count is kept from the recorder's start: bundles already
/// in the directory when it starts count against the quota, not against their key.
///
/// The recorder runs on a thread of its own (a dedicated serial executor): its blocking file I/O never holds a
/// thread of the cooperative pool. The thread ends when the recorder is released. The gate and the registrar hand it
/// their bundles (``submit(_:)``) and answer at once: a refusal never waits for its file, and at most
/// ``maximumPending`` bundles wait to be written; past that (a flood faster than the disk) a bundle is dropped, and the
/// drops are counted (`attestkit_verification_bundles_dropped_total`, with the `metrics` of the initializer) and
/// logged in a line when the recorder has caught up (none left waiting), and once a minute while a flood lasts. A
/// shutdown waits a few seconds for the bundles still waiting (``settled(within:)``) before it closes the store.
///
/// Files are created with mode 0600 (exclusively, never overwriting), the directory with 0700 when it is created
/// here. Only refusals are recorded (malformed input, failed verification, replays); an unavailable store, a rate
/// limit or a missing configuration is not a verification failure. Writing never changes an answer: a bundle that
/// cannot be written is logged (its file name and the reason, never its contents) and dropped.
///
/// ```swift
/// let recorder = try VerificationRecorder(directory: "/var/lib/attestkit/bundles", policy: deployment)
/// let gate = AssertionGate(store: store, recorder: recorder)
/// ```
public actor VerificationRecorder {
    /// Which bound a bundle counts against.
    public enum Quota: String, Sendable, Hashable {
        /// A refusal of a known key: an assertion of a key the store holds (its record is in the bundle); an
        /// attestation refused by its receipt or the policy (checked only once Apple's certificate chain verified)
        /// or after verification (`challenge_app_mismatch`; the key step: `key_exists`; the registration).
        case known
        /// Anything anyone can send: unknown keys, malformed input, attestations refused before their chain
        /// verified, challenges refused before verification.
        case unknown

        /// The quota of `bundle`.
        public init(of bundle: VerificationBundle) {
            switch bundle.kind {
            case .assertion:
                self = bundle.assertion?.key != nil ? .known : .unknown
            case .attestation:
                // Refused by its receipt or the policy, or (`challenge_app_mismatch`) once it verified: only a
                // genuine device gets there.
                let verified =
                    ["receipt", "policy"].contains(bundle.outcome.check)
                    || bundle.outcome.code == "challenge_app_mismatch"
                let afterVerification = [.key, .registration].contains(bundle.attestation?.storeAnswer?.step)
                self = verified || afterVerification ? .known : .unknown
            }
        }
    }

    /// The directory bundles are written to.
    public nonisolated let directory: String
    /// At most this many bundles of known keys are kept.
    public nonisolated let maximumCount: Int
    /// At most this many bytes of bundles of known keys are kept.
    public nonisolated let maximumBytes: Int
    /// At most this many bundles of one known key are kept (recorded since the recorder started).
    public nonisolated let maximumPerKey: Int
    /// At most this many bundles of the unknown quota are kept (0: none is recorded).
    public nonisolated let unknownMaximumCount: Int
    /// At most this many bytes of bundles of the unknown quota are kept.
    public nonisolated let unknownMaximumBytes: Int
    /// The deployment policy attestation bundles record (their replay applies it again).
    public nonisolated let policy: DeploymentPolicy?
    private let logger: Logger
    private nonisolated let metrics: FlowMetrics?
    private let now: @Sendable () -> Date
    private var index: [Entry]?
    private nonisolated let executor: DedicatedThreadExecutor
    /// At most this many bundles handed over by ``submit(_:)`` wait to be written.
    public nonisolated let maximumPending: Int
    private nonisolated let queue = Mutex(Queue())

    /// The bundles handed over and not yet written, in the order they were handed over.
    private struct Queue {
        /// Handed over and not yet taken by the drain.
        var jobs: [@Sendable () async -> VerificationBundle] = []
        /// Taken by ``submit(_:)`` since the start (dropped ones not counted).
        var submitted = 0
        /// Written or given up since the start, in the order they were submitted.
        var finished = 0
        /// Whether a drain runs.
        var draining = false
        /// Dropped since the drops were last logged.
        var dropped = 0
        /// When the drops were last logged.
        var droppedLogged: ContinuousClock.Instant?
        /// Callers of ``settled()``, each with its number and the submission it waits for.
        var waiters: [(id: Int, upTo: Int, continuation: CheckedContinuation<Void, Never>)] = []
        /// The number of the last caller of ``settled()``.
        var lastWaiter = 0

        /// Handed over and not yet written.
        var pending: Int { submitted - finished }
    }

    /// The recorder's own thread: file I/O blocks.
    public nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }

    /// A bundle kept.
    private struct Entry {
        var name: String
        var bytes: Int
        var quota: Quota
        /// The key of a known key's bundle recorded since the start (its key id, Base64), or `nil`.
        var key: String? = nil
    }

    /// Creates a recorder, creating `directory` (mode 0700) if it does not exist.
    /// - Parameters:
    ///   - directory: Where the bundles are written.
    ///   - maximumCount: Bundles of known keys kept, 1 to 1,000,000 (default 1,000).
    ///   - maximumBytes: Bytes of bundles of known keys kept, at least one bundle's ``VerificationBundle/maximumBytes``
    ///     (default 100 MiB).
    ///   - maximumPerKey: Bundles of one known key kept, 1 to `maximumCount` (default 10, or `maximumCount` when
    ///     that is smaller).
    ///   - unknownMaximumCount: Bundles of the unknown quota kept, 0 (none recorded) to 1,000,000 (default 100).
    ///   - unknownMaximumBytes: Bytes of bundles of the unknown quota kept, at least one bundle's
    ///     ``VerificationBundle/maximumBytes`` (default 10 MiB).
    ///   - policy: The deployment policy attestation bundles record, so that their replay applies it again.
    ///   - maximumPending: Bundles handed over by ``submit(_:)`` that may wait to be written, 1 to 100,000
    ///     (default 256); past it a bundle is dropped.
    ///   - logger: Where failures to record are logged.
    ///   - metrics: Where bundles not kept are counted (`attestkit_verification_bundles_dropped_total`), or `nil`.
    ///   - now: The clock (injected for tests).
    /// - Throws: `record_unavailable` (not configured) when the directory cannot be created or is not one, or
    ///   `invalid_field` for limits out of range.
    public init(
        directory: String, maximumCount: Int = 1_000, maximumBytes: Int = 100 << 20, maximumPerKey: Int? = nil,
        unknownMaximumCount: Int = 100, unknownMaximumBytes: Int = 10 << 20, policy: DeploymentPolicy? = nil,
        maximumPending: Int = 256, logger: Logger = Logger(label: "attestkit.record"), metrics: FlowMetrics? = nil,
        now: @escaping @Sendable () -> Date = { Date() }
    ) throws(FlowError) {
        guard (1...100_000).contains(maximumPending) else {
            throw FlowError.invalidField("maximumPending", "is 1 to 100000")
        }
        guard (1...1_000_000).contains(maximumCount) else {
            throw FlowError.invalidField("record.max-bundles", "is 1 to 1000000")
        }
        guard maximumBytes >= VerificationBundle.maximumBytes else {
            throw FlowError.invalidField("record.max-bytes", "is at least \(VerificationBundle.maximumBytes)")
        }
        let maximumPerKey = maximumPerKey ?? min(10, maximumCount)
        guard (1...maximumCount).contains(maximumPerKey) else {
            throw FlowError.invalidField("record.max-bundles-per-key", "is 1 to record.max-bundles")
        }
        guard (0...1_000_000).contains(unknownMaximumCount) else {
            throw FlowError.invalidField("record.unknown-max-bundles", "is 0 to 1000000")
        }
        guard unknownMaximumBytes >= VerificationBundle.maximumBytes else {
            throw FlowError.invalidField(
                "record.unknown-max-bytes", "is at least \(VerificationBundle.maximumBytes)")
        }
        var isDirectory: ObjCBool = false
        if !FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory) {
            guard mkdir(directory, 0o700) == 0 else {
                throw FlowError(.recordUnavailable, .notConfigured, "\(directory) cannot be created (errno \(errno))")
            }
        } else if !isDirectory.boolValue {
            throw FlowError(.recordUnavailable, .notConfigured, "\(directory) is not a directory")
        }
        self.directory = directory
        self.maximumCount = maximumCount
        self.maximumBytes = maximumBytes
        self.maximumPerKey = maximumPerKey
        self.unknownMaximumCount = unknownMaximumCount
        self.unknownMaximumBytes = unknownMaximumBytes
        self.policy = policy
        self.maximumPending = maximumPending
        self.executor = DedicatedThreadExecutor(name: "attestkit.record")
        self.logger = logger
        self.metrics = metrics
        self.now = now
    }

    /// Whether `error` is a verification failure worth a bundle: malformed input, a refusal or a replay; not an
    /// unavailable dependency, a rate limit, a missing configuration or a bug.
    public static func records(_ error: FlowError) -> Bool {
        switch error.kind {
        case .malformed, .refused, .conflict, .unauthenticated: true
        case .notFound, .tooLarge, .rateLimited, .unavailable, .notConfigured, .upstreamFailure, .internalFailure: false
        }
    }

    /// The names of the bundles kept, oldest first, once every bundle handed over so far is written.
    public func bundleNames() async -> [String] {
        await settled()
        return loadIndex().map(\.name)
    }

    /// Hands a bundle to the recorder and returns at once: `make` (which may read the store) and the write run in
    /// the recorder's own task, one bundle after another in the order they were handed over, outside the caller's
    /// task (its cancellation and its request's storage deadline). Past ``maximumPending`` waiting, the bundle is
    /// dropped without `make` being called.
    /// - Returns: Whether the bundle was taken.
    @discardableResult
    public nonisolated func submit(_ make: @escaping @Sendable () async -> VerificationBundle) -> Bool {
        let (taken, start) = queue.withLock { queue in
            guard queue.pending < maximumPending else {
                queue.dropped += 1
                return (false, false)
            }
            queue.jobs.append(make)
            queue.submitted += 1
            defer { queue.draining = true }
            return (true, !queue.draining)
        }
        if !taken { metrics?.verificationBundleDropped(.queueFull) }
        // Detached: a task of the caller's would carry its task-locals (a request's storage deadline, which a drain
        // outliving the request would then hold every later bundle's store read to).
        if start { Task.detached { await self.drain() } }
        return taken
    }

    /// Waits until every bundle handed over by ``submit(_:)`` before this call is written or given up (not for
    /// those handed over meanwhile: a steady stream of refusals does not keep it waiting), or until the calling task
    /// is cancelled.
    public nonisolated func settled() async {
        let id = queue.withLock { queue in
            queue.lastWaiter += 1
            return queue.lastWaiter
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (waiter: CheckedContinuation<Void, Never>) in
                // Under the lock the cancellation handler takes too: cancelled before, it is seen here; after, the
                // handler finds the waiter and resumes it.
                let done = queue.withLock { queue in
                    guard queue.finished < queue.submitted, !Task.isCancelled else { return true }
                    queue.waiters.append((id, queue.submitted, waiter))
                    return false
                }
                if done { waiter.resume() }
            }
        } onCancel: {
            let waiter = queue.withLock { queue -> CheckedContinuation<Void, Never>? in
                guard let index = queue.waiters.firstIndex(where: { $0.id == id }) else { return nil }
                return queue.waiters.remove(at: index).continuation
            }
            waiter?.resume()
        }
    }

    /// How many callers of ``settled()`` wait (for tests).
    package nonisolated var waitingCallers: Int { queue.withLock { $0.waiters.count } }

    /// ``settled()``, giving up after `limit` (at once when the calling task is cancelled): what a shutdown waits
    /// before it closes the store.
    /// - Returns: Whether every bundle handed over before the call was written in time.
    public nonisolated func settled(within limit: Duration) async -> Bool {
        await withTaskGroup(of: Bool.self) { group in
            group.addTask {
                await self.settled()
                return !Task.isCancelled
            }
            group.addTask {
                try? await Task.sleep(for: limit)
                return false
            }
            // The first to end decides; cancelling the other ends it at once (its waiter is taken out).
            let first = await group.next() ?? false
            group.cancelAll()
            return first
        }
    }

    /// Writes the bundles handed over, in order, until none is left; resumes the waiters whose submissions are all
    /// written, and logs the bundles dropped meanwhile when it has caught up (none pending), or once a minute while
    /// it has not.
    private func drain() async {
        while true {
            let jobs = queue.withLock { queue in
                defer { queue.jobs = [] }
                if queue.jobs.isEmpty { queue.draining = false }
                return queue.jobs
            }
            guard !jobs.isEmpty else { return }
            for make in jobs {
                record(await make())
                let (dropped, ready) = queue.withLock { queue in
                    queue.finished += 1
                    let finished = queue.finished
                    let ready = queue.waiters.filter { $0.upTo <= finished }.map(\.continuation)
                    queue.waiters.removeAll { $0.upTo <= finished }
                    // Logged once caught up, or once a minute while a flood lasts.
                    let now = ContinuousClock.now
                    let minuteAgo = queue.droppedLogged.map { now - $0 >= .seconds(60) } ?? true
                    guard queue.dropped > 0, queue.pending == 0 || minuteAgo else { return (0, ready) }
                    defer { (queue.dropped, queue.droppedLogged) = (0, now) }
                    return (queue.dropped, ready)
                }
                if dropped > 0 {
                    logger.warning(
                        "verification bundles were dropped: refusals came faster than they could be written",
                        metadata: ["dropped": "\(dropped)", "maximum-pending": "\(maximumPending)"])
                }
                for waiter in ready { waiter.resume() }
            }
        }
    }

    /// Writes `bundle`, then removes the oldest bundles of its key past ``maximumPerKey`` (known keys only), then the
    /// oldest bundles of its ``Quota`` past that quota's bounds: a bundle of the unknown quota never removes one of a
    /// known key.
    /// - Returns: The file's name in ``directory``, or `nil` when it could not be written (logged) or its quota
    ///   records nothing (``unknownMaximumCount`` 0).
    @discardableResult
    public func record(_ bundle: VerificationBundle) -> String? {
        let quota = Quota(of: bundle)
        let (maximumCount, maximumBytes) =
            quota == .known ? (maximumCount, maximumBytes) : (unknownMaximumCount, unknownMaximumBytes)
        guard maximumCount > 0 else { return nil }
        let bytes: [UInt8]
        do {
            bytes = try bundle.encoded()
        } catch {
            logger.warning("a verification bundle could not be encoded", metadata: ["code": "\(bundle.outcome.code)"])
            metrics?.verificationBundleDropped(.unwritable)
            return nil
        }
        guard bytes.count <= VerificationBundle.maximumBytes else {
            logger.warning("a verification bundle was too large to record", metadata: ["bytes": "\(bytes.count)"])
            metrics?.verificationBundleDropped(.unwritable)
            return nil
        }
        var entries = loadIndex()
        // Names sort in the order bundles were written: the time prefix strictly increases, also within one
        // millisecond and after a restart (past the newest bundle already there).
        let newest = entries.last.flatMap { Int64($0.name.prefix(15)) } ?? -1
        let milliseconds = max(Int64((now().timeIntervalSince1970 * 1_000).rounded(.down)), newest + 1, 0)
        let suffix = String(UInt32.random(in: .min ... .max), radix: 16)
        let name =
            String(repeating: "0", count: max(0, 15 - String(milliseconds).count)) + "\(milliseconds)-"
            + "\(bundle.kind.rawValue)-" + String(repeating: "0", count: 8 - suffix.count) + suffix
            + (quota == .known ? ".json" : "-unknown.json")
        guard writeFile(bytes, to: directory + "/" + name) else {
            metrics?.verificationBundleDropped(.unwritable)
            return nil
        }
        let key = quota == .known ? bundle.assertion?.keyId ?? bundle.attestation?.keyId : nil
        // The name sorts after every other (its time prefix is past the newest's): the index stays in order.
        entries.append(Entry(name: name, bytes: bytes.count, quota: quota, key: key))
        // First the key's own oldest past its share, then this quota's oldest.
        if let key {
            var kept = entries.count { $0.key == key }
            while kept > maximumPerKey, let position = entries.firstIndex(where: { $0.key == key }) {
                remove(entries.remove(at: position))
                kept -= 1
            }
        }
        var count = entries.count { $0.quota == quota }
        var total = entries.reduce(0) { $0 + ($1.quota == quota ? $1.bytes : 0) }
        while count > maximumCount || total > maximumBytes,
            let position = entries.firstIndex(where: { $0.quota == quota })
        {
            let oldest = entries.remove(at: position)
            remove(oldest)
            count -= 1
            total -= oldest.bytes
        }
        index = entries
        logger.info(
            "recorded a failed verification",
            metadata: ["file": "\(name)", "kind": "\(bundle.kind.rawValue)", "code": "\(bundle.outcome.code)"])
        return name
    }

    /// Deletes a bundle's file (one already gone is not an error).
    private func remove(_ entry: Entry) {
        if unlink(directory + "/" + entry.name) != 0 && errno != ENOENT {
            logger.warning("an old verification bundle could not be removed", metadata: ["file": "\(entry.name)"])
        }
    }

    /// Whether `name` is the name of a bundle this recorder writes (and may remove).
    static func isBundleName(_ name: String) -> Bool {
        quota(ofName: name) != nil
    }

    /// The quota of the bundle named `name` (`NNNNNNNNNNNNNNN-kind-xxxxxxxx.json`, or `...-xxxxxxxx-unknown.json`),
    /// or `nil` when it is not a bundle's name.
    static func quota(ofName name: String) -> Quota? {
        let parts = name.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 3 || (parts.count == 4 && parts[3] == "unknown.json"), parts[0].count == 15,
            parts[0].allSatisfy(\.isASCII), parts[0].allSatisfy(\.isNumber),
            ["attestation", "assertion"].contains(String(parts[1]))
        else { return nil }
        let random: Substring
        if parts.count == 4 {
            random = parts[2]
        } else {
            guard parts[2].hasSuffix(".json") else { return nil }
            random = parts[2].dropLast(".json".count)
        }
        guard random.count == 8, random.allSatisfy(\.isHexDigit) else { return nil }
        return parts.count == 3 ? .known : .unknown
    }

    private func loadIndex() -> [Entry] {
        if let index { return index }
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        let loaded = names.sorted().compactMap { name -> Entry? in
            guard let quota = Self.quota(ofName: name) else { return nil }
            let size = (try? FileManager.default.attributesOfItem(atPath: directory + "/" + name)[.size]) as? Int
            return Entry(name: name, bytes: size ?? 0, quota: quota)
        }
        index = loaded
        return loaded
    }

    private func writeFile(_ bytes: [UInt8], to path: String) -> Bool {
        let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            logger.warning(
                "a verification bundle could not be created",
                metadata: ["file": "\((path as NSString).lastPathComponent)", "errno": "\(errno)"])
            return false
        }
        var written = 0
        let complete = bytes.withUnsafeBytes { buffer -> Bool in
            while written < buffer.count {
                let result = write(descriptor, buffer.baseAddress.map { $0 + written }, buffer.count - written)
                if result < 0 {
                    if errno == EINTR { continue }
                    return false
                }
                written += result
            }
            return true
        }
        close(descriptor)
        if !complete {
            logger.warning(
                "a verification bundle could not be written",
                metadata: ["file": "\((path as NSString).lastPathComponent)", "errno": "\(errno)"])
            unlink(path)
        }
        return complete
    }
}
