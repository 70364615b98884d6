import AttestKitTesting
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A private file is its owner's from its first byte: created 0600 whatever the umask, an existing file set to 0600
/// before its old contents are replaced, a symbolic link refused rather than followed.
@Suite struct PrivateFileTests {
    private static func path() -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("attestkit-private-\(UUID().uuidString)").path
    }

    private static func mode(_ path: String) -> Int? {
        (try? FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? NSNumber)?.intValue
    }

    @Test func aNewFileIsTheOwnersAlone() throws {
        let path = Self.path()
        defer { unlink(path) }
        let previous = umask(0)
        defer { umask(previous) }
        #expect(PrivateFile.save(Array("secret".utf8), to: path) == 0)
        #expect(Self.mode(path) == 0o600)
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "secret")
    }

    @Test func anExistingFileIsClosedBeforeItIsReplaced() throws {
        let path = Self.path()
        defer { unlink(path) }
        try Data("a much longer earlier content".utf8).write(to: URL(fileURLWithPath: path))
        chmod(path, 0o644)
        #expect(PrivateFile.save(Array("short".utf8), to: path) == 0)
        #expect(Self.mode(path) == 0o600)
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "short")
    }

    @Test func aSymbolicLinkIsNotFollowed() throws {
        let (target, link) = (Self.path(), Self.path())
        defer { unlink(target); unlink(link) }
        try Data("elsewhere".utf8).write(to: URL(fileURLWithPath: target))
        #expect(symlink(target, link) == 0)
        #expect(PrivateFile.save(Array("secret".utf8), to: link) == ELOOP)
        #expect(try String(contentsOfFile: target, encoding: .utf8) == "elsewhere")
    }
}
