#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Files only their owner may read: the simulator's state (test private keys) and the provider token the command
/// line writes. Foundation's `createFile(atPath:contents:attributes:)` writes with the umask's mode first and sets
/// the mode after, so another user could open the file in between (and keep it open).
package enum PrivateFile {
    /// Writes `bytes` to `path`: a new file is created with mode 0600, an existing one is set to 0600 before it is
    /// truncated and written; a symbolic link at `path` is not followed.
    /// - Returns: 0, or the `errno` of the call that failed (the file may then be partly written).
    package static func save(_ bytes: [UInt8], to path: String) -> Int32 {
        let descriptor = open(path, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { return errno }
        defer { close(descriptor) }
        guard fchmod(descriptor, 0o600) == 0, ftruncate(descriptor, 0) == 0 else { return errno }
        var written = 0
        while written < bytes.count {
            let result = bytes.withUnsafeBytes { buffer in
                write(descriptor, buffer.baseAddress.map { $0 + written }, buffer.count - written)
            }
            if result < 0 {
                if errno == EINTR { continue }
                return errno
            }
            written += result
        }
        return 0
    }
}
