import AttestKit
import AttestKitStore
import Foundation

/// `attestkit-store-worker DATABASE CHALLENGES KEYID`: the child process of the SQLite durability test.
///
/// Opens the SQLite store at `DATABASE`, then for each challenge identifier in the file `CHALLENGES` (one per
/// line), in order: consumes it (purpose `attest`) and prints `consumed ID`, then advances the counter of key
/// `KEYID` (Base64) to the line's number and prints `advanced N`; after the last line it goes on advancing the
/// counter (up to a million), so it is always mid-run when the test kills it. A line is written only after the
/// operation returned, with an unbuffered write, so every line the test reads names a committed operation. The
/// test kills the process with SIGKILL in the middle and checks the database.
@main
struct StoreWorker {
    static func main() async {
        let limit: UInt32 = 1_000_000
        let arguments = CommandLine.arguments
        guard arguments.count == 4 else {
            fail("usage: attestkit-store-worker DATABASE CHALLENGES KEYID")
        }
        do {
            let keyID = try KeyID(string: arguments[3])
            let ids = try String(contentsOfFile: arguments[2], encoding: .utf8)
                .split(separator: "\n")
                .map { line throws(StoreError) in try ChallengeID(string: line) }
            let store = SQLiteAttestationStore(path: arguments[1])
            try await store.prepare()
            emit("ready")
            // Runs until killed: after the last challenge it keeps advancing the counter.
            for counter in 1...limit {
                if counter <= ids.count {
                    let id = ids[Int(counter) - 1]
                    _ = try await store.consumeChallenge(id, purpose: .attest, keyID: nil, now: Date())
                    emit("consumed \(id)")
                }
                try await store.advanceCounter(of: keyID, to: counter, now: Date())
                emit("advanced \(counter)")
            }
            await store.close()
            emit("done")
        } catch {
            fail("error: \(error)")
        }
    }

    /// Writes one line to stdout with one `write(2)`, bypassing stdio's buffer.
    private static func emit(_ line: String) {
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }

    private static func fail(_ message: String) -> Never {
        FileHandle.standardError.write(Data((message + "\n").utf8))
        exit(2)
    }
}
