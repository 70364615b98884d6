import ArgumentParser
import AttestKitFlows
import AttestKitWire
import Foundation

/// `attestkit replay`: re-run a recorded failed verification offline and say which check refused.
struct ReplayCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "replay",
        abstract: "Re-run a failed verification recorded by 'attestkit serve' (record.directory), offline.",
        discussion: """
            Verifies the recorded attestation or assertion again, exactly: the same flow, at the recorded moment, \
            under the recorded configuration, with the store's recorded answers. Prints the failing check and code \
            and whether they match the recorded outcome. Exits 1 when the verification fails (the recorded failure \
            reproduced or another one), 0 when the recorded inputs verify, 2 when the bundle cannot be read.
            """
    )

    @Argument(help: "A bundle file written under record.directory.")
    var bundle: String

    @Flag(name: .long, help: "Print one JSON object: {kind, verificationTime, recorded, replayed, reproduces}.")
    var json = false

    func run() async throws {
        let result: VerificationReplay.Result
        do {
            let handle = try FileHandle(forReadingFrom: URL(fileURLWithPath: bundle))
            defer { try? handle.close() }
            let bytes = try handle.read(upToCount: VerificationBundle.maximumBytes + 1) ?? Data()
            result = try await VerificationReplay.replay(try VerificationBundle(json: Array(bytes)))
        } catch let error as FlowError {
            FileHandle.standardError.write(
                Data("attestkit replay: \(error.code): \(TerminalText.escaped(error.reason))\n".utf8))
            throw ExitCode(2)
        } catch {
            FileHandle.standardError.write(Data("attestkit replay: \(bundle) cannot be read\n".utf8))
            throw ExitCode(2)
        }
        print(json ? try Self.json(result) : Self.text(result))
        if result.outcome != nil { throw ExitCode(1) }
    }

    /// The report of `result` for a terminal. Every text that comes from the bundle (a file anyone may have
    /// written) is shown with its control characters escaped (``TerminalText/escaped(_:)``).
    static func text(_ result: VerificationReplay.Result) -> String {
        let bundle = result.bundle
        let recorded = TerminalText.escaped(bundle.outcome.code)
        var lines = [
            "\(bundle.kind.rawValue) verified at \(APITime.format(bundle.verificationDate)) "
                + "(recorded \(TerminalText.escaped(bundle.recordedAt)))"
        ]
        if let outcome = result.outcome {
            lines.append("fails: \(TerminalText.escaped(outcome.code))")
            lines.append("check: \(TerminalText.escaped(outcome.check))")
            lines.append("reason: \(TerminalText.escaped(outcome.reason))")
            if let seconds = outcome.secondsOutside { lines.append("seconds outside the window: \(seconds)") }
            lines.append(
                result.reproduces ? "the recorded outcome reproduces" : "recorded: \(recorded) (the replay differs)")
        } else {
            lines.append("verifies: the recorded failure (\(recorded)) does not reproduce")
        }
        return lines.joined(separator: "\n")
    }

    private struct Report: Encodable {
        var kind: String
        var verificationTime: String
        var recorded: VerificationBundle.Outcome
        var replayed: VerificationBundle.Outcome?
        var reproduces: Bool
    }

    static func json(_ result: VerificationReplay.Result) throws -> String {
        let report = Report(
            kind: result.bundle.kind.rawValue, verificationTime: APITime.format(result.bundle.verificationDate),
            recorded: result.bundle.outcome, replayed: result.outcome, reproduces: result.reproduces)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(report), as: UTF8.self)
    }
}
