#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// The process's file descriptor limit (`RLIMIT_NOFILE`), which bounds how many connections can be open at once.
///
/// The server raises the soft limit to the hard limit when it is created (``raised()``), and keeps its connections
/// below it: by default ``defaultMaxConnections``, the limit minus ``reserve`` descriptors for the store's files and
/// connections, the connections to Apple, logs and the event loops. Past the maximum a connection is accepted and
/// closed at once, so the accept loop never fails for want of a descriptor.
public struct DescriptorLimit: Sendable, Hashable, CustomStringConvertible {
    /// The soft limit: how many descriptors the process may have open.
    public let soft: Int
    /// The hard limit, or `nil` when unlimited.
    public let hard: Int?

    /// Creates a limit (for tests; ``current()`` and ``raised()`` read the process's).
    public init(soft: Int, hard: Int?) {
        self.soft = soft
        self.hard = hard
    }

    /// The descriptors kept for everything but incoming connections: an eighth of the limit, at least 64 and at
    /// most 1024.
    public var reserve: Int { min(max(soft / 8, 64), 1_024) }

    /// The maximum of open connections when `http.max-connections` is not set: the limit minus ``reserve``, or half
    /// the limit when it is smaller than twice the reserve.
    public var defaultMaxConnections: Int { soft >= 2 * reserve ? soft - reserve : max(1, soft / 2) }

    /// `soft 1024, hard 4096`.
    public var description: String { "soft \(soft), hard \(hard.map(String.init) ?? "unlimited")" }

    /// The process's limit now, or `nil` when it cannot be read.
    public static func current() -> DescriptorLimit? {
        #if canImport(Glibc) || canImport(Musl) || canImport(Darwin)
            var limit = rlimit()
            guard getrlimit(resource, &limit) == 0 else { return nil }
            return DescriptorLimit(limit)
        #else
            return nil
        #endif
    }

    /// Raises the soft limit to the hard limit (on Darwin, at most `OPEN_MAX`) and returns the limit then in force,
    /// or `nil` when it cannot be read. Raising is best effort: when the system refuses, the limit stays as it was.
    public static func raised() -> DescriptorLimit? {
        #if canImport(Glibc) || canImport(Musl) || canImport(Darwin)
            var limit = rlimit()
            guard getrlimit(resource, &limit) == 0 else { return nil }
            var target = limit.rlim_max
            #if canImport(Darwin)
                target = min(target, rlim_t(OPEN_MAX))
            #endif
            if target != Self.infinity, target > limit.rlim_cur {
                var raised = limit
                raised.rlim_cur = target
                if setrlimit(resource, &raised) == 0 { limit = raised }
            }
            return DescriptorLimit(limit)
        #else
            return nil
        #endif
    }

    #if canImport(Glibc) || canImport(Musl) || canImport(Darwin)
        /// A limit from `getrlimit`'s figures; unlimited values become `Int.max` (soft) or `nil` (hard).
        private init(_ limit: rlimit) {
            self.soft = limit.rlim_cur == Self.infinity ? Int.max : Int(clamping: limit.rlim_cur)
            self.hard = limit.rlim_max == Self.infinity ? nil : Int(clamping: limit.rlim_max)
        }

        #if canImport(Darwin)
            private static let infinity = RLIM_INFINITY
        #else
            private static let infinity = rlim_t.max  // RLIM_INFINITY, which Swift cannot import as a literal
        #endif

        #if canImport(Glibc)
            private static let resource = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)
        #else
            private static let resource = RLIMIT_NOFILE
        #endif
    #endif
}
