#if canImport(Glibc) || os(macOS)
    #if canImport(Glibc)
        import Glibc
    #else
        import Darwin
    #endif
    import Foundation

    extension ChildProcess {
        /// The parent's end of a pipe to or from a child: closed by ``close()`` or when released.
        ///
        /// One reader (or writer) at a time, and never ``close()`` while another thread reads: the descriptor's number
        /// could be reused meanwhile.
        package final class PipeEnd: @unchecked Sendable {
            /// The child's executable, for errors.
            private let executable: String
            private let lock = NSLock()
            /// -1 once closed; guarded by `lock`.
            private var descriptor: Int32

            init(descriptor: Int32, executable: String) {
                self.descriptor = descriptor
                self.executable = executable
            }

            deinit {
                if descriptor >= 0 { _ = systemClose(descriptor) }
            }

            /// The descriptor, or -1 once closed.
            var fileDescriptor: Int32 {
                lock.lock()
                defer { lock.unlock() }
                return descriptor
            }

            /// Closes this end (a child reading its standard input then sees its end); again does nothing.
            package func close() {
                lock.lock()
                defer { lock.unlock() }
                if descriptor >= 0 { _ = systemClose(descriptor) }
                descriptor = -1
            }

            /// Reads what is there, up to `count` bytes, waiting until something is; empty at the end (every writer
            /// closed its end).
            package func read(upTo count: Int = 65_536) throws -> [UInt8] {
                let descriptor = fileDescriptor
                var bytes = [UInt8](repeating: 0, count: max(count, 1))
                while true {
                    let read = bytes.withUnsafeMutableBytes { systemRead(descriptor, $0.baseAddress, $0.count) }
                    if read >= 0 { return Array(bytes.prefix(read)) }
                    guard errno == EINTR else {
                        throw Failure(executable: executable, operation: "read", code: errno)
                    }
                }
            }

            /// Reads until the end, keeping at most `limit` bytes (the rest is read and dropped).
            package func readToEnd(limit: Int = 1 << 24) throws -> [UInt8] {
                try Self.readToEnd([self], limit: limit, executable: executable)[0]
            }

            /// Writes all of `bytes`, waiting while the pipe is full. A child that closed its end makes this fail
            /// with `EPIPE` only when the parent ignores `SIGPIPE`; otherwise `SIGPIPE` ends the parent, as with
            /// Foundation's pipes.
            package func write(_ bytes: [UInt8]) throws {
                let descriptor = fileDescriptor
                var offset = 0
                while offset < bytes.count {
                    let written = bytes.withUnsafeBytes { buffer -> Int in
                        guard let base = buffer.baseAddress else { return 0 }
                        return systemWrite(descriptor, base + offset, buffer.count - offset)
                    }
                    if written > 0 {
                        offset += written
                    } else if written < 0, errno != EINTR {
                        throw Failure(executable: executable, operation: "write", code: errno)
                    }
                }
            }

            /// Reads every one of `ends` until its end at once (`poll`), so that a writer blocked on a full pipe
            /// never waits for the reader to finish another: the bytes of each, in the order given.
            static func readToEnd(_ ends: [PipeEnd], limit: Int, executable: String) throws -> [[UInt8]] {
                var collected = [[UInt8]](repeating: [], count: ends.count)
                var open = Array(ends.indices)
                var chunk = [UInt8](repeating: 0, count: 65_536)
                while !open.isEmpty {
                    var polled = open.map { pollfd(fd: ends[$0].fileDescriptor, events: Int16(POLLIN), revents: 0) }
                    let ready = poll(&polled, nfds_t(polled.count), -1)
                    guard ready >= 0 else {
                        if errno == EINTR { continue }
                        throw Failure(executable: executable, operation: "poll", code: errno)
                    }
                    var stillOpen: [Int] = []
                    for (slot, index) in open.enumerated() {
                        guard polled[slot].revents != 0 else {
                            stillOpen.append(index)
                            continue
                        }
                        let read = chunk.withUnsafeMutableBytes {
                            systemRead(polled[slot].fd, $0.baseAddress, $0.count)
                        }
                        if read > 0 {
                            collected[index].append(contentsOf: chunk.prefix(min(read, limit - collected[index].count)))
                            stillOpen.append(index)
                        } else if read < 0 {
                            guard errno == EINTR || errno == EAGAIN else {
                                throw Failure(executable: executable, operation: "read", code: errno)
                            }
                            stillOpen.append(index)
                        }
                    }
                    open = stillOpen
                }
                return collected
            }
        }
    }

    /// `read(2)`, callable inside types that have a `read` of their own.
    func systemRead(_ descriptor: Int32, _ buffer: UnsafeMutableRawPointer?, _ count: Int) -> Int {
        read(descriptor, buffer, count)
    }

    /// `write(2)`, callable inside types that have a `write` of their own.
    func systemWrite(_ descriptor: Int32, _ buffer: UnsafeRawPointer, _ count: Int) -> Int {
        write(descriptor, buffer, count)
    }
#endif
