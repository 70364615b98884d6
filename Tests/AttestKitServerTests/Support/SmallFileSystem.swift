import AttestKitTesting
import Foundation

/// A tmpfs of a given size mounted on a fresh folder, to fill a disk for real. Mounting needs root (as CI runs);
/// elsewhere ``isAvailable`` is false and the tests that need one are skipped.
final class SmallFileSystem: Sendable {
    /// The mount point.
    let directory: URL
    private var filler: URL { directory.appendingPathComponent("filler") }

    private init(directory: URL) {
        self.directory = directory
    }

    /// Whether a tmpfs can be mounted here.
    static let isAvailable: Bool = {
        guard let probe = mount(size: "64k") else { return false }
        probe.unmount()
        return true
    }()

    /// Mounts a tmpfs of `size` (`2m`) on a new temporary folder, or `nil` when that is not allowed.
    static func mount(size: String) -> SmallFileSystem? {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("attestkit-fs-\(UUID())")
        guard (try? FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)) != nil,
            run("/bin/mount", ["-t", "tmpfs", "-o", "size=\(size),mode=0700", "tmpfs", directory.path])
        else {
            try? FileManager.default.removeItem(at: directory)
            return nil
        }
        return SmallFileSystem(directory: directory)
    }

    /// Writes zeros to a file until the file system is full.
    func fill() throws {
        guard FileManager.default.createFile(atPath: filler.path, contents: nil) else {
            throw HarnessError("cannot create \(filler.path)")
        }
        let handle = try FileHandle(forWritingTo: filler)
        defer { try? handle.close() }
        let chunk = Data(count: 4_096)
        do {
            while true { try handle.write(contentsOf: chunk) }
        } catch {
            try? handle.synchronize()  // ENOSPC: full
        }
    }

    /// Removes what ``fill()`` wrote.
    func free() {
        try? FileManager.default.removeItem(at: filler)
    }

    /// Unmounts it and removes the mount point.
    func unmount() {
        _ = Self.run("/bin/umount", ["-l", directory.path])
        try? FileManager.default.removeItem(at: directory)
    }

    /// Runs a command quietly; whether it exited 0.
    private static func run(_ path: String, _ arguments: [String]) -> Bool {
        guard
            let process = try? ChildProcess(
                executable: path, arguments: arguments, standardOutput: .null, standardError: .null)
        else { return false }
        return process.waitUntilExit() == .exit(0)
    }
}
