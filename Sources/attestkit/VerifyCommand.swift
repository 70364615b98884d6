import ArgumentParser
import AttestKit
import AttestKitConformance
import Foundation

/// `attestkit verify`: run conformance vectors.
struct VerifyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify",
        abstract: "Run conformance vectors: a vectors directory, or JSON lines.",
        discussion: """
            --vectors DIR reads DIR/index.json and prints one line per vector, then 'N passed, M failed'; \
            it exits 1 on any mismatch with a vector's expected outcome.
            --jsonl FILE (or - for standard input) reads one vector object per line and writes one JSON \
            object per line, in input order: {"name", "outcome", "check", "code", "counter", "fields"}.
            """
    )

    /// The largest index, vector or JSON-lines file read (a vector is a few kilobytes; the real set is under 2 MiB).
    static let maximumFileBytes = 256 << 20

    @Option(name: .long, help: "A directory with index.json and the vector files.")
    var vectors: String?

    @Option(name: .long, help: "A file of JSON lines, one vector object per line; - for standard input.")
    var jsonl: String?

    @OptionGroup var roots: RootOptions

    func validate() throws {
        guard (vectors == nil) != (jsonl == nil) else {
            throw ValidationError("give exactly one of --vectors DIR or --jsonl FILE")
        }
    }

    func run() async throws {
        let runner = ConformanceRunner(anchors: try roots.anchors())
        if let vectors {
            try await runDirectory(vectors, runner: runner)
        } else if let jsonl {
            try await runLines(jsonl, runner: runner)
        }
    }

    private struct IndexEntry: Decodable {
        var name: String
        var expect: String
        /// The software Apple's policy vectors: the refusal's code, checked too.
        var expectCode: String?
        var file: String
    }

    private func runDirectory(_ path: String, runner: ConformanceRunner) async throws {
        let directory = URL(fileURLWithPath: path)
        let index = try JSONDecoder().decode(
            [IndexEntry].self,
            from: InputFile.read(directory.appendingPathComponent("index.json").path, limit: Self.maximumFileBytes))
        var passed = 0
        var failed = 0
        for entry in index {
            let outcome: ConformanceOutcome
            do {
                let data = try InputFile.read(
                    directory.appendingPathComponent(entry.file).path, limit: Self.maximumFileBytes)
                let vector = try JSONDecoder().decode(ConformanceVector.self, from: data)
                outcome = await runner.evaluate(vector)
            } catch {
                outcome = ConformanceOutcome(
                    name: entry.name, outcome: .reject, check: "format", code: "vector_unreadable")
            }
            let ok = outcome.expectation == entry.expect && (entry.expectCode.map { $0 == outcome.code } ?? true)
            if ok { passed += 1 } else { failed += 1 }
            var line = "\(ok ? "PASS" : "FAIL")  \(entry.name)  expected \(entry.expect), got \(outcome.expectation)"
            if let code = outcome.code { line += " (\(code))" }
            print(line)
        }
        print("\(passed) passed, \(failed) failed")
        if failed > 0 { throw ExitCode(1) }
    }

    private func runLines(_ path: String, runner: ConformanceRunner) async throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let batchSize = 256
        var batch: [String] = []
        var batchBytes = 0
        func flush() async throws {
            try await emit(batch, runner: runner, encoder: encoder)
            batch.removeAll(keepingCapacity: true)
            batchBytes = 0
        }
        if path == "-" {
            // Streamed, each line bounded as a file is; a batch is evaluated once it holds the limit, so that no
            // more than about twice the limit is ever held.
            var lines = InputFile.Lines(limit: Self.maximumFileBytes)
            while let line = try lines.next() {
                batch.append(line)
                batchBytes += line.utf8.count
                if batch.count == batchSize || batchBytes >= Self.maximumFileBytes { try await flush() }
            }
        } else {
            let text = try InputFile.text(path, limit: Self.maximumFileBytes)
            var lines = text.split(separator: "\n", omittingEmptySubsequences: false)
            if lines.last?.isEmpty == true { lines.removeLast() }
            for line in lines {
                batch.append(String(line))
                if batch.count == batchSize { try await flush() }
            }
        }
        try await flush()
    }

    /// Evaluates a batch concurrently and prints the outcomes in input order.
    private func emit(_ lines: [String], runner: ConformanceRunner, encoder: JSONEncoder) async throws {
        let outcomes = await withTaskGroup(of: (Int, ConformanceOutcome).self) { group in
            for (position, line) in lines.enumerated() {
                group.addTask { (position, await runner.evaluate(line: line)) }
            }
            var results = [ConformanceOutcome?](repeating: nil, count: lines.count)
            for await (position, outcome) in group { results[position] = outcome }
            return results
        }
        var output = Data()
        for outcome in outcomes {
            guard let outcome else { continue }
            output.append(try encoder.encode(outcome))
            output.append(0x0A)
        }
        FileHandle.standardOutput.write(output)
    }
}
