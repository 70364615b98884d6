public import Foundation
public import Logging

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
    /// The directory bundles are written to.
    public nonisolated let directory: String
    /// At most this many bundles are kept.
    public nonisolated let maximumCount: Int
    /// At most this many bytes of bundles are kept.
    public nonisolated let maximumBytes: Int
    /// The deployment policy attestation bundles record (their replay applies it again).
    public nonisolated let policy: DeploymentPolicy?
    private let logger: Logger
    private let now: @Sendable () -> Date
    private var index: [(name: String, bytes: Int)]?

    /// Creates a recorder, creating `directory` (mode 0700) if it does not exist.
    /// - Parameters:
    ///   - directory: Where the bundles are written.
    ///   - maximumCount: Bundles kept, 1 to 1,000,000 (default 1,000).
    ///   - maximumBytes: Bytes kept, at least one bundle's ``VerificationBundle/maximumBytes`` (default 100 MiB).
    ///   - policy: The deployment policy attestation bundles record, so that their replay applies it again.
    ///   - logger: Where failures to record are logged.
    ///   - now: The clock (injected for tests).
    /// - Throws: `record_unavailable` (not configured) when the directory cannot be created or is not one, or
    ///   `invalid_field` for limits out of range.
    public init(
        directory: String, maximumCount: Int = 1_000, maximumBytes: Int = 100 << 20, policy: DeploymentPolicy? = nil,
        logger: Logger = Logger(label: "attestkit.record"), now: @escaping @Sendable () -> Date = { Date() }
    ) throws(FlowError) {
        guard (1...1_000_000).contains(maximumCount) else {
            throw FlowError.invalidField("record.max-bundles", "is 1 to 1000000")
        }
        guard maximumBytes >= VerificationBundle.maximumBytes else {
            throw FlowError.invalidField("record.max-bytes", "is at least \(VerificationBundle.maximumBytes)")
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
        self.policy = policy
        self.logger = logger
        self.now = now
    }

    /// Whether `error` is a verification failure worth a bundle: malformed input, a refusal or a replay; not an
    /// unavailable dependency, a rate limit, a missing configuration or a bug.
    public static func records(_ error: FlowError) -> Bool {
        switch error.kind {
        case .malformed, .refused, .conflict, .unauthenticated: true
        case .notFound, .rateLimited, .unavailable, .notConfigured, .upstreamFailure, .internalFailure: false
        }
    }

    /// The names of the bundles kept, oldest first.
    public func bundleNames() -> [String] {
        loadIndex().map(\.name)
    }

    /// Writes `bundle`, then removes the oldest bundles past the bounds.
    /// - Returns: The file's name in ``directory``, or `nil` when it could not be written (logged).
    @discardableResult
    public func record(_ bundle: VerificationBundle) -> String? {
        let bytes: [UInt8]
        do {
            bytes = try bundle.encoded()
        } catch {
            logger.warning("a verification bundle could not be encoded", metadata: ["code": "\(bundle.outcome.code)"])
            return nil
        }
        guard bytes.count <= VerificationBundle.maximumBytes else {
            logger.warning("a verification bundle was too large to record", metadata: ["bytes": "\(bytes.count)"])
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
            + "\(bundle.kind.rawValue)-" + String(repeating: "0", count: 8 - suffix.count) + suffix + ".json"
        guard writeFile(bytes, to: directory + "/" + name) else { return nil }
        entries.append((name, bytes.count))
        entries.sort { $0.name < $1.name }
        var total = entries.reduce(0) { $0 + $1.bytes }
        while entries.count > maximumCount || total > maximumBytes, let oldest = entries.first {
            if unlink(directory + "/" + oldest.name) != 0 && errno != ENOENT {
                logger.warning("an old verification bundle could not be removed", metadata: ["file": "\(oldest.name)"])
            }
            total -= oldest.bytes
            entries.removeFirst()
        }
        index = entries
        logger.info(
            "recorded a failed verification",
            metadata: ["file": "\(name)", "kind": "\(bundle.kind.rawValue)", "code": "\(bundle.outcome.code)"])
        return name
    }

    /// Whether `name` is the name of a bundle this recorder writes (and may remove).
    static func isBundleName(_ name: String) -> Bool {
        let parts = name.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0].count == 15, parts[0].allSatisfy(\.isASCII), parts[0].allSatisfy(\.isNumber),
            ["attestation", "assertion"].contains(String(parts[1])), parts[2].hasSuffix(".json")
        else { return false }
        let random = parts[2].dropLast(".json".count)
        return random.count == 8 && random.allSatisfy(\.isHexDigit)
    }

    private func loadIndex() -> [(name: String, bytes: Int)] {
        if let index { return index }
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        let loaded = names.filter(Self.isBundleName).sorted().map { name in
            let size = (try? FileManager.default.attributesOfItem(atPath: directory + "/" + name)[.size]) as? Int
            return (name: name, bytes: size ?? 0)
        }
        index = loaded
        return loaded
    }

    private func writeFile(_ bytes: [UInt8], to path: String) -> Bool {
        let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            logger.warning("a verification bundle could not be created", metadata: ["errno": "\(errno)"])
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
            logger.warning("a verification bundle could not be written", metadata: ["errno": "\(errno)"])
            unlink(path)
        }
        return complete
    }
}
